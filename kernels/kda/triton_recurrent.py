"""Fused recurrent KDA on Triton, for decoding: one or a few tokens per sequence, many
sequences at once, the state updated in place if asked. Forward only (no autograd).

One program owns one (sequence, head, V-slice) and keeps its K×BV slice of the state in
registers across the sequence's tokens. Layout `[B, T, H, D]`; state `[N, H, K, V]`.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kimmy_swarm.kernels.kda._checks import L2NORM_EPS, KDAInputError, check_inputs
from kimmy_swarm.kernels.kda._triton_common import block_k, block_v

__all__ = ["triton_fused_recurrent_kda"]


@triton.jit
def fused_recurrent_kernel(
    q, k, v, g, beta, o, h0, ht, scale, cu_seqlens,
    H: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr,
    USE_H0: tl.constexpr, STORE_HT: tl.constexpr, L2NORM: tl.constexpr, EPS: tl.constexpr,
):  # fmt: skip
    i_v, i_nh = tl.program_id(0), tl.program_id(1)
    i_n, i_h = i_nh // H, i_nh % H
    bos = tl.load(cu_seqlens + i_n).to(tl.int64)
    eos = tl.load(cu_seqlens + i_n + 1).to(tl.int64)
    o_k = tl.arange(0, BK)
    o_v = i_v * BV + tl.arange(0, BV)
    m_k, m_v = o_k < K, o_v < V
    m_kv = m_k[:, None] & m_v[None, :]
    p_kv = (i_n * H + i_h) * K * V + o_k[:, None] * V + o_v[None, :]
    b_s = tl.zeros([BK, BV], dtype=tl.float32)
    if USE_H0:
        b_s += tl.load(h0 + p_kv, mask=m_kv, other=0.0).to(tl.float32)
    for t in range(bos, eos):
        p_k = (t * H + i_h) * K + o_k
        p_v = (t * H + i_h) * V + o_v
        b_q = tl.load(q + p_k, mask=m_k, other=0.0).to(tl.float32)
        b_k = tl.load(k + p_k, mask=m_k, other=0.0).to(tl.float32)
        if L2NORM:
            b_q = b_q / tl.sqrt(tl.sum(b_q * b_q, 0) + EPS)
            b_k = b_k / tl.sqrt(tl.sum(b_k * b_k, 0) + EPS)
        b_v = tl.load(v + p_v, mask=m_v, other=0.0).to(tl.float32)
        b_g = tl.load(g + p_k, mask=m_k, other=0.0).to(tl.float32)
        b_b = tl.load(beta + t * H + i_h).to(tl.float32)
        b_s = b_s * tl.exp(b_g)[:, None]
        b_delta = b_b * (b_v - tl.sum(b_s * b_k[:, None], 0))  # β (v − Sᵀk)
        b_s = b_s + b_k[:, None] * b_delta[None, :]
        b_o = tl.sum(b_s * (b_q * scale)[:, None], 0)
        tl.store(o + p_v, b_o.to(o.dtype.element_ty), mask=m_v)
    if STORE_HT:
        tl.store(ht + p_kv, b_s.to(ht.dtype.element_ty), mask=m_kv)


def _check_decode_call(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    initial_state: torch.Tensor | None,
    inplace_state: bool,
) -> None:
    if torch.is_grad_enabled() and any(x.requires_grad for x in (q, k, v, g, beta)):
        raise KDAInputError("fused_recurrent has no backward; use chunk_kda for training")
    if inplace_state and initial_state is None:
        raise KDAInputError("inplace_state=True needs an initial_state to update")
    if initial_state is not None and not initial_state.is_contiguous():
        raise KDAInputError("initial_state must be contiguous for the Triton kernel")


def triton_fused_recurrent_kda(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    *,
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
    output_final_state: bool = False,
    use_qk_l2norm: bool = False,
    cu_seqlens: torch.Tensor | None = None,
    inplace_state: bool = False,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Kimi Delta Attention token by token in one Triton kernel (decode; no backward).

    Args:
        q: queries `[B, T, H, K]` (T is small when decoding, often 1).
        k: keys `[B, T, H, K]`.
        v: values `[B, T, H, V]`.
        g: log-space per-channel decay `[B, T, H, K]`.
        beta: delta-rule write strength `[B, T, H]`.
        scale: query scale; default `K ** -0.5`.
        initial_state: `[N, H, K, V]`.
        output_final_state: also return the final state `[N, H, K, V]`.
        use_qk_l2norm: L2-normalize q and k per head (eps 1e-6) inside the kernel.
        cu_seqlens: `[N + 1]` offsets of packed sequences (then B must be 1).
        inplace_state: write the final state into `initial_state` (which is then returned).

    Returns:
        `(o [B, T, H, V] in v's dtype, final state or None)`.

    Raises:
        KDAInputError: gradients are requested, or inplace_state without an initial_state.
    """
    shp = check_inputs(q, k, v, g, beta, initial_state, cu_seqlens)
    _check_decode_call(q, k, v, g, beta, initial_state, inplace_state)
    if cu_seqlens is None:
        cu_seqlens = torch.arange(0, shp.B + 1, device=q.device, dtype=torch.int32) * shp.T
    h0 = initial_state
    store = output_final_state or inplace_state
    if inplace_state:
        ht = h0
    elif output_final_state:
        ht = torch.empty(shp.N, shp.H, shp.K, shp.V, dtype=torch.float32, device=q.device)
    else:
        ht = None
    o = torch.empty_like(v)
    bv = block_v(shp.V)
    fused_recurrent_kernel[(triton.cdiv(shp.V, bv), shp.N * shp.H)](
        *(x.contiguous() for x in (q, k, v, g, beta)), o, h0, ht,
        shp.K**-0.5 if scale is None else scale, cu_seqlens,
        H=shp.H, K=shp.K, V=shp.V, BK=block_k(shp.K), BV=bv,
        USE_H0=h0 is not None, STORE_HT=store, L2NORM=use_qk_l2norm, EPS=L2NORM_EPS,
    )  # fmt: skip
    return o, (ht if store else None)
