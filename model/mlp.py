"""The dense SwiGLU MLP (first layers, shared experts)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["MLP"]


class MLP(nn.Module):
    """`down(silu(gate(x)) ⊙ up(x))`, no biases; names as in the checkpoint."""

    def __init__(self, hidden_size: int, intermediate_size: int) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(hidden_size, intermediate_size, bias=False)
        self.up_proj = nn.Linear(hidden_size, intermediate_size, bias=False)
        self.down_proj = nn.Linear(intermediate_size, hidden_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (..., D) -> (..., D)
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))
