"""Triton kernels for the chunkwise KDA forward pass, then their launchers.

Stages (chunk of BT = 64 tokens; Γ = in-chunk cumsum of g; all tensors packed `[TT, H, ·]`):
1. `chunk_cumsum`       Γ (also the reverse cumsum the backward pass needs)
2. `intra_fwd`          A = k·k and P = scale·q·k pair sums with decay e^{Γ_i−Γ_j}, `[TT, H, BT]`
3. `wy_fwd`             X = (I + Diag(β) A)⁻¹, W = X Diag(β) (e^Γ ⊙ K), U = X Diag(β) V
4. `state_fwd`          sequential over chunks: S per chunk, V′ = U − W S, final state
5. `output_fwd`         O = (scale·Q ⊙ e^Γ) S + P V′
Intermediates are fp32. See `chunk.py` for the algebra.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kimmy_swarm.kernels.kda._triton_common import (
    BC,
    BT,
    ChunkPlan,
    block_k,
    block_v,
    chunk_bounds,
    dot_precision,
)

__all__ = ["ForwardResult", "chunk_cumsum", "kda_chunk_forward"]


@triton.jit
def chunk_cumsum_kernel(
    x, y, cu_seqlens, chunk_indices,
    H: tl.constexpr, D: tl.constexpr, BT: tl.constexpr, BD: tl.constexpr, REVERSE: tl.constexpr,
):  # fmt: skip
    i_c, i_h = tl.program_id(0), tl.program_id(1)
    _, start, eos = chunk_bounds(cu_seqlens, chunk_indices, i_c, BT)
    o_t = start + tl.arange(0, BT)
    o_d = tl.arange(0, BD)
    m = (o_t < eos)[:, None] & (o_d < D)[None, :]
    p = (o_t[:, None] * H + i_h) * D + o_d[None, :]
    b_x = tl.load(x + p, mask=m, other=0.0).to(tl.float32)
    tl.store(y + p, tl.cumsum(b_x, axis=0, reverse=REVERSE), mask=m)


@triton.jit
def intra_fwd_kernel(
    q, k, gc, akk, aqk, scale, cu_seqlens, chunk_indices,
    H: tl.constexpr, K: tl.constexpr, BT: tl.constexpr, BC: tl.constexpr, BK: tl.constexpr,
    PREC: tl.constexpr,
):  # fmt: skip
    """Rows of sub-chunk i_s: off-diagonal blocks by GEMM, the diagonal block pair by pair."""
    i_cs, i_h = tl.program_id(0), tl.program_id(1)
    i_c, i_s = i_cs // (BT // BC), i_cs % (BT // BC)
    _, start, eos = chunk_bounds(cu_seqlens, chunk_indices, i_c, BT)
    row0 = start + i_s * BC
    if row0 < eos:
        o_i = row0 + tl.arange(0, BC)
        o_c = tl.arange(0, BC)
        o_k = tl.arange(0, BK)
        m_i = o_i < eos
        m_ik = m_i[:, None] & (o_k < K)[None, :]
        p_ik = (o_i[:, None] * H + i_h) * K + o_k[None, :]
        b_q = tl.load(q + p_ik, mask=m_ik, other=0.0).to(tl.float32) * scale
        b_k = tl.load(k + p_ik, mask=m_ik, other=0.0).to(tl.float32)
        b_g = tl.load(gc + p_ik, mask=m_ik, other=0.0)
        b_ref = tl.load(gc + (row0 * H + i_h) * K + o_k, mask=o_k < K, other=0.0)  # Γ_first
        b_e = tl.exp(tl.where(m_ik, b_g - b_ref[None, :], 0.0))  # ≤ 1
        b_qa, b_ka = b_q * b_e, b_k * b_e
        p_a = (o_i[:, None] * H + i_h) * BT + o_c[None, :]
        for j_s in range(0, i_s):  # blocks left of the diagonal: Γ_i ≤ Γ_first ≤ Γ_j
            p_jk = ((start + j_s * BC + o_c)[:, None] * H + i_h) * K + o_k[None, :]
            m_jk = (o_k < K)[None, :] & (o_c >= 0)[:, None]
            b_kj = tl.load(k + p_jk, mask=m_jk, other=0.0).to(tl.float32)
            b_gj = tl.load(gc + p_jk, mask=m_jk, other=0.0)
            b_kb = tl.trans(b_kj * tl.exp(b_ref[None, :] - b_gj))  # (BK, BC)
            tl.store(
                akk + p_a + j_s * BC, tl.dot(b_ka, b_kb, input_precision=PREC), mask=m_i[:, None]
            )
            tl.store(
                aqk + p_a + j_s * BC, tl.dot(b_qa, b_kb, input_precision=PREC), mask=m_i[:, None]
            )
        b_akk = tl.zeros([BC, BC], dtype=tl.float32)
        b_aqk = tl.zeros([BC, BC], dtype=tl.float32)
        b_one = tl.full([BK, BC], 1.0, dtype=tl.float32)  # x @ ones: every column = row sums
        for j in range(0, BC):  # the diagonal block, one column at a time
            m_j = (o_k < K) & (row0 + j + 0 * o_k < eos)  # vector mask (interpreter)
            b_kj = tl.load(k + ((row0 + j) * H + i_h) * K + o_k, mask=m_j, other=0.0).to(tl.float32)
            b_gj = tl.load(gc + ((row0 + j) * H + i_h) * K + o_k, mask=m_j, other=0.0)
            keep = (o_c >= j)[:, None] & m_ik
            b_dk = tl.exp(tl.where(keep, b_g - b_gj[None, :], 0.0)) * b_kj[None, :]
            col = o_c[None, :] == j
            s_kk = tl.dot(b_k * b_dk, b_one, input_precision=PREC)
            s_qk = tl.dot(b_q * b_dk, b_one, input_precision=PREC)
            b_akk = tl.where(col & (o_c > j)[:, None], s_kk, b_akk)
            b_aqk = tl.where(col & (o_c >= j)[:, None], s_qk, b_aqk)
        tl.store(akk + p_a + i_s * BC, b_akk, mask=m_i[:, None])
        tl.store(aqk + p_a + i_s * BC, b_aqk, mask=m_i[:, None])


@triton.jit
def unit_lower_inverse(b_l, BT: tl.constexpr, BC: tl.constexpr, PREC: tl.constexpr):
    """(I + L)⁻¹ for a strictly lower-triangular (BT, BT) tile, by blocked forward substitution.

    First the BC×BC diagonal blocks, all at once (row r of every block per step), then block
    rows top to bottom: X_I = D_I⁻¹ (E_I − Σ_{M<I} L_IM X_M). Only dots and selects: stable
    like any forward substitution, and no reductions (slow in the interpreter) in loops.
    """
    o_r = tl.arange(0, BT)
    same = (o_r // BC)[:, None] == (o_r // BC)[None, :]
    b_ld = tl.where(same, b_l, 0.0)  # the diagonal blocks of L
    eye = tl.where(o_r[:, None] == o_r[None, :], 1.0, 0.0)
    b_d = eye
    for r in range(1, BC):
        rows = (o_r % BC == r)[:, None]
        b_d = b_d - tl.dot(tl.where(rows, b_ld, 0.0), b_d, input_precision=PREC)
    b_lo = tl.where(same, 0.0, b_l)  # below the diagonal blocks
    b_x = b_d
    for i in range(1, BT // BC):
        rows = (o_r // BC == i)[:, None]
        b_r = tl.where(rows, eye - tl.dot(b_lo, b_x, input_precision=PREC), 0.0)
        b_x = tl.where(rows, tl.dot(b_d, b_r, input_precision=PREC), b_x)
    return b_x


@triton.jit
def wy_fwd_kernel(
    k, v, beta, gc, akk, x_inv, w, u, cu_seqlens, chunk_indices,
    H: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr, BK: tl.constexpr,
    BV: tl.constexpr, PREC: tl.constexpr,
):  # fmt: skip
    """X = (I + Diag(β) A)⁻¹ by forward substitution; W, U by GEMM."""
    i_c, i_h = tl.program_id(0), tl.program_id(1)
    _, start, eos = chunk_bounds(cu_seqlens, chunk_indices, i_c, BT)
    o_t = start + tl.arange(0, BT)
    o_r = tl.arange(0, BT)
    o_k = tl.arange(0, BK)
    m_t = o_t < eos
    p_a = (o_t[:, None] * H + i_h) * BT + o_r[None, :]
    m_a = m_t[:, None] & (o_r[None, :] < o_r[:, None])
    b_b = tl.load(beta + o_t * H + i_h, mask=m_t, other=0.0).to(tl.float32)
    b_l = tl.load(akk + p_a, mask=m_a, other=0.0) * b_b[:, None]  # L = Diag(β) A
    b_x = unit_lower_inverse(b_l, BT, BC, PREC)
    tl.store(x_inv + p_a, b_x, mask=m_t[:, None])
    b_t = b_x * b_b[None, :]  # T = X Diag(β)
    m_tk = m_t[:, None] & (o_k < K)[None, :]
    p_tk = (o_t[:, None] * H + i_h) * K + o_k[None, :]
    b_k = tl.load(k + p_tk, mask=m_tk, other=0.0).to(tl.float32)
    b_ek = b_k * tl.exp(tl.load(gc + p_tk, mask=m_tk, other=0.0))
    tl.store(w + p_tk, tl.dot(b_t, b_ek, input_precision=PREC), mask=m_tk)
    for i_v in range(0, tl.cdiv(V, BV)):
        o_v = i_v * BV + tl.arange(0, BV)
        m_tv = m_t[:, None] & (o_v < V)[None, :]
        p_tv = (o_t[:, None] * H + i_h) * V + o_v[None, :]
        b_v = tl.load(v + p_tv, mask=m_tv, other=0.0).to(tl.float32)
        tl.store(u + p_tv, tl.dot(b_t, b_v, input_precision=PREC), mask=m_tv)


@triton.jit
def state_fwd_kernel(
    k, gc, w, u, hs, v_new, h0, ht, cu_seqlens, chunk_offsets,
    H: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr, BK: tl.constexpr,
    BV: tl.constexpr, USE_H0: tl.constexpr, STORE_HT: tl.constexpr, PREC: tl.constexpr,
):  # fmt: skip
    """One sequence and V-slice: walk its chunks, keep S in registers, emit V′ and S."""
    i_v, i_nh = tl.program_id(0), tl.program_id(1)
    i_n, i_h = i_nh // H, i_nh % H
    bos = tl.load(cu_seqlens + i_n).to(tl.int64)
    eos = tl.load(cu_seqlens + i_n + 1).to(tl.int64)
    c0 = tl.load(chunk_offsets + i_n).to(tl.int64)
    o_k = tl.arange(0, BK)
    o_v = i_v * BV + tl.arange(0, BV)
    m_kv = (o_k < K)[:, None] & (o_v < V)[None, :]
    p_kv = o_k[:, None] * V + o_v[None, :]
    b_s = tl.zeros([BK, BV], dtype=tl.float32)
    if USE_H0:
        b_s += tl.load(h0 + (i_n * H + i_h) * K * V + p_kv, mask=m_kv, other=0.0).to(tl.float32)
    for i_t in range(0, tl.cdiv(eos - bos, BT)):
        start = bos + i_t * BT
        o_t = start + tl.arange(0, BT)
        m_tk = (o_t < eos)[:, None] & (o_k < K)[None, :]
        m_tv = (o_t < eos)[:, None] & (o_v < V)[None, :]
        p_tk = (o_t[:, None] * H + i_h) * K + o_k[None, :]
        p_tv = (o_t[:, None] * H + i_h) * V + o_v[None, :]
        tl.store(hs + ((c0 + i_t) * H + i_h) * K * V + p_kv, b_s, mask=m_kv)
        b_w = tl.load(w + p_tk, mask=m_tk, other=0.0)
        b_vn = tl.load(u + p_tv, mask=m_tv, other=0.0) - tl.dot(b_w, b_s, input_precision=PREC)
        tl.store(v_new + p_tv, b_vn, mask=m_tv)
        last = tl.minimum(start + BT, eos) - 1
        b_gl = tl.load(gc + (last * H + i_h) * K + o_k, mask=o_k < K, other=0.0)
        b_g = tl.load(gc + p_tk, mask=m_tk, other=0.0)
        b_kd = tl.load(k + p_tk, mask=m_tk, other=0.0).to(tl.float32)
        b_kd = b_kd * tl.exp(tl.where(m_tk, b_gl[None, :] - b_g, 0.0))
        b_s = b_s * tl.exp(b_gl)[:, None] + tl.dot(tl.trans(b_kd), b_vn, input_precision=PREC)
    if STORE_HT:
        tl.store(ht + (i_n * H + i_h) * K * V + p_kv, b_s, mask=m_kv)


@triton.jit
def output_fwd_kernel(
    q, gc, aqk, hs, v_new, o, scale, cu_seqlens, chunk_indices,
    H: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr, BK: tl.constexpr,
    BV: tl.constexpr, PREC: tl.constexpr,
):  # fmt: skip
    i_c, i_v, i_h = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    _, start, eos = chunk_bounds(cu_seqlens, chunk_indices, i_c, BT)
    o_t = start + tl.arange(0, BT)
    o_r = tl.arange(0, BT)
    o_k = tl.arange(0, BK)
    o_v = i_v * BV + tl.arange(0, BV)
    m_t = o_t < eos
    m_tk = m_t[:, None] & (o_k < K)[None, :]
    m_tv = m_t[:, None] & (o_v < V)[None, :]
    p_tk = (o_t[:, None] * H + i_h) * K + o_k[None, :]
    p_tv = (o_t[:, None] * H + i_h) * V + o_v[None, :]
    b_q = tl.load(q + p_tk, mask=m_tk, other=0.0).to(tl.float32) * scale
    b_q = b_q * tl.exp(tl.load(gc + p_tk, mask=m_tk, other=0.0))
    m_kv = (o_k < K)[:, None] & (o_v < V)[None, :]
    b_s = tl.load(
        hs + (i_c * H + i_h) * K * V + o_k[:, None] * V + o_v[None, :], mask=m_kv, other=0.0
    )
    m_a = m_t[:, None] & (o_r[None, :] <= o_r[:, None])
    b_p = tl.load(aqk + (o_t[:, None] * H + i_h) * BT + o_r[None, :], mask=m_a, other=0.0)
    b_vn = tl.load(v_new + p_tv, mask=m_tv, other=0.0)
    b_o = tl.dot(b_q, b_s, input_precision=PREC) + tl.dot(b_p, b_vn, input_precision=PREC)
    tl.store(o + p_tv, b_o.to(o.dtype.element_ty), mask=m_tv)


def chunk_cumsum(x: torch.Tensor, plan: ChunkPlan, *, reverse: bool = False) -> torch.Tensor:
    """In-chunk (reverse) cumulative sum of packed `[TT, H, D]` along tokens, in fp32."""
    _, h, d = x.shape
    y = torch.empty(x.shape, dtype=torch.float32, device=x.device)
    grid = (plan.num_chunks, h)
    chunk_cumsum_kernel[grid](
        x, y, plan.cu_seqlens, plan.chunk_indices, H=h, D=d, BT=BT, BD=block_k(d), REVERSE=reverse
    )
    return y


class ForwardResult:
    """What the forward pass produces and the backward pass reuses (all packed, fp32)."""

    def __init__(self, **tensors: torch.Tensor | None) -> None:
        self.o: torch.Tensor = tensors["o"]
        self.final_state: torch.Tensor | None = tensors["final_state"]
        self.gc: torch.Tensor = tensors["gc"]  # Γ, (TT, H, K)
        self.akk: torch.Tensor = tensors["akk"]  # A, (TT, H, BT)
        self.aqk: torch.Tensor = tensors["aqk"]  # P, (TT, H, BT)
        self.x_inv: torch.Tensor = tensors["x_inv"]  # (I + L)⁻¹, (TT, H, BT)
        self.w: torch.Tensor = tensors["w"]  # (TT, H, K)
        self.hs: torch.Tensor = tensors["hs"]  # state entering each chunk, (NC, H, K, V)
        self.v_new: torch.Tensor = tensors["v_new"]  # V′, (TT, H, V)


def kda_chunk_forward(
    q: torch.Tensor,  # (TT, H, K)
    k: torch.Tensor,  # (TT, H, K)
    v: torch.Tensor,  # (TT, H, V)
    g: torch.Tensor,  # (TT, H, K)
    beta: torch.Tensor,  # (TT, H)
    scale: float,
    initial_state: torch.Tensor | None,  # (N, H, K, V)
    output_final_state: bool,
    plan: ChunkPlan,
) -> ForwardResult:
    """Launch the five forward kernels on packed, contiguous inputs."""
    tt, h, kd = q.shape
    vd = v.shape[-1]
    f32 = {"dtype": torch.float32, "device": q.device}
    bk, bv, prec = block_k(kd), block_v(vd), dot_precision(v.dtype)
    nc, nv = plan.num_chunks, triton.cdiv(vd, block_v(vd))
    cu, ci = plan.cu_seqlens, plan.chunk_indices
    gc = chunk_cumsum(g, plan)
    akk, aqk = torch.zeros(tt, h, BT, **f32), torch.zeros(tt, h, BT, **f32)
    intra_fwd_kernel[(nc * (BT // BC), h)](
        q, k, gc, akk, aqk, scale, cu, ci, H=h, K=kd, BT=BT, BC=BC, BK=bk, PREC=prec
    )
    x_inv, w, u = (
        torch.zeros(tt, h, BT, **f32),
        torch.empty(tt, h, kd, **f32),
        torch.empty_like(v, **f32),
    )
    wy_fwd_kernel[(nc, h)](
        k, v, beta, gc, akk, x_inv, w, u, cu, ci, H=h, K=kd, V=vd, BT=BT, BK=bk, BV=bv, PREC=prec
    )
    hs, v_new = torch.empty(nc, h, kd, vd, **f32), torch.empty(tt, h, vd, **f32)
    final = torch.empty(plan.num_seqs, h, kd, vd, **f32) if output_final_state else None
    state_fwd_kernel[(nv, plan.num_seqs * h)](
        k, gc, w, u, hs, v_new, initial_state, final, cu, plan.chunk_offsets,
        H=h, K=kd, V=vd, BT=BT, BK=bk, BV=bv,
        USE_H0=initial_state is not None, STORE_HT=output_final_state, PREC=prec,
    )  # fmt: skip
    o = torch.empty_like(v)
    output_fwd_kernel[(nc, nv, h)](
        q, gc, aqk, hs, v_new, o, scale, cu, ci, H=h, K=kd, V=vd, BT=BT, BK=bk, BV=bv, PREC=prec
    )
    return ForwardResult(
        o=o, final_state=final, gc=gc, akk=akk, aqk=aqk, x_inv=x_inv, w=w, hs=hs, v_new=v_new
    )
