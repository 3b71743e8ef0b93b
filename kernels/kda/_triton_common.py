"""Helpers shared by the Triton KDA kernels: chunk bookkeeping and tile addressing.

Every kernel sees packed input: tensors flattened to `[TT, H, D]` (TT = B·T tokens) with
`cu_seqlens` `[N + 1]` marking the sequences (a plain batch is N = B sequences of length T).
Chunks of BT tokens never cross a sequence boundary; `chunk_indices` `[NC, 2]` lists
(sequence, chunk within sequence), so the global chunk id is the row of that table.
"""

from __future__ import annotations

import os

import torch
import triton
import triton.language as tl

__all__ = [
    "BC",
    "BT",
    "ChunkPlan",
    "block_k",
    "block_v",
    "chunk_bounds",
    "dot_precision",
    "interpreting",
    "plan_chunks",
]

BT = 64  # chunk length
BC = 16  # sub-chunk length inside the intra-chunk kernels


class ChunkPlan:
    """Chunk tables for one packed batch (computed once per call, on the tensors' device)."""

    def __init__(
        self, cu_seqlens: torch.Tensor, chunk_indices: torch.Tensor, offsets: torch.Tensor
    ):
        self.cu_seqlens = cu_seqlens  # (N + 1,) int32
        self.chunk_indices = chunk_indices  # (NC, 2) int32: (sequence, chunk in sequence)
        self.chunk_offsets = offsets  # (N + 1,) int32: first global chunk of each sequence
        self.num_seqs = cu_seqlens.numel() - 1
        self.num_chunks = chunk_indices.shape[0]


def plan_chunks(cu_seqlens: torch.Tensor) -> ChunkPlan:
    """Build the chunk tables for `cu_seqlens` (chunks of BT tokens, per sequence)."""
    cu = cu_seqlens.to(torch.int32)
    counts = (cu[1:] - cu[:-1] + BT - 1) // BT  # (N,)
    offsets = torch.cat([counts.new_zeros(1), counts.cumsum(0)]).to(torch.int32)
    seq = torch.repeat_interleave(torch.arange(counts.numel(), device=cu.device), counts)
    within = torch.arange(seq.numel(), device=cu.device) - offsets[seq]
    table = torch.stack([seq, within], dim=1).to(torch.int32).contiguous()
    return ChunkPlan(cu.contiguous(), table, offsets)


def interpreting() -> bool:
    """True when Triton runs kernels in its CPU interpreter (TRITON_INTERPRET=1)."""
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


def dot_precision(dtype: torch.dtype) -> str:
    """fp32 inputs keep full-precision dots; half inputs may use TF32 tensor cores."""
    return "ieee" if dtype in (torch.float32, torch.float64) else "tf32"


def block_k(k: int) -> int:
    """Tile width holding the whole key dimension (tl.dot needs ≥ 16)."""
    return max(16, triton.next_power_of_2(k))


def block_v(v: int) -> int:
    """Tile width along the value dimension."""
    return max(16, min(64, triton.next_power_of_2(v)))


@triton.jit
def chunk_bounds(cu_seqlens, chunk_indices, i_c, BT: tl.constexpr):
    """(sequence, first token of chunk i_c, end of its sequence), as int64."""
    i_n = tl.load(chunk_indices + i_c * 2).to(tl.int64)
    i_t = tl.load(chunk_indices + i_c * 2 + 1).to(tl.int64)
    bos = tl.load(cu_seqlens + i_n).to(tl.int64)
    eos = tl.load(cu_seqlens + i_n + 1).to(tl.int64)
    return i_n, bos + i_t * BT, eos
