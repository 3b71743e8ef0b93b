"""Kimi Delta Attention (KDA) kernels: the fp32 reference, chunkwise PyTorch, and Triton.

Layout everywhere: q, k, g `[B, T, H, K]`; v `[B, T, H, V]`; beta `[B, T, H]`;
state `[N, H, K, V]` (N = B, or the number of packed sequences given `cu_seqlens`).
Every path has the signature `f(q, k, v, g, beta, *, scale=None, initial_state=None,
output_final_state=False, use_qk_l2norm=False, cu_seqlens=None) -> (o, final_state)`.

- `naive_kda`: token-by-token recurrence in fp32, the ground truth.
- `torch_chunk_kda`: chunkwise (64) PyTorch, differentiable through autograd.
- `chunk_kda`: the chunk mode — Triton kernels on CUDA, `torch_chunk_kda` elsewhere.
- `fused_recurrent_kda`: the decode mode — one fused Triton kernel on CUDA, `naive_kda`
  elsewhere; can update the state in place.
- `kda`: picks the mode (`select_kda_path`).

Triton is imported only when a Triton path runs (`kernels.kda.triton_chunk`,
`kernels.kda.triton_recurrent`).
"""

from __future__ import annotations

from kimmy_swarm.kernels.kda._checks import KDAInputError, l2norm, rel_err
from kimmy_swarm.kernels.kda.chunk import torch_chunk_kda
from kimmy_swarm.kernels.kda.dispatch import (
    KDAPath,
    chunk_kda,
    fused_recurrent_kda,
    kda,
    select_kda_path,
    triton_usable,
)
from kimmy_swarm.kernels.kda.naive import causal_conv1d, kda_gate, naive_kda

__all__ = [
    "KDAInputError",
    "KDAPath",
    "causal_conv1d",
    "chunk_kda",
    "fused_recurrent_kda",
    "kda",
    "kda_gate",
    "l2norm",
    "naive_kda",
    "rel_err",
    "select_kda_path",
    "torch_chunk_kda",
    "triton_usable",
]
