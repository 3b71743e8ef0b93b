"""The engine's runner for a `GGMLModel`: our scheduler's pages mapped onto llama.cpp's cells.

The scheduler and page pool work exactly as for PyTorch models: block tables, reference
counts, chained page hashes, LRU eviction of cached prefixes, preemption. What differs is
where a page's KV lives: in llama.cpp's unified cache, as `page_size` cells at the page's
positions, tagged with the ids of the sequences that see them. This runner keeps the two
in step:

- every running sequence has a llama.cpp sequence id;
- each page has one *holder*: the id of the sequence that computed it (its first owner);
- a prefix hit (pages computed by another sequence) tags the new sequence onto the
  holder's cells of those positions (`copy_cells`: no data moves, nothing is recomputed);
- when a sequence ends, its tags are dropped, except on the pages it holds that stay
  cached: its id is *parked* until those pages are evicted (or until ids run short, when
  the oldest parked id hands its still-used pages to a running sequence that sees them and
  its cached-only pages are evicted from the pool).

So the page pool's accounting is the cell accounting: `num_pages · page_size` cells hold
every page there can be, shared prefixes once.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

import torch

from kimmy_swarm.model.errors import GenerationError
from kimmy_swarm.model.ggml_model import MAX_SEQUENCES, Feed, GGMLModel, GGMLOptions
from kimmy_swarm.model.serve.pages import PagePool
from kimmy_swarm.model.serve.sequence import Sequence
from kimmy_swarm.model.serve.slots import StatePool

__all__ = ["CellPagePool", "GGMLRunner"]


class CellPagePool(PagePool):
    """A page pool whose KV lives elsewhere (no tensor); tells a listener when a cached
    page is forgotten so its cells can be freed."""

    def __init__(self, *, num_pages: int, page_size: int) -> None:
        super().__init__(
            num_pages=num_pages, page_size=page_size, num_layers=1, width=0, dtype=torch.float32
        )
        self.on_forget: Callable[[int], None] = lambda page: None

    def _forget(self, page: int) -> None:
        super()._forget(page)
        self.on_forget(page)

    def evict(self, page: int) -> None:
        """Drop a cached (unreferenced) page now and free it."""
        del self.cached[page]
        self._forget(page)
        self.free.append(page)


class GGMLRunner:
    """Runs a step's feeds in one llama.cpp batch; keeps pages and cells in step."""

    needs_state = False  # no per-sequence state besides the KV cells

    def __init__(
        self,
        model: GGMLModel,
        *,
        num_pages: int,
        page_size: int,
        max_running: int,
        batch_tokens: int = 512,
    ) -> None:
        if max_running >= MAX_SEQUENCES:
            raise GenerationError(
                f"max_num_seqs {max_running} must be below llama.cpp's {MAX_SEQUENCES} sequence ids"
            )
        # as many parked ids as running ones: llama.cpp reserves a row of logits per id
        # (vocab floats: 0.6 MB for Qwen2.5), so ids are not free
        sequences = min(MAX_SEQUENCES, 2 * max_running)
        options = GGMLOptions(
            cells=num_pages * page_size, batch_tokens=batch_tokens, sequences=sequences
        )
        model.open_context(options)  # a cell for every token of every page
        self.model = model
        self.pages = CellPagePool(num_pages=num_pages, page_size=page_size)
        self.pages.on_forget = self._forgotten
        self.slots = StatePool(num_slots=max_running + 1, num_layers=0, conv_dim=0,
                               conv_width=0, heads=0, head_dim=0, dtype=torch.float32)  # fmt: skip
        self.max_parked = options.sequences - max_running
        self._free_ids = list(range(options.sequences - 1, -1, -1))
        self._id: dict[Sequence, int] = {}  # running sequence → its llama.cpp id
        self._linked: dict[Sequence, int] = {}  # leading block-table pages it sees
        self._holder: dict[int, tuple[int, int]] = {}  # page → (holder id, index in chain)
        self._held: dict[int, set[int]] = {}  # id → pages it holds
        self._parked: OrderedDict[int, None] = OrderedDict()  # ended ids still holding pages

    # ---- the forward ---------------------------------------------------------------------
    def plan(self, items: list[tuple[Sequence, int]]) -> list[list[tuple[Sequence, int]]]:
        """All of a step's feeds go in one batch (llama.cpp mixes lengths)."""
        return [items] if items else []

    def run(self, items: list[tuple[Sequence, int]]) -> torch.Tensor:  # (n, vocab)
        """Feed `n` tokens of each sequence (from `num_computed`); the logits of each
        one's last fed token. Does not advance `num_computed`."""
        feeds = []
        for seq, n in items:
            sid = self._link(seq)
            start = seq.num_computed
            feeds.append(Feed(sid, seq.tokens[start : start + n], start))
        return self.model.decode(feeds)

    def _link(self, seq: Sequence) -> int:
        """The sequence's id; its pages so far tagged or held (first run and new pages)."""
        sid = self._id.get(seq)
        if sid is None:
            sid = self._id[seq] = self._take_id()
            self._linked[seq] = 0
        ps = self.pages.page_size
        for i in range(self._linked[seq], len(seq.block_table)):
            page = seq.block_table[i]
            holder = self._holder.get(page)
            if holder is None:  # freshly allocated: this sequence computes it
                self._holder[page] = (sid, i)
                self._held.setdefault(sid, set()).add(page)
            elif holder[0] != sid:  # a cached prefix page: see its holder's cells
                self.model.copy_cells(src=holder[0], dst=sid, start=i * ps, end=(i + 1) * ps)
        self._linked[seq] = len(seq.block_table)
        return sid

    # ---- ids -----------------------------------------------------------------------------
    def _take_id(self) -> int:
        if not self._free_ids:
            self._unpark_oldest()
        if not self._free_ids:
            raise GenerationError("no llama.cpp sequence id is free")
        return self._free_ids.pop()

    def _release_id(self, sid: int) -> None:
        self.model.drop_cells(sid)
        self._held.pop(sid, None)
        self._parked.pop(sid, None)
        self._free_ids.append(sid)

    def _unpark_oldest(self) -> None:
        """Give up the oldest parked id: its pages go to a running sequence that sees
        them, or out of the pool when none does."""
        sid, _ = self._parked.popitem(last=False)
        for page in list(self._held.get(sid, ())):
            heir = self._running_seeing(page)
            if heir is None:
                self.pages.evict(page)  # cached only: _forgotten drops its cells
            else:
                index = self._holder[page][1]
                self._holder[page] = (heir, index)
                self._held.setdefault(heir, set()).add(page)
                self._held[sid].discard(page)
        self._release_id(sid)

    def _running_seeing(self, page: int) -> int | None:
        index = self._holder[page][1]
        for seq, sid in self._id.items():
            if self._linked.get(seq, 0) > index and seq.block_table[index] == page:
                return sid
        return None

    # ---- page and sequence ends ----------------------------------------------------------
    def _forgotten(self, page: int) -> None:
        """A cached page was evicted: its cells go (and its holder's id when it was the
        holder's last page and the holder has ended)."""
        holder = self._holder.pop(page, None)
        if holder is None:
            return
        sid, index = holder
        ps = self.pages.page_size
        self.model.drop_cells(sid, index * ps, (index + 1) * ps)
        held = self._held.get(sid)
        if held is not None:
            held.discard(page)
            if not held and sid in self._parked:
                self._release_id(sid)

    def release(self, seq: Sequence, table: list[int]) -> None:
        """`seq` ended or was preempted; its pages (`table`) are already released to the
        pool. Drop its cells but those of pages it holds that the pool keeps."""
        sid = self._id.pop(seq, None)
        linked = self._linked.pop(seq, 0)
        if sid is None:
            return
        ps, pool = self.pages.page_size, self.pages
        for i, page in enumerate(table[:linked]):
            holds = self._holder.get(page) == (sid, i)
            kept = pool.hash[page] is not None and (pool.ref[page] > 0 or page in pool.cached)
            if holds and kept:
                continue
            self.model.drop_cells(sid, i * ps, (i + 1) * ps)
            if holds:
                del self._holder[page]
                self._held[sid].discard(page)
        self.model.drop_cells(sid, linked * ps, -1)  # anything past its pages
        if self._held.get(sid):
            self._parked[sid] = None
            while len(self._parked) > self.max_parked:
                self._unpark_oldest()
        else:
            self._release_id(sid)
