"""The public KDA entry points: one function per mode and the `kda` dispatcher.

Triton runs on CUDA tensors; elsewhere the PyTorch paths (`chunk.py`, `naive.py`) run.
`backend="triton"` forces Triton (on CPU only under TRITON_INTERPRET=1, which tests use),
`backend="torch"` forces PyTorch. Triton modules are imported only when used.
"""

from __future__ import annotations

import importlib.util
import os
from enum import StrEnum
from typing import Literal

import torch

from kimmy_swarm.kernels.kda._checks import KDAInputError
from kimmy_swarm.kernels.kda.chunk import torch_chunk_kda
from kimmy_swarm.kernels.kda.naive import naive_kda

__all__ = [
    "DECODE_MAX_LEN",
    "Backend",
    "KDAPath",
    "chunk_kda",
    "fused_recurrent_kda",
    "kda",
    "select_kda_path",
    "triton_usable",
]

Backend = Literal["auto", "triton", "torch"]
DECODE_MAX_LEN = 64  # up to this many tokens per sequence, inference takes the recurrent path
# The PyTorch recurrence is a Python loop: on CPU the chunked form already wins at 8 tokens
# (B=8, H=4, K=V=32: naive 8.5 ms vs chunk 4.2 ms; 62 vs 4 ms at 64 tokens), so the PyTorch
# paths use the recurrence only for a few tokens per sequence (decode steps).
TORCH_DECODE_MAX_LEN = 4


class KDAPath(StrEnum):
    """Which implementation computes a call."""

    TRITON_CHUNK = "triton_chunk"
    TRITON_RECURRENT = "triton_recurrent"
    TORCH_CHUNK = "torch_chunk"
    NAIVE = "naive"


def triton_usable(device_type: str) -> bool:
    """Triton is installed and can run on this device (CUDA, or the CPU interpreter)."""
    if importlib.util.find_spec("triton") is None:
        return False
    return device_type == "cuda" or (
        device_type == "cpu" and os.environ.get("TRITON_INTERPRET", "0") == "1"
    )


def _use_triton(device_type: str, backend: str) -> bool:
    if backend not in ("auto", "triton", "torch"):
        raise KDAInputError(f"backend {backend!r} is not one of 'auto', 'triton', 'torch'")
    if backend == "torch":
        return False
    usable = triton_usable(device_type)
    if backend == "triton" and not usable:
        raise KDAInputError(
            f"backend='triton' needs Triton and a CUDA device (or TRITON_INTERPRET=1 on CPU); "
            f"got device {device_type!r}"
        )
    return usable and (backend == "triton" or device_type == "cuda")


def select_kda_path(
    *, device_type: str, max_seq_len: int, needs_grad: bool, backend: Backend = "auto"
) -> KDAPath:
    """The path `kda` takes: recurrent for short inference calls (≤ 64 tokens per sequence
    with Triton, ≤ 4 with PyTorch), chunked otherwise.

    Args:
        device_type: "cuda", "cpu", ...
        max_seq_len: the longest sequence in the call (T, or the longest packed sequence).
        needs_grad: autograd will differentiate through the call.
        backend: "auto" (Triton on CUDA), "triton" or "torch".

    Raises:
        KDAInputError: unknown backend, or "triton" where Triton cannot run.
    """
    if _use_triton(device_type, backend):
        decode = max_seq_len <= DECODE_MAX_LEN and not needs_grad
        return KDAPath.TRITON_RECURRENT if decode else KDAPath.TRITON_CHUNK
    decode = max_seq_len <= TORCH_DECODE_MAX_LEN and not needs_grad
    return KDAPath.NAIVE if decode else KDAPath.TORCH_CHUNK


