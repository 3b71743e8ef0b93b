"""The Kimi Delta Attention layer: projections, short convolutions, gates and the output
gate around the `kernels.kda` recurrence (which it calls; it holds no kernel code).

    q, k, v = SiLU(ShortConv(W x))                 # q, k L2-normalised per head in the kernel
    g = −exp(A_log) · softplus(W_f↑ W_f↓ x + dt_bias)   # per-channel decay, log space
    β = sigmoid(W_β x)
    o = W_o[ RMSNorm_head(KDA(q, k, v, g, β)) ⊙ sigmoid(W_g↑ W_g↓ x) ]

Padding (left-padded batches) is exact: padded positions get zero q/k/v inputs, β = 0 and
g = 0, so they leave the recurrent and convolution states untouched.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from kimmy_swarm.kernels.kda import causal_conv1d, kda, kda_gate
from kimmy_swarm.model.cache import KDAState
from kimmy_swarm.model.config import KimiLinearConfig
from kimmy_swarm.model.norm import GatedRMSNorm

__all__ = ["KimiDeltaAttention", "ShortConv"]


class ShortConv(nn.Module):
    """Depthwise causal conv filter `[D, 1, W]` (the checkpoint's `*_conv1d.weight`)."""

    def __init__(self, dim: int, width: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(dim, 1, width))
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))  # nn.Conv1d's default

    def forward(
        self, x: torch.Tensor, state: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor]:  # (B, T, D) -> (B, T, D), (B, D, W − 1)
        return causal_conv1d(x, self.weight, state=state, activation="silu")


class KimiDeltaAttention(nn.Module):
    """KDA over `[B, T, hidden]` with names as in the checkpoint (`self_attn.*`)."""

    def __init__(self, config: KimiLinearConfig) -> None:
        super().__init__()
        lac = config.linear_attn_config
        if lac is None:
            raise ValueError("a KDA layer needs config.linear_attn_config")
        self.num_heads, self.head_dim = lac.num_heads, lac.head_dim
        d, hk, w = config.hidden_size, lac.num_heads * lac.head_dim, lac.short_conv_kernel_size
        self.q_proj = nn.Linear(d, hk, bias=False)
        self.k_proj = nn.Linear(d, hk, bias=False)
        self.v_proj = nn.Linear(d, hk, bias=False)
        self.q_conv1d = ShortConv(hk, w)
        self.k_conv1d = ShortConv(hk, w)
        self.v_conv1d = ShortConv(hk, w)
        self.f_a_proj = nn.Linear(d, lac.head_dim, bias=False)
        self.f_b_proj = nn.Linear(lac.head_dim, hk, bias=False)
        self.A_log = nn.Parameter(torch.empty(1, 1, lac.num_heads, 1))
        self.dt_bias = nn.Parameter(torch.empty(hk))
        self.b_proj = nn.Linear(d, lac.num_heads, bias=False)
        self.g_a_proj = nn.Linear(d, lac.head_dim, bias=False)
        self.g_b_proj = nn.Linear(lac.head_dim, hk, bias=False)
        self.o_norm = GatedRMSNorm(lac.head_dim, eps=config.rms_norm_eps)
        self.o_proj = nn.Linear(hk, d, bias=False)
        self.reset_gate_parameters()

    @torch.no_grad()
    def reset_gate_parameters(self) -> None:
        """fla's init: A = U(1, 16); dt log-uniform in [1e-3, 0.1]; dt_bias = softplus⁻¹(dt)."""
        self.A_log.copy_(torch.empty_like(self.A_log).uniform_(1, 16).log())
        lo, hi = math.log(1e-3), math.log(0.1)
        dt = torch.exp(torch.rand_like(self.dt_bias) * (hi - lo) + lo).clamp(min=1e-4)
        self.dt_bias.copy_(dt + torch.log(-torch.expm1(-dt)))

    def forward(
        self,
        x: torch.Tensor,  # (B, T, hidden)
        *,
        token_mask: torch.Tensor | None = None,  # (B, T) 1 = real token, 0 = left padding
        cache: KDAState | None = None,
    ) -> torch.Tensor:
        b, t, _ = x.shape
        h, dk = self.num_heads, self.head_dim
        m = None if token_mask is None else token_mask[..., None].to(x.dtype)  # (B, T, 1)
        qp, kp, vp = self.q_proj(x), self.k_proj(x), self.v_proj(x)  # (B, T, H·K)
        if m is not None:
            qp, kp, vp = qp * m, kp * m, vp * m
        q, cq = self.q_conv1d(qp, None if cache is None else cache.conv_q)  # (B, T, H·K)
        k, ck = self.k_conv1d(kp, None if cache is None else cache.conv_k)
        v, cv = self.v_conv1d(vp, None if cache is None else cache.conv_v)
        f = self.f_b_proj(self.f_a_proj(x)).view(b, t, h, dk)  # (B, T, H, K)
        g = kda_gate(f, self.A_log, self.dt_bias)  # (B, T, H, K) ≥ fp32, ≤ 0
        acc = torch.promote_types(x.dtype, torch.float32)  # gates in fp32 (fp64 stays)
        beta = torch.sigmoid(self.b_proj(x).to(acc))  # (B, T, H)
        if m is not None:
            g, beta = g * m[..., None].to(acc), beta * m.to(acc)
        o, state = kda(
            q.view(b, t, h, dk),
            k.view(b, t, h, dk),
            v.view(b, t, h, dk),
            g,
            beta,
            initial_state=None if cache is None else cache.recurrent,
            output_final_state=cache is not None,
            use_qk_l2norm=True,
        )  # (B, T, H, V), (B, H, K, V)
        if cache is not None:
            cache.conv_q, cache.conv_k, cache.conv_v, cache.recurrent = cq, ck, cv, state
        gate = self.g_b_proj(self.g_a_proj(x)).view(b, t, h, dk)  # (B, T, H, V)
        o = self.o_norm(o, gate)  # (B, T, H, V)
        return self.o_proj(o.reshape(b, t, h * dk))  # (B, T, hidden)
