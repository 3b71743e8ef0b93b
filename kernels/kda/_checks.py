"""Input checks shared by every KDA path: shapes, dtypes and packed-sequence offsets."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import torch

from kimmy_swarm.kernels.errors import KDAInputError

__all__ = ["KDAInputError", "KDAShapes", "check_inputs", "l2norm", "rel_err", "seq_bounds"]

L2NORM_EPS = 1e-6


@dataclass(frozen=True)
class KDAShapes:
    """Sizes read from validated inputs (layout `[B, T, H, D]`)."""

    B: int
    T: int
    H: int
    K: int
    V: int
    N: int  # number of sequences: B, or len(cu_seqlens) - 1 for packed input


def _shape_error(name: str, got: tuple[int, ...], want: str) -> KDAInputError:
    return KDAInputError(f"{name} has shape {list(got)}; expected {want}")


def _check_state(state: torch.Tensor, n: int, h: int, k: int, v: int) -> None:
    if tuple(state.shape) != (n, h, k, v):
        raise _shape_error("initial_state", tuple(state.shape), f"[N, H, K, V] = {[n, h, k, v]}")


def _check_cu_seqlens(cu: torch.Tensor, b: int, t: int) -> int:
    if b != 1:
        raise KDAInputError(f"packed input (cu_seqlens) needs B = 1; got B = {b}")
    if cu.ndim != 1 or cu.numel() < 2 or cu.dtype not in (torch.int32, torch.int64):
        raise KDAInputError(
            f"cu_seqlens must be a 1-D int32/int64 tensor of N + 1 offsets; got shape "
            f"{list(cu.shape)} dtype {cu.dtype}"
        )
    offs = cu.tolist()
    if offs[0] != 0 or offs[-1] != t or any(a > b_ for a, b_ in itertools.pairwise(offs)):
        raise KDAInputError(
            f"cu_seqlens must start at 0, be non-decreasing and end at T = {t}; got {offs[:8]}"
        )
    return cu.numel() - 1


def check_inputs(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    initial_state: torch.Tensor | None,
    cu_seqlens: torch.Tensor | None,
) -> KDAShapes:
    """Validate the KDA inputs and return their sizes.

    Raises:
        KDAInputError: a tensor has the wrong rank, shape, or is on another device.
    """
    if q.ndim != 4:
        raise _shape_error("q", tuple(q.shape), "[B, T, H, K]")
    b, t, h, kd = q.shape
    if b == 0 or t == 0 or h == 0 or kd == 0:
        raise _shape_error("q", tuple(q.shape), "[B, T, H, K] with every size ≥ 1")
    if tuple(k.shape) != (b, t, h, kd):
        raise _shape_error("k", tuple(k.shape), f"q's shape {[b, t, h, kd]}")
    if v.ndim != 4 or tuple(v.shape[:3]) != (b, t, h):
        raise _shape_error("v", tuple(v.shape), f"[B, T, H, V] with B, T, H = {[b, t, h]}")
    if tuple(g.shape) != (b, t, h, kd):
        raise _shape_error("g", tuple(g.shape), f"q's shape {[b, t, h, kd]}")
    if tuple(beta.shape) != (b, t, h):
        raise _shape_error("beta", tuple(beta.shape), f"[B, T, H] = {[b, t, h]}")
    for name, x in (("k", k), ("v", v), ("g", g), ("beta", beta)):
        if x.device != q.device:
            raise KDAInputError(f"{name} is on {x.device}; q is on {q.device}")
    n = b if cu_seqlens is None else _check_cu_seqlens(cu_seqlens, b, t)
    if initial_state is not None:
        _check_state(initial_state, n, h, kd, v.shape[-1])
    return KDAShapes(B=b, T=t, H=h, K=kd, V=v.shape[-1], N=n)


def seq_bounds(t: int, cu_seqlens: torch.Tensor | None) -> list[tuple[int, int]]:
    """`(start, end)` of each sequence along the time axis (one, `(0, T)`, when not packed)."""
    if cu_seqlens is None:
        return [(0, t)]
    offs = cu_seqlens.tolist()
    return list(itertools.pairwise(offs))


def l2norm(x: torch.Tensor, eps: float = L2NORM_EPS) -> torch.Tensor:
    """Normalize the last axis to unit L2 norm: `x / sqrt(sum(x²) + eps)`, in x's dtype."""
    xf = x.float() if x.dtype in (torch.float16, torch.bfloat16) else x
    return (xf * torch.rsqrt(xf.pow(2).sum(-1, keepdim=True) + eps)).to(x.dtype)


def rel_err(a: torch.Tensor, b: torch.Tensor) -> float:
    """Norm-wise relative error `‖a − b‖ / ‖b‖`, computed in float64."""
    a64, b64 = a.detach().double(), b.detach().double()
    return float((a64 - b64).norm() / b64.norm().clamp_min(1e-30))
