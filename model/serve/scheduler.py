"""Which sequences run in the next step, and how many tokens each feeds.

Each step, under a budget of `max_num_batched_tokens`:
1. every decoding sequence feeds its last token (a new MLA page when its last one is full;
   when no page can be had, the newest running sequence is preempted: its pages and slot
   are freed and it goes back to the front of the queue to be recomputed);
2. sequences in the middle of a chunked prefill feed their next chunk;
3. waiting sequences are admitted in arrival order while the batch, `max_num_seqs` and
   both pools (pages for the whole prompt, one KDA state slot) have room.
A prefill chunk ends at the sequence's checkpoint boundary (the last page boundary inside
its shared prefix), so the KDA state there can be stored for later requests.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from kimmy_swarm.model.serve.pages import ROOT_HASH, PagePool, page_hashes
from kimmy_swarm.model.serve.sequence import SeqStatus, Sequence
from kimmy_swarm.model.serve.slots import StatePool
from kimmy_swarm.model.serve.types import EngineConfig

__all__ = ["Batch", "Scheduler"]


@dataclass
class Batch:
    """One step's work: decodes feed one token each; prefills feed `n` tokens."""

    decodes: list[Sequence] = field(default_factory=list)
    prefills: list[tuple[Sequence, int]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.decodes or self.prefills)

    @property
    def num_tokens(self) -> int:
        return len(self.decodes) + sum(n for _, n in self.prefills)


