"""Triton kernels for the chunkwise KDA backward pass, then their launcher.

Per chunk, with T = X Diag(β), X = (I + Diag(β) A)⁻¹, W = T (e^Γ ⊙ K), U = T V,
V′ = U − W S, O = (Q̃ ⊙ e^Γ) S + P V′ and S⁺ = e^{Γ_C} S + (K ⊙ e^{Γ_C−Γ})ᵀ V′:
1. `state_bwd`   reverse over chunks: dS⁺ per chunk, dV′ = Pᵀ dO + (K ⊙ e^{Γ_C−Γ}) dS⁺,
                 dS = e^{Γ_C} dS⁺ + (Q̃ ⊙ e^Γ)ᵀ dO − Wᵀ dV′; the last dS is d(initial state)
2. `chunk_bwd`   everything local to a chunk except the pair sums: dv, dβ, dA, dP and the
                 parts of dq, dk, dΓ that come from the state terms and the WY transform
3. `intra_bwd`   the pair sums' gradients (stable factorisation as in the forward pass)
4. reverse in-chunk cumsum of dΓ gives dg.
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
from kimmy_swarm.kernels.kda.triton_chunk_fwd import ForwardResult, chunk_cumsum

__all__ = ["kda_chunk_backward"]


@triton.jit
def state_bwd_kernel(
    q, k, gc, w, aqk, do, dht, dhs, dv_new, dh0, scale, cu_seqlens, chunk_offsets,
    H: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr, BK: tl.constexpr,
    BV: tl.constexpr, USE_DHT: tl.constexpr, STORE_DH0: tl.constexpr, PREC: tl.constexpr,
):  # fmt: skip
    i_v, i_nh = tl.program_id(0), tl.program_id(1)
    i_n, i_h = i_nh // H, i_nh % H
    bos = tl.load(cu_seqlens + i_n).to(tl.int64)
    eos = tl.load(cu_seqlens + i_n + 1).to(tl.int64)
    c0 = tl.load(chunk_offsets + i_n).to(tl.int64)
    nt = tl.cdiv(eos - bos, BT)
    o_r = tl.arange(0, BT)
    o_k = tl.arange(0, BK)
    o_v = i_v * BV + tl.arange(0, BV)
    m_kv = (o_k < K)[:, None] & (o_v < V)[None, :]
    p_kv = o_k[:, None] * V + o_v[None, :]
    b_ds = tl.zeros([BK, BV], dtype=tl.float32)
    if USE_DHT:
        b_ds += tl.load(dht + (i_n * H + i_h) * K * V + p_kv, mask=m_kv, other=0.0).to(tl.float32)
    for i_r in range(0, nt):
        i_t = nt - 1 - i_r
        start = bos + i_t * BT
        o_t = start + o_r
        m_t = o_t < eos
        m_tk = m_t[:, None] & (o_k < K)[None, :]
        m_tv = m_t[:, None] & (o_v < V)[None, :]
        p_tk = (o_t[:, None] * H + i_h) * K + o_k[None, :]
        p_tv = (o_t[:, None] * H + i_h) * V + o_v[None, :]
        tl.store(dhs + ((c0 + i_t) * H + i_h) * K * V + p_kv, b_ds, mask=m_kv)
        m_a = m_t[:, None] & (o_r[None, :] <= o_r[:, None])
        b_p = tl.load(aqk + (o_t[:, None] * H + i_h) * BT + o_r[None, :], mask=m_a, other=0.0)
        b_do = tl.load(do + p_tv, mask=m_tv, other=0.0).to(tl.float32)
        last = tl.minimum(start + BT, eos) - 1
        b_gl = tl.load(gc + (last * H + i_h) * K + o_k, mask=o_k < K, other=0.0)
        b_g = tl.load(gc + p_tk, mask=m_tk, other=0.0)
        b_k = tl.load(k + p_tk, mask=m_tk, other=0.0).to(tl.float32)
        b_kd = b_k * tl.exp(tl.where(m_tk, b_gl[None, :] - b_g, 0.0))
        b_dvn = tl.dot(tl.trans(b_p), b_do, input_precision=PREC)
        b_dvn += tl.dot(b_kd, b_ds, input_precision=PREC)
        tl.store(dv_new + p_tv, b_dvn, mask=m_tv)
        b_qe = tl.load(q + p_tk, mask=m_tk, other=0.0).to(tl.float32) * scale * tl.exp(b_g)
        b_w = tl.load(w + p_tk, mask=m_tk, other=0.0)
        b_ds = b_ds * tl.exp(b_gl)[:, None] + tl.dot(tl.trans(b_qe), b_do, input_precision=PREC)
        b_ds -= tl.dot(tl.trans(b_w), b_dvn, input_precision=PREC)
    if STORE_DH0:
        tl.store(dh0 + (i_n * H + i_h) * K * V + p_kv, b_ds, mask=m_kv)


@triton.jit
def chunk_bwd_values(
    v, v_new, hs, dhs, do, dv_new, dv, b_t, o_t, eos, i_c, i_h,
    H: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr, BK: tl.constexpr,
    BV: tl.constexpr, PREC: tl.constexpr,
):  # fmt: skip
    """Sums over V-slices: dP, dT (from U), d(Q̃E), dW, d(K e^{Γ_C−Γ}), the Γ_C term; stores dv."""
    o_k = tl.arange(0, BK)
    m_t = o_t < eos
    b_dp = tl.zeros([BT, BT], dtype=tl.float32)
    b_dta = tl.zeros([BT, BT], dtype=tl.float32)
    b_dqe = tl.zeros([BT, BK], dtype=tl.float32)
    b_dw = tl.zeros([BT, BK], dtype=tl.float32)
    b_dkd = tl.zeros([BT, BK], dtype=tl.float32)
    b_dgl = tl.zeros([BK], dtype=tl.float32)
    p_s = (i_c * H + i_h) * K * V + o_k[:, None] * V
    for i_v in range(0, tl.cdiv(V, BV)):
        o_v = i_v * BV + tl.arange(0, BV)
        m_tv = m_t[:, None] & (o_v < V)[None, :]
        m_kv = (o_k < K)[:, None] & (o_v < V)[None, :]
        p_tv = (o_t[:, None] * H + i_h) * V + o_v[None, :]
        b_vn = tl.load(v_new + p_tv, mask=m_tv, other=0.0)
        b_do = tl.load(do + p_tv, mask=m_tv, other=0.0).to(tl.float32)
        b_dvn = tl.load(dv_new + p_tv, mask=m_tv, other=0.0)
        b_v = tl.load(v + p_tv, mask=m_tv, other=0.0).to(tl.float32)
        b_s = tl.load(hs + p_s + o_v[None, :], mask=m_kv, other=0.0)  # state entering
        b_ds = tl.load(dhs + p_s + o_v[None, :], mask=m_kv, other=0.0)  # grad of state leaving
        b_dp += tl.dot(b_do, tl.trans(b_vn), input_precision=PREC)
        b_dqe += tl.dot(b_do, tl.trans(b_s), input_precision=PREC)
        b_dw -= tl.dot(b_dvn, tl.trans(b_s), input_precision=PREC)
        b_dkd += tl.dot(b_vn, tl.trans(b_ds), input_precision=PREC)
        b_dgl += tl.sum(b_s * b_ds, 1)
        b_dta += tl.dot(b_dvn, tl.trans(b_v), input_precision=PREC)
        tl.store(dv + p_tv, tl.dot(tl.trans(b_t), b_dvn, input_precision=PREC), mask=m_tv)
    return b_dp, b_dta, b_dqe, b_dw, b_dkd, b_dgl


@triton.jit
def wy_bwd(
    akk, dbeta, dakk, b_x, b_b, b_dt, o_t, eos, i_h,
    H: tl.constexpr, BT: tl.constexpr, PREC: tl.constexpr,
):  # fmt: skip
    """From dT: dβ (through T = X Diag(β) and L = Diag(β) A) and dA, both stored."""
    o_r = tl.arange(0, BT)
    m_t = o_t < eos
    m_low = m_t[:, None] & (o_r[None, :] < o_r[:, None])
    p_a = (o_t[:, None] * H + i_h) * BT + o_r[None, :]
    b_db = tl.sum(b_x * b_dt, 0)  # from T = X Diag(β), indexed by column
    b_dl = tl.dot(tl.trans(b_x), b_dt * b_b[None, :], input_precision=PREC)  # Xᵀ dX
    b_dl = tl.where(m_low, -tl.dot(b_dl, tl.trans(b_x), input_precision=PREC), 0.0)  # dL
    b_a = tl.load(akk + p_a, mask=m_low, other=0.0)
    b_db += tl.sum(b_dl * b_a, 1)  # from L = Diag(β) A, indexed by row: both by token
    tl.store(dbeta + o_t * H + i_h, b_db, mask=m_t)
    tl.store(dakk + p_a, b_dl * b_b[:, None], mask=m_t[:, None])


@triton.jit
def chunk_bwd_kernel(
    q, k, v, beta, gc, akk, x_inv, v_new, hs, dhs, do, dv_new,
    dq, dk, dv, dgc, dbeta, dakk, daqk, scale, cu_seqlens, chunk_indices,
    H: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr, BK: tl.constexpr,
    BV: tl.constexpr, PREC: tl.constexpr,
):  # fmt: skip
    """One chunk: dv, dβ, dA, dP and the state/WY parts of dq̃, dk, dΓ (intra_bwd adds the rest)."""
    i_c, i_h = tl.program_id(0), tl.program_id(1)
    _, start, eos = chunk_bounds(cu_seqlens, chunk_indices, i_c, BT)
    o_t = start + tl.arange(0, BT)
    o_r = tl.arange(0, BT)
    o_k = tl.arange(0, BK)
    m_t = o_t < eos
    m_tk = m_t[:, None] & (o_k < K)[None, :]
    p_tk = (o_t[:, None] * H + i_h) * K + o_k[None, :]
    p_a = (o_t[:, None] * H + i_h) * BT + o_r[None, :]
    b_b = tl.load(beta + o_t * H + i_h, mask=m_t, other=0.0).to(tl.float32)
    b_x = tl.load(x_inv + p_a, mask=m_t[:, None] & (o_r[None, :] <= o_r[:, None]), other=0.0)
    b_t = b_x * b_b[None, :]  # T
    b_dp, b_dta, b_dqe, b_dw, b_dkd, b_dgl = chunk_bwd_values(
        v, v_new, hs, dhs, do, dv_new, dv, b_t, o_t, eos, i_c, i_h, H, K, V, BT, BK, BV, PREC
    )
    last = tl.minimum(start + BT, eos) - 1
    b_gl = tl.load(gc + (last * H + i_h) * K + o_k, mask=o_k < K, other=0.0)
    b_g = tl.load(gc + p_tk, mask=m_tk, other=0.0)
    b_q = tl.load(q + p_tk, mask=m_tk, other=0.0).to(tl.float32) * scale
    b_k = tl.load(k + p_tk, mask=m_tk, other=0.0).to(tl.float32)
    b_e = tl.exp(tl.where(m_tk, b_g, 0.0))
    b_kdf = tl.exp(tl.where(m_tk, b_gl[None, :] - b_g, 0.0))
    b_ek = b_e * b_k
    b_dt = b_dta + tl.dot(b_dw, tl.trans(b_ek), input_precision=PREC)
    b_dek = tl.dot(tl.trans(b_t), b_dw, input_precision=PREC)
    b_dkdk = b_dkd * b_kdf * b_k
    b_dg = b_dqe * b_e * b_q - b_dkdk + b_dek * b_ek
    b_dg += tl.where(
        (o_t == last)[:, None], (tl.sum(b_dkdk, 0) + tl.exp(b_gl) * b_dgl)[None, :], 0.0
    )
    tl.store(dq + p_tk, b_dqe * b_e, mask=m_tk)  # w.r.t. scaled q; intra_bwd finishes it
    tl.store(dk + p_tk, b_dkd * b_kdf + b_dek * b_e, mask=m_tk)
    tl.store(dgc + p_tk, b_dg, mask=m_tk)
    wy_bwd(akk, dbeta, dakk, b_x, b_b, b_dt, o_t, eos, i_h, H, BT, PREC)
    b_dp = tl.where(m_t[:, None] & (o_r[None, :] <= o_r[:, None]), b_dp, 0.0)
    tl.store(daqk + p_a, b_dp, mask=m_t[:, None])


@triton.jit
def intra_bwd_left(
    k, gc, dakk, daqk, g_first, start, row0, eos, i_s, i_h,
    H: tl.constexpr, K: tl.constexpr, BT: tl.constexpr, BC: tl.constexpr, BK: tl.constexpr,
    PREC: tl.constexpr,
):  # fmt: skip
    """Σ_{j left of the block} dM_ij k_j e^{Γ_first − Γ_j} for M = P and M = A (rows i)."""
    o_c = tl.arange(0, BC)
    o_k = tl.arange(0, BK)
    m_i = row0 + o_c < eos
    m_jk = (o_c >= 0)[:, None] & (o_k < K)[None, :]
    b_dq = tl.zeros([BC, BK], dtype=tl.float32)
    b_dk = tl.zeros([BC, BK], dtype=tl.float32)
    for j_s in range(0, i_s):
        p_jk = ((start + j_s * BC + o_c)[:, None] * H + i_h) * K + o_k[None, :]
        b_kj = tl.load(k + p_jk, mask=m_jk, other=0.0).to(tl.float32)
        b_kj = b_kj * tl.exp(g_first[None, :] - tl.load(gc + p_jk, mask=m_jk, other=0.0))
        p_a = ((row0 + o_c)[:, None] * H + i_h) * BT + j_s * BC + o_c[None, :]
        b_dp = tl.load(daqk + p_a, mask=m_i[:, None], other=0.0)
        b_da = tl.load(dakk + p_a, mask=m_i[:, None], other=0.0)
        b_dq += tl.dot(b_dp, b_kj, input_precision=PREC)
        b_dk += tl.dot(b_da, b_kj, input_precision=PREC)
    return b_dq, b_dk


@triton.jit
def intra_bwd_below(
    q, k, gc, dakk, daqk, g_last, scale, start, eos, i_s, i_h,
    H: tl.constexpr, K: tl.constexpr, BT: tl.constexpr, BC: tl.constexpr, BK: tl.constexpr,
    PREC: tl.constexpr,
):  # fmt: skip
    """Σ_{i below the block} dP_ij q̃_i e^{Γ_i − Γ_last} + dA_ij k_i e^{Γ_i − Γ_last} (cols j)."""
    o_c = tl.arange(0, BC)
    o_k = tl.arange(0, BK)
    b_dk = tl.zeros([BC, BK], dtype=tl.float32)
    for j_s in range(i_s + 1, BT // BC):
        o_j = start + j_s * BC + o_c
        m_j = o_j < eos
        m_jk = m_j[:, None] & (o_k < K)[None, :]
        p_jk = (o_j[:, None] * H + i_h) * K + o_k[None, :]
        b_g = tl.load(gc + p_jk, mask=m_jk, other=0.0)
        b_f = tl.exp(tl.where(m_jk, b_g - g_last[None, :], 0.0))
        b_qj = tl.load(q + p_jk, mask=m_jk, other=0.0).to(tl.float32) * scale * b_f
        b_kj = tl.load(k + p_jk, mask=m_jk, other=0.0).to(tl.float32) * b_f
        p_a = (o_j[:, None] * H + i_h) * BT + i_s * BC + o_c[None, :]
        b_dp = tl.trans(tl.load(daqk + p_a, mask=m_j[:, None], other=0.0))
        b_da = tl.trans(tl.load(dakk + p_a, mask=m_j[:, None], other=0.0))
        b_dk += tl.dot(b_dp, b_qj, input_precision=PREC) + tl.dot(b_da, b_kj, input_precision=PREC)
    return b_dk


@triton.jit
def intra_bwd_diag(
    q, k, gc, dakk, daqk, b_g, scale, row0, eos, i_s, i_h, b_dq, b_dkr, b_dkc,
    H: tl.constexpr, K: tl.constexpr, BT: tl.constexpr, BC: tl.constexpr, BK: tl.constexpr,
):  # fmt: skip
    """Add the diagonal block's terms: column m for the row side, row m for the column side."""
    o_c = tl.arange(0, BC)
    o_k = tl.arange(0, BK)
    m_i = row0 + o_c < eos
    m_ik = m_i[:, None] & (o_k < K)[None, :]
    for m in range(0, BC):
        m_m = (o_k < K) & (row0 + m + 0 * o_k < eos)  # vector mask (interpreter)
        p_m = ((row0 + m) * H + i_h) * K + o_k
        b_km = tl.load(k + p_m, mask=m_m, other=0.0).to(tl.float32)
        b_qm = tl.load(q + p_m, mask=m_m, other=0.0).to(tl.float32) * scale
        b_gm = tl.load(gc + p_m, mask=m_m, other=0.0)
        p_col = ((row0 + o_c) * H + i_h) * BT + i_s * BC + m  # M[i, m], i in the block
        p_row = ((row0 + m) * H + i_h) * BT + i_s * BC + o_c  # M[m, j], j in the block
        m_col, m_row = m_i & (o_c >= m), m_i & (o_c <= m) & (row0 + m + 0 * o_c < eos)
        b_dec = tl.exp(tl.where(m_col[:, None] & m_ik, b_g - b_gm[None, :], 0.0))  # i ≥ m
        b_dq += tl.load(daqk + p_col, mask=m_col, other=0.0)[:, None] * b_km[None, :] * b_dec
        b_dkr += tl.load(dakk + p_col, mask=m_col, other=0.0)[:, None] * b_km[None, :] * b_dec
        b_dec = tl.exp(tl.where(m_row[:, None] & m_ik, b_gm[None, :] - b_g, 0.0))  # m ≥ j
        b_dkc += tl.load(daqk + p_row, mask=m_row, other=0.0)[:, None] * b_qm[None, :] * b_dec
        b_dkc += tl.load(dakk + p_row, mask=m_row, other=0.0)[:, None] * b_km[None, :] * b_dec
    return b_dq, b_dkr, b_dkc


