"""Runs the model on a step's batch, reading and writing the two cache pools.

For a group of sequences that each feed `T` new tokens, the runner gathers their paged
entries (left-padded to the longest context, with an attention mask) and their states from
their slots into the model's cache object (the architecture's `CacheLayout` knows how),
calls the model's ordinary `forward(ids, attention_mask=, cache=)`, then writes the new
entries into the pages and the updated states back into the slots. The engine groups
sequences that feed the same number of tokens (all decodes; prefill chunks of equal
length); each row continues from its own slot, so a chunk's conv and recurrent states go
on exactly where its last chunk ended.
"""

from __future__ import annotations

from typing import Any

import torch

from kimmy_swarm.model.serve.kv_layout import CacheLayout, layout_for
from kimmy_swarm.model.serve.pages import PagePool
from kimmy_swarm.model.serve.sequence import Sequence
from kimmy_swarm.model.serve.slots import StatePool
from kimmy_swarm.model.serve.types import EngineConfig

__all__ = ["ModelRunner"]


class ModelRunner:
    """Owns nothing but references: the model, its cache layout and the two pools."""

    def __init__(self, model: Any, layout: CacheLayout, pages: PagePool, slots: StatePool) -> None:
        self.model = model
        self.layout = layout
        self.pages = pages
        self.slots = slots
        self.needs_state = layout.needs_state
        self.device = next(model.parameters()).device

    @classmethod
    def build(cls, model: Any, config: EngineConfig) -> ModelRunner:
        """A runner with pools sized by `config` for `model`'s cache layout."""
        layout = layout_for(model)
        p = next(model.parameters())
        pages = PagePool(
            num_pages=config.num_pages,
            page_size=config.page_size,
            num_layers=layout.page_layers,
            width=layout.page_width,
            dtype=p.dtype,
            device=p.device,
        )
        slots = layout.state_pool(config.num_state_slots, p.dtype, p.device)
        return cls(model, layout, pages, slots)

    def plan(self, items: list[tuple[Sequence, int]]) -> list[list[tuple[Sequence, int]]]:
        """One forward per distinct feed length: decodes (1 token) together, and prefill
        chunks of equal length together (e.g. the tails after a shared-prefix hit)."""
        groups: dict[int, list[tuple[Sequence, int]]] = {}
        for seq, n in items:
            groups.setdefault(n, []).append((seq, n))
        return list(groups.values())

    def release(self, seq: Sequence, table: list[int]) -> None:
        """Nothing to do when a sequence ends: its pages are the pool's."""

    @torch.no_grad()
    def run(self, items: list[tuple[Sequence, int]]) -> torch.Tensor:
        """Feed `t` tokens of each sequence (from `num_computed`; one `t` for all items);
        return the logits of each one's last fed token `[n, vocab]`. Does not advance
        `num_computed`."""
        seqs, t = [s for s, _ in items], items[0][1]
        if any(n != t for _, n in items):
            raise ValueError("ModelRunner.run feeds one length per forward; plan() groups them")
        n = len(seqs)
        ctx = torch.tensor([s.num_computed for s in seqs], device=self.device)  # (n,)
        ids = torch.tensor(
            [s.tokens[s.num_computed : s.num_computed + t] for s in seqs], device=self.device
        )  # (n, t)
        past = int(ctx.max())
        table = self._block_tables(seqs)  # (n, max_pages)
        cols = torch.arange(past, device=self.device)[None, :] - (past - ctx)[:, None]  # (n, S)
        real = cols >= 0  # left padding where the context is shorter than the longest
        flat_past = self._flat(table, cols.clamp(min=0))  # (n, S) positions in pages.kv
        new_cols = ctx[:, None] + torch.arange(t, device=self.device)[None, :]  # (n, t)
        flat_new = self._flat(table, new_cols)  # (n, t)
        mask = torch.cat([real, torch.ones(n, t, dtype=torch.bool, device=self.device)], 1)
        slot_ids = torch.tensor([s.slot for s in seqs], device=self.device)  # (n,)
        cache = self.layout.gather(self.pages, self.slots, flat_past, slot_ids)
        logits = self.model(ids, attention_mask=mask.long(), cache=cache)  # (n, t, V)
        self.layout.scatter(cache, self.pages, self.slots, flat_new, slot_ids, t)
        return logits[:, -1]

    def _block_tables(self, seqs: list[Sequence]) -> torch.Tensor:
        width = max(len(s.block_table) for s in seqs)
        rows = [s.block_table + [0] * (width - len(s.block_table)) for s in seqs]
        return torch.tensor(rows, dtype=torch.long, device=self.device)

    def _flat(self, table: torch.Tensor, cols: torch.Tensor) -> torch.Tensor:
        ps = self.pages.page_size
        return table.gather(1, cols // ps) * ps + cols % ps
