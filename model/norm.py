"""RMSNorm and the per-head gated RMSNorm of KDA's output."""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["GatedRMSNorm", "RMSNorm", "rms_norm"]


def rms_norm(x: torch.Tensor, weight: torch.Tensor | None, eps: float) -> torch.Tensor:
    """`x / rms(x) · weight` over the last dim, computed in ≥ fp32, returned in x's dtype."""
    xf = x.to(torch.promote_types(x.dtype, torch.float32))
    y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    if weight is not None:
        y = y * weight.to(xf.dtype)
    return y.to(x.dtype)


class RMSNorm(nn.Module):
    """Root-mean-square norm with a learned scale (initialised to ones)."""

    def __init__(self, dim: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (..., dim)
        return rms_norm(x, self.weight, self.eps)


class GatedRMSNorm(RMSNorm):
    """`RMSNorm(x) ⊙ sigmoid(gate)` per head: x and gate `[..., H, D]`, weight `[D]` shared
    by the heads (the checkpoint's `o_norm`)."""

    def forward(self, x: torch.Tensor, gate: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        acc = torch.promote_types(x.dtype, torch.float32)
        y = rms_norm(x.to(acc), self.weight, self.eps) * torch.sigmoid(gate.to(acc))
        return y.to(x.dtype)
