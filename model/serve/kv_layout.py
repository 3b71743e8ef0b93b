"""How a model's cache maps onto the engine's two pools, one class per architecture.

The engine keeps a page pool (per-token entries, shared prefixes reusable page by page)
and a state-slot pool (fixed-size per-sequence state). An architecture says what a
token's page entry holds, whether it has per-sequence state, and how to build its model's
cache object from gathered pool rows and write the new rows back:

- `HybridLayout` (Kimi Linear): MLA layers page the latent `c_kv ‖ k_rope`
  (`kv_lora_rank + qk_rope_head_dim` numbers a token); KDA layers keep their conv and
  recurrent states in slots, so a prefix hit also needs a state checkpoint.
- `GQALayout` (Llama family, Qwen2 included): every layer pages `k ‖ v` (`2 · H_kv · D`
  numbers a token); there is no per-sequence state, so any cached page prefix is a hit.

`layout_for(model)` picks the layout from the model's class (a subclass of
`LlamaForCausalLM`, such as `Qwen2ForCausalLM`, has Llama's cache).
"""

from __future__ import annotations

from typing import Any, Protocol

import torch

from kimmy_swarm.model.cache import HybridCache, KDAState, MLAState
from kimmy_swarm.model.errors import ModelConfigError
from kimmy_swarm.model.llama import LlamaCache, LlamaForCausalLM
from kimmy_swarm.model.modeling import KimiLinearForCausalLM
from kimmy_swarm.model.serve.pages import PagePool
from kimmy_swarm.model.serve.slots import StatePool

__all__ = ["CacheLayout", "GQALayout", "HybridLayout", "layout_for"]


class CacheLayout(Protocol):
    """What the engine needs to know about a model's cache."""

    page_layers: int  # layers with per-token entries in the page pool
    page_width: int  # numbers per token per paged layer
    needs_state: bool  # per-sequence state in slots (a prefix hit needs a checkpoint)
    context_length: int | None  # the model's longest context, when it says

    def state_pool(self, num_slots: int, dtype: torch.dtype, device: torch.device) -> StatePool:
        """The slot pool this architecture needs (empty tensors when it has no state)."""
        ...

    def gather(
        self, pages: PagePool, slots: StatePool, flat_past: torch.Tensor, slot_ids: torch.Tensor
    ) -> Any:
        """The model's cache for a batch: rows `flat_past` `[n, S]` of the pages, states of
        `slot_ids` `[n]`."""
        ...

    def scatter(
        self,
        cache: Any,
        pages: PagePool,
        slots: StatePool,
        flat_new: torch.Tensor,
        slot_ids: torch.Tensor,
        t: int,
    ) -> None:
        """Write the `t` new tokens' entries to rows `flat_new` `[n, t]` and the updated
        states back to their slots."""
        ...


class HybridLayout:
    """Kimi Linear: MLA latents in pages, KDA states in slots."""

    def __init__(self, model: KimiLinearForCausalLM) -> None:
        cfg = model.config
        self.layer_types = cfg.layer_types
        self.kv_lora_rank = cfg.kv_lora_rank
        self.page_layers = self.layer_types.count("mla")
        self.page_width = cfg.kv_lora_rank + cfg.qk_rope_head_dim
        self.needs_state = "kda" in self.layer_types
        self.context_length = cfg.model_max_length
        self._lac = cfg.linear_attn_config
        # position of each layer in its pool (MLA layers in `pages.kv`, KDA in `slots`)
        self.pool_index = [self.layer_types[:i].count(t) for i, t in enumerate(self.layer_types)]

    def state_pool(self, num_slots: int, dtype: torch.dtype, device: torch.device) -> StatePool:
        lac = self._lac
        return StatePool(
            num_slots=num_slots,
            num_layers=self.layer_types.count("kda"),
            conv_dim=0 if lac is None else lac.num_heads * lac.head_dim,
            conv_width=0 if lac is None else lac.short_conv_kernel_size,
            heads=0 if lac is None else lac.num_heads,
            head_dim=0 if lac is None else lac.head_dim,
            dtype=dtype,
            device=device,
        )

    def gather(
        self, pages: PagePool, slots: StatePool, flat_past: torch.Tensor, slot_ids: torch.Tensor
    ) -> HybridCache:
        layers: list[KDAState | MLAState] = []
        r = self.kv_lora_rank
        for kind, j in zip(self.layer_types, self.pool_index, strict=True):
            if kind == "mla":
                if flat_past.shape[1] == 0:
                    layers.append(MLAState())
                    continue
                kv = pages.kv[j][flat_past]  # (n, S, r + d_rope)
                layers.append(MLAState(latent=kv[..., :r], k_rope=kv[..., r:]))
            else:
                conv = slots.conv[j][slot_ids]  # (n, 3, D, W − 1)
                layers.append(
                    KDAState(
                        conv_q=conv[:, 0],
                        conv_k=conv[:, 1],
                        conv_v=conv[:, 2],
                        recurrent=slots.recurrent[j][slot_ids],  # (n, H, K, V)
                    )
                )
        return HybridCache(layers)

    def scatter(
        self,
        cache: HybridCache,
        pages: PagePool,
        slots: StatePool,
        flat_new: torch.Tensor,
        slot_ids: torch.Tensor,
        t: int,
    ) -> None:
        for kind, j, state in zip(self.layer_types, self.pool_index, cache.layers, strict=True):
            if isinstance(state, MLAState):
                assert kind == "mla" and state.latent is not None and state.k_rope is not None
                new = torch.cat([state.latent[:, -t:], state.k_rope[:, -t:]], dim=-1)  # (n, t, w)
                pages.kv[j].index_copy_(0, flat_new.reshape(-1), new.reshape(-1, new.shape[-1]))
            else:
                assert isinstance(state, KDAState) and state.recurrent is not None
                conv = torch.stack([state.conv_q, state.conv_k, state.conv_v], dim=1)  # type: ignore[arg-type]
                slots.conv[j][slot_ids] = conv.to(slots.conv.dtype)
                slots.recurrent[j][slot_ids] = state.recurrent.to(slots.recurrent.dtype)


