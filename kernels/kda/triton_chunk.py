"""Chunkwise KDA on Triton: the autograd Function over the forward/backward launchers, and
the public `triton_chunk_kda` (training and prefill). Layout `[B, T, H, D]`."""

from __future__ import annotations

from typing import Any

import torch

from kimmy_swarm.kernels.kda._checks import KDAInputError, check_inputs, l2norm
from kimmy_swarm.kernels.kda._triton_common import ChunkPlan, plan_chunks
from kimmy_swarm.kernels.kda.triton_chunk_bwd import kda_chunk_backward
from kimmy_swarm.kernels.kda.triton_chunk_fwd import ForwardResult, kda_chunk_forward

__all__ = ["MAX_K", "KDAChunkFunction", "triton_chunk_kda"]

MAX_K = 256
_SAVED = ("gc", "akk", "aqk", "x_inv", "w", "hs", "v_new")


def _pack(x: torch.Tensor) -> torch.Tensor:
    """(B, T, H, ...) → contiguous (B·T, H, ...)."""
    return x.reshape(x.shape[0] * x.shape[1], *x.shape[2:]).contiguous()


class KDAChunkFunction(torch.autograd.Function):
    """o, final_state = KDA(q, k, v, g, β; S₀) with Triton forward and backward kernels."""

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: Any,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        g: torch.Tensor,
        beta: torch.Tensor,
        scale: float,
        initial_state: torch.Tensor | None,
        output_final_state: bool,
        cu_seqlens: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        plan = plan_chunks(cu_seqlens)
        qf, kf, vf, gf, bf = (_pack(x) for x in (q, k, v, g, beta))
        h0 = None if initial_state is None else initial_state.contiguous()
        fwd = kda_chunk_forward(qf, kf, vf, gf, bf, scale, h0, output_final_state, plan)
        ctx.save_for_backward(qf, kf, vf, bf, *(getattr(fwd, name) for name in _SAVED))
        ctx.plan, ctx.scale = plan, scale
        ctx.shapes = (q.shape, v.shape)
        ctx.dtypes = (q.dtype, k.dtype, v.dtype, g.dtype, beta.dtype)
        ctx.h0_dtype = None if initial_state is None else initial_state.dtype
        return fwd.o.view(v.shape), fwd.final_state

    @staticmethod
    def backward(ctx: Any, do: torch.Tensor, dht: torch.Tensor | None) -> tuple[Any, ...]:
        qf, kf, vf, bf, *saved = ctx.saved_tensors
        fwd = ForwardResult(o=None, final_state=None, **dict(zip(_SAVED, saved, strict=True)))
        plan: ChunkPlan = ctx.plan
        dht_c = None if dht is None else dht.contiguous()
        grads = kda_chunk_backward(
            qf, kf, vf, bf, ctx.scale, fwd, _pack(do), dht_c, ctx.h0_dtype is not None, plan
        )
        q_shape, v_shape = ctx.shapes
        dq_t, dk_t, dv_t, dg_t, db_t = ctx.dtypes
        dh0 = None if grads.dh0 is None else grads.dh0.to(ctx.h0_dtype)
        return (
            grads.dq.view(q_shape).to(dq_t),
            grads.dk.view(q_shape).to(dk_t),
            grads.dv.view(v_shape).to(dv_t),
            grads.dg.view(q_shape).to(dg_t),
            grads.dbeta.view(q_shape[:3]).to(db_t),
            None,
            dh0,
            None,
            None,
        )


def triton_chunk_kda(
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
    """Kimi Delta Attention with the Triton chunk kernels (differentiable; CUDA, or the CPU
    interpreter with TRITON_INTERPRET=1).

    Args:
        q: queries `[B, T, H, K]`, K ≤ 256.
        k: keys `[B, T, H, K]`.
        v: values `[B, T, H, V]`.
        g: log-space per-channel decay `[B, T, H, K]` (≤ 0).
        beta: delta-rule write strength `[B, T, H]`.
        scale: query scale; default `K ** -0.5`.
        initial_state: `[N, H, K, V]`.
        output_final_state: also return the final state `[N, H, K, V]` (fp32).
        use_qk_l2norm: L2-normalize q and k per head (eps 1e-6) first.
        cu_seqlens: `[N + 1]` offsets of packed sequences (then B must be 1).

    Returns:
        `(o [B, T, H, V] in v's dtype, final state or None)`.

    Example:
        >>> o, s = triton_chunk_kda(q, k, v, g, beta, output_final_state=True)  # doctest: +SKIP
    """
    shp = check_inputs(q, k, v, g, beta, initial_state, cu_seqlens)
    if shp.K > MAX_K:
        raise KDAInputError(f"the Triton kernels hold K in one tile: K = {shp.K} > {MAX_K}")
    if use_qk_l2norm:
        q, k = l2norm(q.float()), l2norm(k.float())
    if cu_seqlens is None:
        cu_seqlens = torch.arange(0, shp.B + 1, device=q.device, dtype=torch.int32) * shp.T
    scale = shp.K**-0.5 if scale is None else scale
    o, final = KDAChunkFunction.apply(
        q, k, v, g, beta, scale, initial_state, output_final_state, cu_seqlens
    )
    return o, (final if output_final_state else None)
