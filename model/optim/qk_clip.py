"""QK-Clip (Kimi K2, Algorithm 1) for MLA layers: cap each head's attention logits at τ.

Muon's large, full-rank updates can let query/key weights grow until softmax logits explode
and the loss spikes. After each optimizer step, every head whose largest pre-softmax logit
`S_max^h` (recorded by the layer during the forward pass) exceeds τ has its query and key
weights rescaled so that the same input would give exactly τ: with γ = τ / S_max^h,

- `q_nope` rows and `k_nope` rows × √γ  → the `q_nope·k_nope` term × γ,
- `q_rope` rows × γ, the shared `k_rope` untouched → the `q_rope·k_rope` term × γ
  (`k_rope` is shared by all heads, so scaling it would also clip heads that are fine),
- values never (they do not enter the logits).

Every logit of the head is then multiplied by γ, so its maximum becomes τ. Only MLA layers
are clipped; KDA has no softmax logits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from kimmy_swarm.model.errors import ModelConfigError
from kimmy_swarm.model.mla import MLAttention

__all__ = ["QKClipResult", "find_mla_layers", "qk_clip_"]


@dataclass(frozen=True)
class QKClipResult:
    """What one `qk_clip_` call saw and did to one layer.

    Attributes:
        max_logits: per head, the recorded max logit before clipping (`[H]` as floats).
        clipped_heads: indices of the heads that exceeded τ and were rescaled.
        gammas: γ = τ / max_logit for each clipped head, in the same order.
    """

    max_logits: tuple[float, ...]
    clipped_heads: tuple[int, ...]
    gammas: tuple[float, ...]

    @property
    def max_logit(self) -> float:
        """The layer's largest logit over all heads (−inf if nothing was recorded)."""
        return max(self.max_logits, default=-math.inf)

    @property
    def num_clipped(self) -> int:
        return len(self.clipped_heads)


def find_mla_layers(model: nn.Module) -> list[tuple[str, MLAttention]]:
    """Every `MLAttention` in `model` (the model itself included), with its module name."""
    return [(name, m) for name, m in model.named_modules() if isinstance(m, MLAttention)]


def _scale_rows_(linear: nn.Linear, start: int, stop: int, factor: float) -> None:
    """Multiply output rows `[start, stop)` of `linear` (and its bias, if any) by `factor`."""
    linear.weight[start:stop].mul_(factor)  # (stop - start, in)
    if linear.bias is not None:
        linear.bias[start:stop].mul_(factor)


def _check_tau(tau: float) -> None:
    if isinstance(tau, bool) or not (isinstance(tau, int | float) and math.isfinite(tau)):
        raise ModelConfigError(f"QK-Clip tau must be a finite number > 0; got {tau!r}")
    if tau <= 0:
        raise ModelConfigError(f"QK-Clip tau must be > 0; got {tau}")


@torch.no_grad()
def qk_clip_(attn: MLAttention, tau: float) -> QKClipResult:
    """Rescale, in place, the query/key weights of every head of `attn` whose recorded max
    logit exceeds `tau`.

    Reads `attn.max_logits` (filled while `attn.record_max_logits` is on) and leaves it as
    it is: the caller resets it before the next recording window. `kv_a_proj_with_mqa`
    (latent and shared `k_rope`) and the value rows of `kv_b_proj` are never touched.

    Raises:
        ModelConfigError: `tau` is not a finite number > 0.
    """
    _check_tau(tau)
    dn, dr, dv = attn.qk_nope_head_dim, attn.qk_rope_head_dim, attn.v_head_dim
    max_logits = tuple(float(v) for v in attn.max_logits.tolist())
    clipped: list[int] = []
    gammas: list[float] = []
    for h, s_max in enumerate(max_logits):
        if not s_max > tau:
            continue
        gamma = tau / s_max
        q0 = h * (dn + dr)  # this head's q rows: [q_nope (dn) | q_rope (dr)]
        _scale_rows_(attn.q_proj, q0, q0 + dn, math.sqrt(gamma))
        _scale_rows_(attn.q_proj, q0 + dn, q0 + dn + dr, gamma)
        k0 = h * (dn + dv)  # this head's kv_b rows: [k_nope (dn) | v (dv)]
        _scale_rows_(attn.kv_b_proj, k0, k0 + dn, math.sqrt(gamma))
        clipped.append(h)
        gammas.append(gamma)
    return QKClipResult(max_logits=max_logits, clipped_heads=tuple(clipped), gammas=tuple(gammas))
