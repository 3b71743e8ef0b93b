"""Attention Residuals: each sublayer reads a softmax-weighted mix of earlier outputs
instead of their plain sum.

Full AttnRes: the input of sublayer l is `h_l = Σ_{i<l} α_{i→l} v_i` with `v_0` the token
embedding, `v_i` the output of sublayer i (attention and FFN are separate sublayers), and
`α_{i→l} = softmax_i(w_lᵀ RMSNorm(v_i))` — a learned pseudo-query `w_l` per sublayer,
initialised to zero (uniform weights at init), no 1/√d scaling. One more mix feeds the
final norm. The first sublayer reads the embedding alone, so it has no mixer.

Block AttnRes: sublayers are grouped into blocks; the sources are the embedding, the sums
of finished blocks and the running sum of the current block. One sublayer per block is
exactly Full AttnRes.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from kimmy_swarm.model.norm import rms_norm

__all__ = ["DepthMixer", "DepthSources"]


class DepthMixer(nn.Module):
    """Softmax over depth for one sublayer: a zero-initialised `query [D]` against
    RMS-normalised sources. The key norm has no learned scale: it would only multiply the
    query channel-wise, a redundant parameter."""

    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.eps = eps
        self.query = nn.Parameter(torch.zeros(dim))

    def forward(self, sources: list[torch.Tensor]) -> torch.Tensor:
        if len(sources) == 1:
            return sources[0]
        v = torch.stack(sources)  # (S, B, T, D)
        keys = rms_norm(v, None, self.eps)  # (S, B, T, D)
        logits = (keys.float() * self.query.float()).sum(-1)  # (S, B, T)
        alpha = torch.softmax(logits, dim=0).to(v.dtype)  # (S, B, T)
        return (alpha[..., None] * v).sum(0)  # (B, T, D)


class DepthSources:
    """The sources a sublayer may attend over, for the standard, full or block scheme.

    `inputs(mixer)` gives the next sublayer's input; `add(output)` records its output.
    The standard residual keeps one running sum (`embedding + Σ outputs`).
    """

    def __init__(self, embedding: torch.Tensor, *, residual: str, block_size: int) -> None:
        self.residual = residual
        self.block_size = block_size
        self.finished: list[torch.Tensor] = [embedding]
        self.partial: torch.Tensor | None = None
        self.count = 0

    def sources(self) -> list[torch.Tensor]:
        return self.finished + ([] if self.partial is None else [self.partial])

    def inputs(self, mixer: DepthMixer | None) -> torch.Tensor:
        if self.residual == "standard":
            h = self.finished[0]
            return h if self.partial is None else h + self.partial
        sources = self.sources()
        if mixer is None:  # the first sublayer: the embedding is its only source
            assert len(sources) == 1
            return sources[0]
        return mixer(sources)

    def add(self, output: torch.Tensor) -> None:
        self.partial = output if self.partial is None else self.partial + output
        self.count += 1
        if self.residual != "standard" and self.count % self.block_size == 0:
            self.finished.append(self.partial)
            self.partial = None


def block_size(residual: str, num_sublayers: int, num_blocks: int) -> int:
    """Sublayers per block: 1 for Full AttnRes, ⌈sublayers / blocks⌉ for Block AttnRes."""
    if residual == "full_attnres":
        return 1
    return max(1, math.ceil(num_sublayers / num_blocks))
