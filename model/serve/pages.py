"""The MLA page pool: fixed-size pages of latent KV, reference-counted, with a prefix cache.

A full page is registered under a chained hash `h_i = hash((h_{i−1}, tokens of page i))`,
so equal hashes mean equal token prefixes (checked token by token on a hit — a hash
collision never serves wrong KV). Pages nobody references but that hold a registered
prefix stay cached in LRU order and are evicted only when a free page is needed.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Sequence

import numpy as np
import torch

from kimmy_swarm.model.errors import ModelConfigError

__all__ = ["PagePool", "page_hashes"]

ROOT_HASH = 0x5EED


def page_hashes(tokens: Sequence[int], page_size: int, *, parent: int = ROOT_HASH) -> list[int]:
    """Chained hashes of the full pages of `tokens` (a trailing partial page has none)."""
    out, h = [], parent
    for start in range(0, len(tokens) - page_size + 1, page_size):
        h = hash((h, tuple(tokens[start : start + page_size])))
        out.append(h)
    return out


def _zeros(shape: tuple[int, ...], dtype: torch.dtype, device: torch.device | str) -> torch.Tensor:
    """A zero tensor; on the CPU from the OS's lazily zeroed pages (numpy's calloc), so a
    pool of gigabytes costs memory only as pages are written, not a fill up front.

    Zeros, not `empty`: a left-padded batch reads rows it masks out, and garbage there could
    be NaN, which a zero attention weight does not cancel."""
    if torch.device(device).type != "cpu":
        return torch.zeros(shape, dtype=dtype, device=device)
    probe = torch.empty((), dtype=dtype)
    try:
        array = np.zeros(shape, dtype=probe.numpy().dtype)
    except TypeError:  # a dtype numpy lacks (bfloat16): the plain fill
        return torch.zeros(shape, dtype=dtype)
    return torch.from_numpy(array)


class PagePool:
    """Pages of `page_size` tokens for every MLA layer: `kv [L_mla, pages · page_size, r + d]`.

    Page ids index the second dim in blocks of `page_size`. The pool hands out ids; the
    runner reads and writes the tensor.
    """

    def __init__(
        self,
        *,
        num_pages: int,
        page_size: int,
        num_layers: int,
        width: int,
        dtype: torch.dtype,
        device: torch.device | str = "cpu",
    ) -> None:
        if num_pages < 1 or page_size < 1:
            raise ModelConfigError(
                f"num_pages and page_size must be ≥ 1; got {num_pages}, {page_size}"
            )
        self.page_size = page_size
        self.num_pages = num_pages
        self.kv = _zeros((max(num_layers, 1), num_pages * page_size, width), dtype, device)
        self.ref = [0] * num_pages
        self.hash: list[int | None] = [None] * num_pages
        self.tokens: list[tuple[int, ...] | None] = [None] * num_pages
        self.free: deque[int] = deque(range(num_pages))
        self.cached: OrderedDict[int, None] = OrderedDict()  # ref 0, registered: LRU order
        self.table: dict[int, int] = {}  # hash → page

    # ---- accounting ----------------------------------------------------------------------
    @property
    def num_available(self) -> int:
        """Pages that can be handed out now (free, or cached and evictable)."""
        return len(self.free) + len(self.cached)

    @property
    def num_used(self) -> int:
        return self.num_pages - len(self.free) - len(self.cached)

    def allocate(self) -> int:
        """A page for new KV (ref 1); evicts the least recently used cached page if needed.

        Raises:
            RuntimeError: no page is free or evictable (the scheduler checks first).
        """
        if self.free:
            page = self.free.popleft()
        elif self.cached:
            page, _ = self.cached.popitem(last=False)
            self._forget(page)
        else:
            raise RuntimeError("page pool exhausted")
        self.ref[page] = 1
        return page

    def acquire(self, page: int) -> None:
        """Take a reference to a registered page found by `match`."""
        if self.ref[page] == 0:
            self.cached.pop(page, None)
        self.ref[page] += 1

    def release(self, page: int) -> None:
        self.ref[page] -= 1
        if self.ref[page] > 0:
            return
        if self.hash[page] is not None:
            self.cached[page] = None  # most recently used end
        else:
            self.free.append(page)

    def _forget(self, page: int) -> None:
        h = self.hash[page]
        if h is not None and self.table.get(h) == page:
            del self.table[h]
        self.hash[page] = None
        self.tokens[page] = None

    # ---- prefix cache --------------------------------------------------------------------
    def register(self, page: int, h: int, tokens: Sequence[int]) -> None:
        """Record that `page` holds the KV of the prefix hashed `h` (its last page's tokens
        are `tokens`). A prefix already registered elsewhere keeps its first page."""
        if h in self.table or self.hash[page] is not None:
            return
        self.table[h] = page
        self.hash[page] = h
        self.tokens[page] = tuple(tokens)

    def match(self, tokens: Sequence[int], hashes: Sequence[int]) -> list[int]:
        """The registered pages that hold the longest prefix of `tokens` (hashes as given
        by `page_hashes`), stopping at the first miss or token mismatch."""
        pages = []
        for i, h in enumerate(hashes):
            page = self.table.get(h)
            chunk = tuple(tokens[i * self.page_size : (i + 1) * self.page_size])
            if page is None or self.tokens[page] != chunk:
                break
            pages.append(page)
        return pages

    def evictable_among(self, pages: Sequence[int]) -> int:
        """How many of `pages` sit in the evictable cache (acquiring them uses them up)."""
        return sum(1 for p in pages if self.ref[p] == 0)

    # ---- addressing ----------------------------------------------------------------------
    def slots_of(self, block_table: Sequence[int], start: int, end: int) -> list[int]:
        """Flat token positions in `kv` of tokens `start..end−1` of a sequence."""
        ps = self.page_size
        return [block_table[t // ps] * ps + t % ps for t in range(start, end)]
