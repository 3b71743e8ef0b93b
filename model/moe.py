"""Mixture of experts: sigmoid router with a score-correction bias, top-k, renormalised
weights, routed scaling, shared experts — and the aux-loss-free balancing of the bias.

    s = sigmoid(W_r x)                      # per-expert affinity
    chosen = top-k(s + b)                   # b only steers selection (load balancing)
    w = s[chosen] / Σ s[chosen] · scale     # weights use the unbiased scores
    y = Σ_e∈chosen w_e · Expert_e(x) + SharedExperts(x)
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from kimmy_swarm.model.config import KimiLinearConfig
from kimmy_swarm.model.mlp import MLP

__all__ = ["Expert", "MoEGate", "SparseMoE", "balance_router_biases_"]


class MoEGate(nn.Module):
    """The router: `weight [E, hidden]`, buffer `e_score_correction_bias [E]`."""

    def __init__(self, config: KimiLinearConfig) -> None:
        super().__init__()
        assert config.num_experts is not None
        self.top_k = config.num_experts_per_token
        self.renormalize = config.moe_renormalize
        self.scaling = config.routed_scaling_factor
        self.weight = nn.Parameter(torch.empty(config.num_experts, config.hidden_size))
        self.register_buffer("e_score_correction_bias", torch.zeros(config.num_experts))
        nn.init.normal_(self.weight, std=config.initializer_range)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """`x [N, hidden]` → `(expert ids [N, k], weights [N, k] in ≥ fp32)`."""
        acc = torch.promote_types(x.dtype, torch.float32)  # fp32 at least, fp64 stays fp64
        scores = torch.sigmoid(F.linear(x.to(acc), self.weight.to(acc)))  # (N, E)
        biased = scores + self.e_score_correction_bias.to(acc)  # (N, E)
        ids = biased.topk(self.top_k, dim=-1).indices  # (N, k)
        w = scores.gather(-1, ids)  # (N, k)
        if self.renormalize:
            w = w / (w.sum(-1, keepdim=True) + 1e-20)
        return ids, w * self.scaling


class Expert(nn.Module):
    """One routed expert: `w2(silu(w1 x) ⊙ w3 x)` (w1 gate, w2 down, w3 up)."""

    def __init__(self, hidden_size: int, intermediate_size: int) -> None:
        super().__init__()
        self.w1 = nn.Linear(hidden_size, intermediate_size, bias=False)
        self.w2 = nn.Linear(intermediate_size, hidden_size, bias=False)
        self.w3 = nn.Linear(hidden_size, intermediate_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class SparseMoE(nn.Module):
    """The `block_sparse_moe` FFN. Records each call's per-expert token counts (`last_load`)
    for `balance_router_biases_`."""

    def __init__(self, config: KimiLinearConfig) -> None:
        super().__init__()
        assert config.num_experts is not None
        d, inter = config.hidden_size, config.moe_intermediate_size
        self.gate = MoEGate(config)
        self.experts = nn.ModuleList(Expert(d, inter) for _ in range(config.num_experts))
        n_shared = config.num_shared_experts or 0
        self.shared_experts = MLP(d, inter * n_shared) if n_shared else None
        self.register_buffer("last_load", torch.zeros(config.num_experts), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, T, D) -> (B, T, D)
        shape = x.shape
        flat = x.reshape(-1, shape[-1])  # (N, D)
        ids, w = self.gate(flat)  # (N, k), (N, k)
        out = torch.zeros_like(flat)  # (N, D)
        for e in torch.unique(ids).tolist():
            tok, slot = (ids == e).nonzero(as_tuple=True)  # (n_e,), (n_e,)
            y = self.experts[e](flat[tok]) * w[tok, slot, None].to(flat.dtype)  # (n_e, D)
            out.index_add_(0, tok, y)
        if self.shared_experts is not None:
            out = out + self.shared_experts(flat)
        with torch.no_grad():
            self.last_load.copy_(torch.bincount(ids.flatten(), minlength=len(self.experts)))
        return out.view(shape)


@torch.no_grad()
def balance_router_biases_(model: nn.Module, *, rate: float = 1e-3) -> int:
    """Aux-loss-free load balancing (DeepSeek-V3 style): after a step, raise the selection
    bias of under-loaded experts and lower that of over-loaded ones by `rate`, using each
    MoE layer's `last_load`. Returns the number of layers updated."""
    n = 0
    for mod in model.modules():
        if isinstance(mod, SparseMoE) and mod.last_load.sum() > 0:
            load = mod.last_load.float()
            bias = mod.gate.e_score_correction_bias
            bias.add_(rate * torch.sign(load.mean() - load).to(bias.dtype))
            n += 1
    return n
