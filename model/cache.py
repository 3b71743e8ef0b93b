"""The hybrid inference cache: constant-size state for KDA layers, latent KV for MLA layers.

Per KDA layer and sequence: three short-conv states `[D, W − 1]` (the last W − 1 projected
q, k, v inputs) and the recurrent state `[H, K, V]` (fp32) — the same size at any length.
Per MLA layer and token: the normalised latent `c_kv [kv_lora_rank]` and the shared
`k_rope [qk_rope_head_dim]` (576 numbers per token for the 48B config, vs
`2 · H · 192`-ish for full multi-head KV) — keys and values are re-expanded from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from kimmy_swarm.model.config import KimiLinearConfig

__all__ = ["HybridCache", "KDAState", "MLAState", "cache_bytes_per_sequence"]


@dataclass
class KDAState:
    """One KDA layer's decode state for a batch."""

    conv_q: torch.Tensor | None = None  # (B, H·K, W − 1)
    conv_k: torch.Tensor | None = None  # (B, H·K, W − 1)
    conv_v: torch.Tensor | None = None  # (B, H·V, W − 1)
    recurrent: torch.Tensor | None = None  # (B, H, K, V) fp32

    def tensors(self) -> list[torch.Tensor]:
        return [t for t in (self.conv_q, self.conv_k, self.conv_v, self.recurrent) if t is not None]


@dataclass
class MLAState:
    """One MLA layer's latent KV for a batch, grown token by token."""

    latent: torch.Tensor | None = None  # (B, S, kv_lora_rank), after kv_a_layernorm
    k_rope: torch.Tensor | None = None  # (B, S, qk_rope_head_dim)

    def append(self, latent: torch.Tensor, k_rope: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """Add new tokens; return the whole `(latent, k_rope)` so far."""
        if self.latent is None or self.k_rope is None:
            self.latent, self.k_rope = latent, k_rope
        else:
            self.latent = torch.cat([self.latent, latent], dim=1)
            self.k_rope = torch.cat([self.k_rope, k_rope], dim=1)
        return self.latent, self.k_rope

    def tensors(self) -> list[torch.Tensor]:
        return [t for t in (self.latent, self.k_rope) if t is not None]


@dataclass
class HybridCache:
    """Per-layer decode state of a batch of sequences (one entry per decoder layer)."""

    layers: list[KDAState | MLAState] = field(default_factory=list)
    seen_tokens: int = 0

    @classmethod
    def empty(cls, config: KimiLinearConfig) -> HybridCache:
        return cls([KDAState() if t == "kda" else MLAState() for t in config.layer_types])

    def nbytes(self) -> int:
        """Bytes held by every cached tensor (all sequences of the batch)."""
        return sum(t.numel() * t.element_size() for s in self.layers for t in s.tensors())


def cache_bytes_per_sequence(
    config: KimiLinearConfig, seq_len: int, *, dtype_bytes: int = 2, state_bytes: int = 4
) -> int:
    """Analytic cache size of one sequence of `seq_len` tokens (no allocation).

    KDA layers: conv states in `dtype_bytes` + the fp32 (`state_bytes`) recurrent state;
    MLA layers: `(kv_lora_rank + qk_rope_head_dim) · seq_len` numbers in `dtype_bytes`.
    """
    total = 0
    lac = config.linear_attn_config
    for kind in config.layer_types:
        if kind == "mla":
            total += (config.kv_lora_rank + config.qk_rope_head_dim) * seq_len * dtype_bytes
        else:
            assert lac is not None
            d = lac.num_heads * lac.head_dim
            total += 3 * d * (lac.short_conv_kernel_size - 1) * dtype_bytes
            total += lac.num_heads * lac.head_dim * lac.head_dim * state_bytes
    return total