class GQALayout:
    """Llama family (Qwen2 too): each layer's keys and values (`H_kv` heads of `D`) in
    pages; no slots."""

    def __init__(self, model: LlamaForCausalLM) -> None:
        cfg = model.config
        self.n_kv, self.head_dim = cfg.num_key_value_heads, cfg.head_dim
        self.page_layers = cfg.num_hidden_layers
        self.page_width = 2 * self.n_kv * self.head_dim
        self.needs_state = False
        self.context_length = cfg.max_position_embeddings

    def state_pool(self, num_slots: int, dtype: torch.dtype, device: torch.device) -> StatePool:
        return StatePool(
            num_slots=num_slots, num_layers=0, conv_dim=0, conv_width=0, heads=0, head_dim=0,
            dtype=dtype, device=device,
        )  # fmt: skip

    def gather(
        self, pages: PagePool, slots: StatePool, flat_past: torch.Tensor, slot_ids: torch.Tensor
    ) -> LlamaCache:
        n, s = flat_past.shape
        if s == 0:
            return LlamaCache()
        cache = LlamaCache()
        half = self.n_kv * self.head_dim
        for j in range(self.page_layers):
            kv = pages.kv[j][flat_past]  # (n, S, 2 · H_kv · D)
            k = kv[..., :half].view(n, s, self.n_kv, self.head_dim).transpose(1, 2)
            v = kv[..., half:].view(n, s, self.n_kv, self.head_dim).transpose(1, 2)
            cache.keys.append(k)  # (n, H_kv, S, D)
            cache.values.append(v)
        return cache

    def scatter(
        self,
        cache: LlamaCache,
        pages: PagePool,
        slots: StatePool,
        flat_new: torch.Tensor,
        slot_ids: torch.Tensor,
        t: int,
    ) -> None:
        rows = flat_new.reshape(-1)
        for j in range(self.page_layers):
            k, v = cache.keys[j], cache.values[j]
            assert k is not None and v is not None
            n = k.shape[0]
            new_k = k[:, :, -t:].transpose(1, 2).reshape(n * t, -1)  # (n·t, H_kv · D)
            new_v = v[:, :, -t:].transpose(1, 2).reshape(n * t, -1)
            pages.kv[j].index_copy_(0, rows, torch.cat([new_k, new_v], dim=-1))


def layout_for(model: Any) -> HybridLayout | GQALayout:
    """The cache layout of `model`'s architecture.

    Raises:
        ModelConfigError: the engine does not know the model's class.
    """
    if isinstance(model, KimiLinearForCausalLM):
        return HybridLayout(model)
    if isinstance(model, LlamaForCausalLM):
        return GQALayout(model)
    raise ModelConfigError(
        "the engine serves KimiLinearForCausalLM and LlamaForCausalLM (Qwen2ForCausalLM "
        f"included); got {type(model).__name__}"
    )