class Scheduler:
    """Waiting and running queues over the two cache pools."""

    def __init__(
        self,
        cfg: EngineConfig,
        pages: PagePool,
        slots: StatePool,
        *,
        needs_state: bool,
        on_free: Callable[[Sequence, list[int]], None] | None = None,
    ) -> None:
        self.cfg = cfg
        self.on_free = on_free  # told (sequence, its pages) after they are released
        self.pages = pages
        self.slots = slots
        self.needs_state = needs_state  # the model has KDA layers: a prefix hit needs a checkpoint
        self.waiting: deque[Sequence] = deque()
        self.running: list[Sequence] = []
        self.preemptions = 0
        self.prompt_tokens = 0
        self.cached_prompt_tokens = 0

    def add(self, seq: Sequence) -> None:
        self.waiting.append(seq)

    @property
    def waiting_prefill_tokens(self) -> int:
        return sum(s.num_tokens for s in self.waiting)

    # ---- one step ------------------------------------------------------------------------
    def schedule(self) -> Batch:
        batch = Batch()
        budget = self.cfg.max_num_batched_tokens
        for seq in [s for s in self.running if not s.is_prefill]:
            if seq.status is not SeqStatus.RUNNING:
                continue  # preempted below while making room for an earlier one
            if budget < 1 or not self._room_for_next_token(seq):
                continue
            batch.decodes.append(seq)
            budget -= 1
        for seq in self.running:
            if seq.is_prefill and budget > 0 and seq.status is SeqStatus.RUNNING:
                n = self._chunk(seq, budget)
                batch.prefills.append((seq, n))
                budget -= n
        while self.waiting and budget > 0 and len(self.running) < self.cfg.max_num_seqs:
            seq = self.waiting[0]
            if not self._admit(seq):
                break
            self.waiting.popleft()
            self.running.append(seq)
            n = self._chunk(seq, budget)
            batch.prefills.append((seq, n))
            budget -= n
        batch.decodes = [s for s in batch.decodes if s.status is SeqStatus.RUNNING]
        return batch

    def _chunk(self, seq: Sequence, budget: int) -> int:
        n = min(seq.pending, budget)
        if seq.checkpoint_at is not None and seq.num_computed < seq.checkpoint_at:
            n = min(n, seq.checkpoint_at - seq.num_computed)
        return n

    def _room_for_next_token(self, seq: Sequence) -> bool:
        """Make sure the page for position `num_computed` exists, preempting if needed."""
        if seq.num_computed < len(seq.block_table) * self.pages.page_size:
            return True
        while self.pages.num_available == 0:
            victim = max(self.running, key=lambda s: s.order)
            self.preempt(victim)
            if victim is seq:
                return False
        seq.block_table.append(self.pages.allocate())
        return True

    # ---- admission -----------------------------------------------------------------------
    def _prefix_hit(self, seq: Sequence) -> tuple[list[int], list[int]]:
        """(hashes of the usable pages, the pages) — the deepest cached prefix that has
        both its pages and, for models with KDA layers, a state checkpoint at its end."""
        if not self.cfg.enable_prefix_caching:
            return [], []
        tokens = seq.tokens
        hashes = page_hashes(tokens[: len(tokens) - 1], self.pages.page_size)
        pages = self.pages.match(tokens, hashes)
        k = len(pages)
        if self.needs_state:
            while k > 0 and not self.slots.has_checkpoint(hashes[k - 1]):
                k -= 1
        return hashes[:k], pages[:k]

    def _admit(self, seq: Sequence) -> bool:
        hashes, hit = self._prefix_hit(seq)
        ps = self.pages.page_size
        new_pages = math.ceil(seq.num_tokens / ps) - len(hit)
        usable = self.pages.num_available - self.pages.evictable_among(hit)
        if new_pages > usable or self.slots.num_available < 1:
            return False
        if hit and self.needs_state:
            self.slots.checkpoints.move_to_end(hashes[-1])  # not the one evicted next
        seq.slot = self.slots.allocate()
        if hit and self.needs_state and not self.slots.has_checkpoint(hashes[-1]):
            hashes, hit = [], []  # its checkpoint was the only slot left: recompute
            new_pages = math.ceil(seq.num_tokens / ps)
            if new_pages > self.pages.num_available:
                self.slots.release(seq.slot)
                seq.slot = None
                return False
        for page in hit:
            self.pages.acquire(page)
        if hit and self.needs_state:
            self.slots.load_checkpoint(hashes[-1], seq.slot)
        seq.block_table = hit + [self.pages.allocate() for _ in range(new_pages)]
        seq.num_computed = len(hit) * ps
        seq.registered_pages = len(hit)
        seq.last_hash = hashes[-1] if hashes else seq.last_hash
        seq.checkpoint_at = self._checkpoint_boundary(seq)
        seq.status = SeqStatus.RUNNING
        if not seq.admitted_once:
            seq.admitted_once = True
            seq.cached_tokens = seq.num_computed
            self.prompt_tokens += len(seq.prompt_ids)
            self.cached_prompt_tokens += seq.num_computed
        return True

    def _checkpoint_boundary(self, seq: Sequence) -> int | None:
        cp = seq.params.cache_point
        if cp is None or not self.cfg.enable_prefix_caching or not self.needs_state:
            return None
        ps = self.pages.page_size
        b = (min(cp, seq.num_tokens - 1) // ps) * ps
        return b if b > seq.num_computed and b >= ps else None

    # ---- after the step ------------------------------------------------------------------
    def advance(self, seq: Sequence, n: int) -> None:
        """`n` more tokens of `seq` are in the cache: register full pages, save the KDA
        checkpoint when the boundary is reached."""
        seq.num_computed += n
        ps, tokens = self.pages.page_size, None
        while (seq.registered_pages + 1) * ps <= seq.num_computed:
            tokens = tokens or seq.tokens
            i = seq.registered_pages
            page_tokens = tokens[i * ps : (i + 1) * ps]
            seq.last_hash = hash((seq.last_hash, tuple(page_tokens)))
            self.pages.register(seq.block_table[i], seq.last_hash, page_tokens)
            seq.registered_pages += 1
        if seq.checkpoint_at is not None and seq.num_computed == seq.checkpoint_at:
            assert seq.slot is not None
            self.slots.save_checkpoint(seq.last_hash, seq.slot)
            seq.checkpoint_at = None

    def _free(self, seq: Sequence) -> None:
        for page in seq.block_table:
            self.pages.release(page)
        if self.on_free is not None:
            self.on_free(seq, seq.block_table)
        if seq.slot is not None:
            self.slots.release(seq.slot)
        seq.block_table, seq.slot = [], None
        if seq in self.running:
            self.running.remove(seq)

    def preempt(self, seq: Sequence) -> None:
        """Free everything `seq` holds; it waits at the front and is recomputed."""
        self._free(seq)
        seq.num_computed, seq.registered_pages = 0, 0
        seq.last_hash = ROOT_HASH
        seq.checkpoint_at = None
        seq.status = SeqStatus.WAITING
        self.waiting.appendleft(seq)
        self.preemptions += 1

    def finish(self, seq: Sequence) -> None:
        self._free(seq)
        seq.status = SeqStatus.FINISHED

    def abort(self, request_id: str) -> Sequence | None:
        for seq in [*self.running, *self.waiting]:
            if seq.request_id == request_id:
                if seq in self.waiting:
                    self.waiting.remove(seq)
                self.finish(seq)
                return seq
        return None