@triton.jit
def intra_bwd_kernel(
    q, k, gc, dakk, daqk, dq, dk, dgc, scale, cu_seqlens, chunk_indices,
    H: tl.constexpr, K: tl.constexpr, BT: tl.constexpr, BC: tl.constexpr, BK: tl.constexpr,
    PREC: tl.constexpr,
):  # fmt: skip
    """Gradients of A = Σ k_i k_j e^{Γ_i−Γ_j} and P = Σ q̃_i k_j e^{Γ_i−Γ_j} for sub-chunk i_s.

    Rows of the sub-chunk receive the "row side" (as i) and the "column side" (as j); then
    dΓ = q̃ ⊙ dq̃ + k ⊙ dk_row − k ⊙ dk_col, since Γ_i enters with + and Γ_j with −.
    """
    i_cs, i_h = tl.program_id(0), tl.program_id(1)
    i_c, i_s = i_cs // (BT // BC), i_cs % (BT // BC)
    _, start, eos = chunk_bounds(cu_seqlens, chunk_indices, i_c, BT)
    row0 = start + i_s * BC
    if row0 < eos:
        o_k = tl.arange(0, BK)
        o_i = row0 + tl.arange(0, BC)
        m_ik = (o_i < eos)[:, None] & (o_k < K)[None, :]
        p_ik = (o_i[:, None] * H + i_h) * K + o_k[None, :]
        b_q = tl.load(q + p_ik, mask=m_ik, other=0.0).to(tl.float32) * scale
        b_k = tl.load(k + p_ik, mask=m_ik, other=0.0).to(tl.float32)
        b_g = tl.load(gc + p_ik, mask=m_ik, other=0.0)
        g_first = tl.load(gc + (row0 * H + i_h) * K + o_k, mask=o_k < K, other=0.0)
        last = tl.minimum(row0 + BC, eos) - 1
        g_last = tl.load(gc + (last * H + i_h) * K + o_k, mask=o_k < K, other=0.0)
        b_dq, b_dkr = intra_bwd_left(
            k, gc, dakk, daqk, g_first, start, row0, eos, i_s, i_h, H, K, BT, BC, BK, PREC
        )  # row side: dq̃ (from P) and dk (from A)
        b_e = tl.exp(tl.where(m_ik, b_g - g_first[None, :], 0.0))
        b_dq, b_dkr = b_dq * b_e, b_dkr * b_e
        b_dkc = intra_bwd_below(
            q, k, gc, dakk, daqk, g_last, scale, start, eos, i_s, i_h, H, K, BT, BC, BK, PREC
        )  # column side: dk (from P and A)
        b_dkc = b_dkc * tl.exp(tl.where(m_ik, g_last[None, :] - b_g, 0.0))
        b_dq, b_dkr, b_dkc = intra_bwd_diag(
            q, k, gc, dakk, daqk, b_g, scale, row0, eos, i_s, i_h, b_dq, b_dkr, b_dkc,
            H, K, BT, BC, BK,
        )  # fmt: skip
        b_dgi = b_q * b_dq + b_k * (b_dkr - b_dkc)
        tl.store(dgc + p_ik, tl.load(dgc + p_ik, mask=m_ik, other=0.0) + b_dgi, mask=m_ik)
        b_dq_all = tl.load(dq + p_ik, mask=m_ik, other=0.0) + b_dq
        tl.store(dq + p_ik, b_dq_all * scale, mask=m_ik)
        tl.store(dk + p_ik, tl.load(dk + p_ik, mask=m_ik, other=0.0) + b_dkr + b_dkc, mask=m_ik)


