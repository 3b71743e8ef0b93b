"""Runs the model on a step's batch, reading and writing the two cache pools.

For a group of sequences that each feed `T` new tokens, the runner gathers their MLA
latents from the pages (left-padded to the longest context, with an attention mask) and
their KDA states from their slots into a `HybridCache`, calls the model's ordinary
`forward(ids, attention_mask=, cache=)`, then writes the new latents into the pages and
the updated states back into the slots. The engine groups sequences that feed the same
number of tokens (all decodes; prefill chunks of equal length); each row continues from its
own slot, so a chunk's conv and recurrent states go on exactly where its last chunk ended.
"""

from __future__ import annotations

import torch

from model.cache import HybridCache, KDAState, MLAState
from model.modeling import KimiLinearForCausalLM
from model.serve.pages import PagePool
from model.serve.sequence import Sequence
from model.serve.slots import StatePool

__all__ = ["ModelRunner"]


class ModelRunner:
    """Owns nothing but references: the model and the two pools."""

    def __init__(self, model: KimiLinearForCausalLM, pages: PagePool, slots: StatePool) -> None:
        self.model = model
        self.pages = pages
        self.slots = slots
        cfg = model.config
        self.layer_types = cfg.layer_types
        self.kv_lora_rank = cfg.kv_lora_rank
        self.device = next(model.parameters()).device
        # position of each layer in its pool (MLA layers in `pages.kv`, KDA in `slots`)
        self.pool_index = [self.layer_types[:i].count(t) for i, t in enumerate(self.layer_types)]

    @torch.no_grad()
    def run(self, seqs: list[Sequence], t: int) -> torch.Tensor:
        """Feed `t` tokens of each sequence (from `num_computed`); return the logits of
        each one's last fed token `[n, vocab]`. Does not advance `num_computed`."""
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
        cache = self._gather(flat_past, slot_ids, n)
        logits = self.model(ids, attention_mask=mask.long(), cache=cache)  # (n, t, V)
        self._scatter(cache, flat_new, slot_ids, t)
        return logits[:, -1]

    def _block_tables(self, seqs: list[Sequence]) -> torch.Tensor:
        width = max(len(s.block_table) for s in seqs)
        rows = [s.block_table + [0] * (width - len(s.block_table)) for s in seqs]
        return torch.tensor(rows, dtype=torch.long, device=self.device)

    def _flat(self, table: torch.Tensor, cols: torch.Tensor) -> torch.Tensor:
        ps = self.pages.page_size
        return table.gather(1, cols // ps) * ps + cols % ps

    def _gather(self, flat_past: torch.Tensor, slot_ids: torch.Tensor, n: int) -> HybridCache:
        layers: list[KDAState | MLAState] = []
        r = self.kv_lora_rank
        for kind, j in zip(self.layer_types, self.pool_index, strict=True):
            if kind == "mla":
                if flat_past.shape[1] == 0:
                    layers.append(MLAState())
                    continue
                kv = self.pages.kv[j][flat_past]  # (n, S, r + d_rope)
                layers.append(MLAState(latent=kv[..., :r], k_rope=kv[..., r:]))
            else:
                conv = self.slots.conv[j][slot_ids]  # (n, 3, D, W − 1)
                layers.append(
                    KDAState(
                        conv_q=conv[:, 0],
                        conv_k=conv[:, 1],
                        conv_v=conv[:, 2],
                        recurrent=self.slots.recurrent[j][slot_ids],  # (n, H, K, V)
                    )
                )
        return HybridCache(layers)

    def _scatter(
        self, cache: HybridCache, flat_new: torch.Tensor, slot_ids: torch.Tensor, t: int
    ) -> None:
        for kind, j, state in zip(self.layer_types, self.pool_index, cache.layers, strict=True):
            if isinstance(state, MLAState):
                assert kind == "mla" and state.latent is not None and state.k_rope is not None
                new = torch.cat([state.latent[:, -t:], state.k_rope[:, -t:]], dim=-1)  # (n, t, w)
                self.pages.kv[j].index_copy_(
                    0, flat_new.reshape(-1), new.reshape(-1, new.shape[-1])
                )
            else:
                assert isinstance(state, KDAState) and state.recurrent is not None
                conv = torch.stack([state.conv_q, state.conv_k, state.conv_v], dim=1)  # type: ignore[arg-type]
                self.slots.conv[j][slot_ids] = conv.to(self.slots.conv.dtype)
                self.slots.recurrent[j][slot_ids] = state.recurrent.to(self.slots.recurrent.dtype)