def chunk_kda(
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
    backend: Backend = "auto",
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Chunkwise KDA (training, prefill): Triton on CUDA, PyTorch `chunk.py` elsewhere.

    Shapes as `naive_kda`: q, k, g `[B, T, H, K]`; v `[B, T, H, V]`; beta `[B, T, H]`;
    states `[N, H, K, V]`. Returns `(o [B, T, H, V], final state or None)`.

    Example:
        >>> q = k = torch.nn.functional.normalize(torch.randn(1, 100, 2, 32), dim=-1)
        >>> o, s = chunk_kda(q, k, torch.randn(1, 100, 2, 32), -torch.rand(1, 100, 2, 32),
        ...                  torch.rand(1, 100, 2), output_final_state=True)
        >>> o.shape, s.shape
        (torch.Size([1, 100, 2, 32]), torch.Size([1, 2, 32, 32]))
    """
    kw = {
        "scale": scale,
        "initial_state": initial_state,
        "output_final_state": output_final_state,
        "use_qk_l2norm": use_qk_l2norm,
        "cu_seqlens": cu_seqlens,
    }
    if _use_triton(q.device.type, backend):
        from kimmy_swarm.kernels.kda.triton_chunk import triton_chunk_kda  # lazy: needs triton

        return triton_chunk_kda(q, k, v, g, beta, **kw)
    return torch_chunk_kda(q, k, v, g, beta, **kw)


def fused_recurrent_kda(
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
    backend: Backend = "auto",
    inplace_state: bool = False,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Recurrent KDA for decoding: the fused Triton kernel on CUDA (no backward), `naive`
    elsewhere. With `inplace_state`, the final state is written into `initial_state`.

    Shapes as `naive_kda`. Returns `(o [B, T, H, V], final state or None)`.
    """
    kw = {
        "scale": scale,
        "initial_state": initial_state,
        "output_final_state": output_final_state,
        "use_qk_l2norm": use_qk_l2norm,
        "cu_seqlens": cu_seqlens,
    }
    if _use_triton(q.device.type, backend):
        from kimmy_swarm.kernels.kda.triton_recurrent import triton_fused_recurrent_kda

        return triton_fused_recurrent_kda(q, k, v, g, beta, inplace_state=inplace_state, **kw)
    if inplace_state and initial_state is None:
        raise KDAInputError("inplace_state=True needs an initial_state to update")
    store = output_final_state or inplace_state
    o, final = naive_kda(q, k, v, g, beta, **{**kw, "output_final_state": store})
    if inplace_state and final is not None and initial_state is not None:
        with torch.no_grad():
            initial_state.copy_(final)
        final = initial_state
    return o, final


def kda(
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
    backend: Backend = "auto",
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Kimi Delta Attention, dispatched (see `select_kda_path`): the recurrent kernel for
    short inference calls (no grad; ≤ 64 tokens per sequence with Triton, ≤ 4 with PyTorch),
    the chunked one otherwise.

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
        backend: "auto" (Triton on CUDA, PyTorch elsewhere), "triton" or "torch".

    Returns:
        `(o [B, T, H, V] in v's dtype, final state or None)`.
    """
    if cu_seqlens is None:
        max_len = q.shape[1]
    else:
        max_len = int((cu_seqlens[1:] - cu_seqlens[:-1]).max()) if cu_seqlens.numel() > 1 else 0
    tensors = (q, k, v, g, beta, initial_state)
    needs_grad = torch.is_grad_enabled() and any(x is not None and x.requires_grad for x in tensors)
    path = select_kda_path(
        device_type=q.device.type, max_seq_len=max_len, needs_grad=needs_grad, backend=backend
    )
    kw = {
        "scale": scale,
        "initial_state": initial_state,
        "output_final_state": output_final_state,
        "use_qk_l2norm": use_qk_l2norm,
        "cu_seqlens": cu_seqlens,
    }
    if path in (KDAPath.TRITON_RECURRENT, KDAPath.NAIVE):
        return fused_recurrent_kda(q, k, v, g, beta, backend=backend, **kw)
    return chunk_kda(q, k, v, g, beta, backend=backend, **kw)