class BackwardResult:
    """Gradients in fp32, packed like the inputs."""

    def __init__(self, **tensors: torch.Tensor | None) -> None:
        self.dq: torch.Tensor = tensors["dq"]
        self.dk: torch.Tensor = tensors["dk"]
        self.dv: torch.Tensor = tensors["dv"]
        self.dg: torch.Tensor = tensors["dg"]
        self.dbeta: torch.Tensor = tensors["dbeta"]
        self.dh0: torch.Tensor | None = tensors["dh0"]


def kda_chunk_backward(
    q: torch.Tensor,  # (TT, H, K)
    k: torch.Tensor,  # (TT, H, K)
    v: torch.Tensor,  # (TT, H, V)
    beta: torch.Tensor,  # (TT, H)
    scale: float,
    fwd: ForwardResult,
    do: torch.Tensor,  # (TT, H, V)
    dht: torch.Tensor | None,  # (N, H, K, V)
    need_dh0: bool,
    plan: ChunkPlan,
) -> BackwardResult:
    """Launch the backward kernels; returns fp32 gradients of every input."""
    tt, h, kd = q.shape
    vd = v.shape[-1]
    f32 = {"dtype": torch.float32, "device": q.device}
    bk, bv, prec = block_k(kd), block_v(vd), dot_precision(v.dtype)
    nc, nv = plan.num_chunks, triton.cdiv(vd, bv)
    cu, ci = plan.cu_seqlens, plan.chunk_indices
    dhs, dv_new = torch.empty(nc, h, kd, vd, **f32), torch.empty(tt, h, vd, **f32)
    dh0 = torch.empty(plan.num_seqs, h, kd, vd, **f32) if need_dh0 else None
    state_bwd_kernel[(nv, plan.num_seqs * h)](
        q, k, fwd.gc, fwd.w, fwd.aqk, do, dht, dhs, dv_new, dh0, scale, cu, plan.chunk_offsets,
        H=h, K=kd, V=vd, BT=BT, BK=bk, BV=bv,
        USE_DHT=dht is not None, STORE_DH0=need_dh0, PREC=prec,
    )  # fmt: skip
    dq, dk, dgc = (torch.empty(tt, h, kd, **f32) for _ in range(3))
    dv, dbeta = torch.empty(tt, h, vd, **f32), torch.empty(tt, h, **f32)
    dakk, daqk = torch.zeros(tt, h, BT, **f32), torch.zeros(tt, h, BT, **f32)
    chunk_bwd_kernel[(nc, h)](
        q, k, v, beta, fwd.gc, fwd.akk, fwd.x_inv, fwd.v_new, fwd.hs, dhs, do, dv_new,
        dq, dk, dv, dgc, dbeta, dakk, daqk, scale, cu, ci,
        H=h, K=kd, V=vd, BT=BT, BK=bk, BV=bv, PREC=prec,
    )  # fmt: skip
    intra_bwd_kernel[(nc * (BT // BC), h)](
        q, k, fwd.gc, dakk, daqk, dq, dk, dgc, scale, cu, ci,
        H=h, K=kd, BT=BT, BC=BC, BK=bk, PREC=prec,
    )  # fmt: skip
    dg = chunk_cumsum(dgc, plan, reverse=True)
    return BackwardResult(dq=dq, dk=dk, dv=dv, dg=dg, dbeta=dbeta, dh0=dh0)
