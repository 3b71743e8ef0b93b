"""Multi-head Latent Attention (MLA) with NoPE, the full-attention layer of Kimi Linear.

Keys and values are compressed into one latent per token, `c = RMSNorm(W_a x)[:r]`, plus a
`k_rope` part shared by all heads (no rotary embedding: NoPE). Per head,
`[k_nope | v] = W_b c`, `q = [q_nope | q_rope] = W_q x`, and
`score = (q_nope·k_nope + q_rope·k_rope) · (d_nope + d_rope)^-1/2`.
The decode cache keeps only `(c, k_rope)` per token.

For QK-Clip the layer can record, per head, the largest pre-softmax logit it produced
(`record_max_logits = True`; read `max_logits`, reset with `reset_max_logits()`).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from kimmy_swarm.model.cache import MLAState
from kimmy_swarm.model.config import KimiLinearConfig
from kimmy_swarm.model.norm import RMSNorm

__all__ = ["KV_A_NORM_EPS", "MLAttention", "attention_mask"]


def attention_mask(
    q_len: int, k_len: int, key_padding: torch.Tensor | None, device: torch.device
) -> torch.Tensor:
    """Boolean `[B or 1, 1, q_len, k_len]` mask, True = may attend.

    Queries are the last `q_len` of `k_len` positions (causal with an offset). Padded keys
    (`key_padding[b, s] == 0`) are hidden, except that every query sees its own position, so
    a padded query row is never empty (its output is discarded anyway).
    """
    offset = k_len - q_len
    qi = torch.arange(q_len, device=device)[:, None] + offset  # (Tq, 1)
    ki = torch.arange(k_len, device=device)[None, :]  # (1, Tk)
    causal = ki <= qi  # (Tq, Tk)
    if key_padding is None:
        return causal[None, None]
    keep = causal[None] & key_padding[:, None, :].bool()  # (B, Tq, Tk)
    return (keep | (ki == qi)[None])[:, None]


#: eps of the latent's RMSNorm (`kv_a_layernorm`), fixed as in the published model code.
KV_A_NORM_EPS = 1e-6


class MLAttention(nn.Module):
    """MLA over `[B, T, hidden]`; weight names as in the checkpoint (`self_attn.*`)."""

    def __init__(self, config: KimiLinearConfig) -> None:
        super().__init__()
        self.num_heads = config.num_attention_heads
        self.qk_nope_head_dim = config.qk_nope_head_dim
        self.qk_rope_head_dim = config.qk_rope_head_dim
        self.v_head_dim = config.v_head_dim
        self.kv_lora_rank = config.kv_lora_rank
        self.scale = config.qk_head_dim**-0.5
        h, d = self.num_heads, config.hidden_size
        self.q_proj = nn.Linear(d, h * config.qk_head_dim, bias=False)
        self.kv_a_proj_with_mqa = nn.Linear(
            d, self.kv_lora_rank + self.qk_rope_head_dim, bias=False
        )
        # The published modeling code (and the transformers port) builds this norm with
        # its default eps, 1e-6, whatever the config's `rms_norm_eps` says.
        self.kv_a_layernorm = RMSNorm(self.kv_lora_rank, eps=KV_A_NORM_EPS)
        self.kv_b_proj = nn.Linear(
            self.kv_lora_rank, h * (self.qk_nope_head_dim + self.v_head_dim), bias=False
        )
        self.o_proj = nn.Linear(h * self.v_head_dim, d, bias=False)
        self.record_max_logits = False
        self.register_buffer("max_logits", torch.zeros(h), persistent=False)  # fp32

    def reset_max_logits(self) -> None:
        self.max_logits.zero_()

    def compress(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """`(latent [B, T, r] normalised, k_rope [B, T, d_rope])` — what the cache stores."""
        ckv = self.kv_a_proj_with_mqa(x)  # (B, T, r + d_rope)
        latent, k_rope = ckv.split([self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
        return self.kv_a_layernorm(latent), k_rope

    def forward(
        self,
        x: torch.Tensor,  # (B, T, hidden)
        *,
        key_padding: torch.Tensor | None = None,  # (B, S_total) 1 = real token
        cache: MLAState | None = None,
    ) -> torch.Tensor:
        b, t, _ = x.shape
        h, dn, dr, dv = (
            self.num_heads,
            self.qk_nope_head_dim,
            self.qk_rope_head_dim,
            self.v_head_dim,
        )
        q = self.q_proj(x).view(b, t, h, dn + dr).transpose(1, 2)  # (B, H, T, dn + dr)
        latent, k_rope = self.compress(x)  # (B, T, r), (B, T, dr)
        if cache is not None:
            latent, k_rope = cache.append(latent, k_rope)  # (B, S, r), (B, S, dr)
        s = latent.shape[1]
        kv = self.kv_b_proj(latent).view(b, s, h, dn + dv).transpose(1, 2)  # (B, H, S, dn + dv)
        k_nope, v = kv.split([dn, dv], dim=-1)  # (B, H, S, dn), (B, H, S, dv)
        k_r = k_rope[:, None].expand(b, h, s, dr)  # (B, H, S, dr) shared by the heads
        k = torch.cat([k_nope, k_r], dim=-1)  # (B, H, S, dn + dr)
        mask = attention_mask(t, s, key_padding, x.device)  # (B|1, 1, T, S)
        if self.record_max_logits:
            self._record(q, k, mask)
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=self.scale)
        return self.o_proj(o.transpose(1, 2).reshape(b, t, h * dv))  # (B, T, hidden)

    @torch.no_grad()
    def _record(self, q: torch.Tensor, k: torch.Tensor, mask: torch.Tensor) -> None:
        acc = torch.promote_types(q.dtype, torch.float32)  # fp32 at least, fp64 stays fp64
        logits = (q.to(acc) @ k.to(acc).transpose(-1, -2)) * self.scale  # (B, H, T, S)
        logits = logits.masked_fill(~mask, float("-inf"))
        head_max = logits.amax(dim=(0, 2, 3))  # (H,)
        torch.maximum(self.max_logits, head_max, out=self.max_logits)
