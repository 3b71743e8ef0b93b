"""Chunkwise Kimi Delta Attention in plain PyTorch (chunk 64); backward through autograd.

Within a chunk, with Γ the in-chunk cumulative sum of g (log decay) and E = exp(Γ):

1. A_ij = Σ_d k_i[d] k_j[d] e^{Γ_i[d]−Γ_j[d]} for i > j; L = Diag(β) A
2. T = (I + L)^{-1} Diag(β)   (forward substitution, the "UT transform")
3. W = T (E ⊙ K), U = T V     (the WY representation of the chunk's delta updates)
4. across chunks, with S the state entering the chunk:
   V′ = U − W S;  O = (Q ⊙ E) S + tril(P) V′,  P_ij = Σ_d q_i[d] k_j[d] e^{Γ_i[d]−Γ_j[d]}
   S ← Diag(e^{Γ_C}) S + (e^{Γ_C − Γ} ⊙ K)ᵀ V′

The pair sums in 1 and 4 never form e^{−Γ} (which overflows after long decays): blocks of
16 rows below the diagonal factor the decay at a reference row between the two blocks, so
both factors are ≤ 1; a 16×16 diagonal block is factored at its middle row when its decay
spread is bounded (nearly always), and summed pair by pair otherwise.
Requires g ≤ 0 (every KDA gate is), as the factorisation relies on Γ decreasing.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from kimmy_swarm.kernels.kda._checks import check_inputs, l2norm, seq_bounds
from kimmy_swarm.kernels.kda.naive import compute_dtype

__all__ = ["CHUNK_SIZE", "torch_chunk_kda"]

CHUNK_SIZE = 64
SUB_CHUNK = 16
SEGMENT = 16 * CHUNK_SIZE  # tokens processed at once; the state carries across segments
SAFE_SPAN = 60.0  # largest |Γ − Γ_mid| factored into GEMM operands (e^60 ≈ 1e26 < fp32 max)


def _pad_time(x: torch.Tensor, t_pad: int) -> torch.Tensor:
    """Zero-pad the time axis (dim 1) to t_pad. Zero k, v, g and β leave the state unchanged."""
    extra = t_pad - x.shape[1]
    if extra == 0:
        return x
    return F.pad(x, (0, 0) * (x.ndim - 2) + (0, extra))


def _diag_explicit(
    a4: torch.Tensor, b4: torch.Tensor, g4: torch.Tensor, strict: bool
) -> torch.Tensor:
    """Σ_d a_i b_j e^{Γ_i−Γ_j} for (blocks, 16, K) inputs, summed pair by pair: any decay."""
    keep = torch.ones(SUB_CHUNK, SUB_CHUNK, dtype=torch.bool, device=a4.device)
    keep = keep.tril(-1 if strict else 0)[..., None]  # (16, 16, 1)
    diff = g4[..., :, None, :] - g4[..., None, :, :]  # (blocks, 16, 16, K)
    decay = diff.masked_fill(~keep, float("-inf")).exp()  # upper triangle → 0, no overflow
    return (a4[..., :, None, :] * b4[..., None, :, :] * decay).sum(-1)


def _diag_blocks(
    q4: torch.Tensor, k4: torch.Tensor, g4: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """The 16×16 diagonal blocks of A (k·k, strict) and P (q·k, with diagonal).

    Inputs `(..., n, 16, K)`; outputs `(..., n, 16, 16)`. Where every |Γ_i − Γ_mid| inside
    a block is ≤ SAFE_SPAN (nearly always; the safe gate's −5 bound guarantees it),
    e^{Γ_i−Γ_j} is factored at the block's middle row into GEMM operands of magnitude
    ≤ e^{SAFE_SPAN}; the other blocks are summed pair by pair.
    """
    shape = q4.shape
    q4, k4, g4 = (x.reshape(-1, SUB_CHUNK, shape[-1]) for x in (q4, k4, g4))  # (blocks, 16, K)
    rel = g4 - g4[:, SUB_CHUNK // 2 : SUB_CHUNK // 2 + 1, :]  # Γ − Γ_mid
    lo, hi = rel.flatten(1).aminmax(dim=1)  # one pass; (blocks,) each
    wide = (torch.maximum(hi, -lo) > SAFE_SPAN).nonzero().squeeze(-1)  # (wide blocks,)
    if wide.numel():
        rel = rel.clamp(-SAFE_SPAN, SAFE_SPAN)  # only changes the wide blocks, replaced below
    up = rel.exp()  # (blocks, 16, K), within [e^−60, e^60]
    # k e^{Γ_mid − Γ} as a product, not k / up: the backward of a division forms 1 / up²,
    # which overflows fp32 past |Γ − Γ_mid| ≈ 44 and turns the gate's gradient into NaN
    k_down = k4 * (-rel).exp()
    a_d = ((k4 * up) @ k_down.mT).tril(-1)  # (blocks, 16, 16)
    p_d = ((q4 * up) @ k_down.mT).tril()
    if wide.numel():
        a_d = a_d.index_put((wide,), _diag_explicit(k4[wide], k4[wide], g4[wide], True))
        p_d = p_d.index_put((wide,), _diag_explicit(q4[wide], k4[wide], g4[wide], False))
    out_shape = (*shape[:-2], SUB_CHUNK, SUB_CHUNK)
    return a_d.reshape(out_shape), p_d.reshape(out_shape)


def _intra(q: torch.Tensor, k: torch.Tensor, gc: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A_ij = Σ_d k_i k_j e^{Γ_i−Γ_j} (j < i) and P_ij = Σ_d q_i k_j e^{Γ_i−Γ_j} (j ≤ i).

    Inputs `(..., C, K)`, outputs `(..., C, C)`. Rows of 16-row block I against the columns
    before it factor the decay at Γ_first(I): e^{Γ_i − Γ_first(I)} · e^{Γ_first(I) − Γ_j}, both
    ≤ 1 when g ≤ 0, so nothing overflows however long the decay.
    """
    *lead, c, kd = k.shape
    n = c // SUB_CHUNK
    q4, k4, g4 = (x.reshape(*lead, n, SUB_CHUNK, kd) for x in (q, k, gc))  # (..., n, 16, K)
    a_d, p_d = _diag_blocks(q4, k4, g4)  # (..., n, 16, 16)
    a_rows, p_rows = [a_d[..., 0, :, :]], [p_d[..., 0, :, :]]
    for i in range(1, n):
        lo, hi = i * SUB_CHUNK, (i + 1) * SUB_CHUNK
        ref = gc[..., lo : lo + 1, :]  # Γ_first(I), (..., 1, K)
        fac = (gc[..., lo:hi, :] - ref).exp()  # (..., 16, K)
        k_b = k[..., :lo, :] * (ref - gc[..., :lo, :]).exp()  # (..., lo, K)
        a_rows.append(torch.cat([(k[..., lo:hi, :] * fac) @ k_b.mT, a_d[..., i, :, :]], dim=-1))
        p_rows.append(torch.cat([(q[..., lo:hi, :] * fac) @ k_b.mT, p_d[..., i, :, :]], dim=-1))
    a = torch.cat([F.pad(r, (0, c - r.shape[-1])) for r in a_rows], dim=-2)
    p = torch.cat([F.pad(r, (0, c - r.shape[-1])) for r in p_rows], dim=-2)
    return a, p


def _unit_lower_inverse(lower: torch.Tensor) -> torch.Tensor:
    """(I + L)^{-1} for strictly lower-triangular L `(..., C, C)`.

    One batched unit-triangular solve against I (LAPACK/MKL trsm; its diagonal is taken as
    1, so L's zero diagonal is never read); differentiable through autograd.
    """
    eye = torch.eye(lower.shape[-1], dtype=lower.dtype, device=lower.device)
    return torch.linalg.solve_triangular(
        lower, eye.expand_as(lower), upper=False, unitriangular=True
    )


def _to_chunks(x: torch.Tensor, c: int) -> torch.Tensor:
    """(B, T, H, ...) with T a multiple of c → (NT, B·H, c, ...): chunk-major, one copy."""
    b, t, h = x.shape[:3]
    x = x.reshape(b, t // c, c, h, *x.shape[3:]).movedim(3, 2).movedim(1, 0)
    return x.reshape(t // c, b * h, c, *x.shape[4:]).contiguous()  # (NT, B·H, c, ...)


def _recurrence(
    w: torch.Tensor,  # (NT, BH, C, K)
    u: torch.Tensor,  # (NT, BH, C, V)
    k_dec: torch.Tensor,  # (NT, BH, K, C)
    decay: torch.Tensor,  # (NT, BH, K, 1)
    state: torch.Tensor,  # (BH, K, V)
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The sequential part, two GEMMs per chunk: V′ = U − W S, S ← Diag(e^{Γ_C}) S + K̃ᵀ V′.

    Returns V′ `(NT, BH, C, V)`, the state entering each chunk `(NT, BH, K, V)` and the final
    state; the outputs are formed from them afterwards in one batched GEMM.
    """
    v_new, states = [], []
    for i in range(w.shape[0]):
        states.append(state)
        v_i = torch.baddbmm(u[i], w[i], state, alpha=-1.0)  # V′ = U − W S, (BH, C, V)
        state = torch.baddbmm(decay[i] * state, k_dec[i], v_i)  # (BH, K, V)
        v_new.append(v_i)
    return torch.stack(v_new), torch.stack(states), state


def _chunk_forward(
    q: torch.Tensor,  # (B, T, H, K), scaled
    k: torch.Tensor,  # (B, T, H, K)
    v: torch.Tensor,  # (B, T, H, V)
    g: torch.Tensor,  # (B, T, H, K)
    beta: torch.Tensor,  # (B, T, H)
    state: torch.Tensor,  # (B, H, K, V)
) -> tuple[torch.Tensor, torch.Tensor]:
    b, t, h = q.shape[:3]
    c = CHUNK_SIZE
    t_pad = -(-t // c) * c
    q, k, v, g = (_to_chunks(_pad_time(x, t_pad), c) for x in (q, k, v, g))  # (NT, BH, C, ·)
    beta = _to_chunks(_pad_time(beta, t_pad), c)  # (NT, BH, C)
    gc = g.cumsum(-2)  # Γ, (NT, BH, C, K)
    a, p = _intra(q, k, gc)  # (NT, BH, C, C)
    tm = _unit_lower_inverse(beta[..., :, None] * a) * beta[..., None, :]  # T = (I+L)⁻¹ Diag(β)
    e = gc.exp()  # (NT, BH, C, K)
    w = tm @ (e * k)  # (NT, BH, C, K)
    u = tm @ v  # (NT, BH, C, V)
    g_last = gc[..., -1:, :]  # (NT, BH, 1, K)
    k_dec = (k * (g_last - gc).exp()).mT  # (NT, BH, K, C)
    decay = g_last.exp().mT  # (NT, BH, K, 1)
    kd, vd = k.shape[-1], v.shape[-1]
    v_new, states, final = _recurrence(w, u, k_dec, decay, state.reshape(b * h, kd, vd))
    o = (q * e) @ states + p @ v_new  # O = (Q ⊙ E) S + P V′, (NT, BH, C, V)
    o = o.reshape(t_pad // c, b, h, c, vd).movedim(0, 1).movedim(2, 3)  # (B, NT, C, H, V)
    return o.reshape(b, t_pad, h, vd)[:, :t], final.reshape(b, h, kd, vd)


def _segmented_forward(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    state: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """`_chunk_forward` over segments of SEGMENT tokens, carrying the state between them.

    Exact (chunks never cross a segment), and it keeps every temporary small: on CPU that
    stays in cache and avoids the page faults of fresh large allocations.
    """
    t = q.shape[1]
    if t <= SEGMENT:
        return _chunk_forward(q, k, v, g, beta, state)
    outs = []
    for s in range(0, t, SEGMENT):
        seg = slice(s, min(s + SEGMENT, t))
        o, state = _chunk_forward(q[:, seg], k[:, seg], v[:, seg], g[:, seg], beta[:, seg], state)
        outs.append(o)
    return torch.cat(outs, dim=1), state


def _pack_to_batch(x: torch.Tensor, bounds: list[tuple[int, int]], t_max: int) -> torch.Tensor:
    """(1, T_total, H, ...) packed → (N, t_max, H, ...), each sequence zero-padded at its end."""
    return torch.stack([_pad_time(x[:, s:e], t_max)[0] for s, e in bounds])


def torch_chunk_kda(
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
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Kimi Delta Attention, chunkwise (chunk 64) in PyTorch; differentiable through autograd.

    Args:
        q: queries `[B, T, H, K]`.
        k: keys `[B, T, H, K]`.
        v: values `[B, T, H, V]`.
        g: log-space per-channel decay `[B, T, H, K]` (≤ 0).
        beta: delta-rule write strength `[B, T, H]`.
        scale: query scale; default `K ** -0.5`.
        initial_state: `[N, H, K, V]` state to start from.
        output_final_state: also return the final state `[N, H, K, V]` (fp32).
        use_qk_l2norm: L2-normalize q and k per head (eps 1e-6) first.
        cu_seqlens: `[N + 1]` offsets of packed sequences along T (then B must be 1).

    Returns:
        `(o [B, T, H, V] in v's dtype, final state or None)` — equal to `naive_kda`.

    Example:
        >>> q = k = torch.nn.functional.normalize(torch.randn(1, 100, 2, 32), dim=-1)
        >>> o, _ = torch_chunk_kda(q, k, torch.randn(1, 100, 2, 32), -torch.rand(1, 100, 2, 32),
        ...                        torch.rand(1, 100, 2))
        >>> o.shape
        torch.Size([1, 100, 2, 32])
    """
    shp = check_inputs(q, k, v, g, beta, initial_state, cu_seqlens)
    dt = compute_dtype(v)
    qf, kf, vf, gf, bf = (x.to(dt) for x in (q, k, v, g, beta))
    if use_qk_l2norm:
        qf, kf = l2norm(qf), l2norm(kf)
    qf = qf * (shp.K**-0.5 if scale is None else scale)
    if initial_state is None:
        state = qf.new_zeros(shp.N, shp.H, shp.K, shp.V)
    else:
        state = initial_state.to(dt)
    if cu_seqlens is None:
        o, final = _segmented_forward(qf, kf, vf, gf, bf, state)
    else:
        bounds = seq_bounds(shp.T, cu_seqlens)
        t_max = max(e - s for s, e in bounds)
        packed = (_pack_to_batch(x, bounds, t_max) for x in (qf, kf, vf, gf, bf))
        o_pad, final = _segmented_forward(*packed, state)  # (N, t_max, H, V)
        o = torch.cat([o_pad[n, : e - s] for n, (s, e) in enumerate(bounds)])[None]
    return o.to(v.dtype), (final if output_final_state else None)
