"""Muon's math as pure functions: Newton–Schulz orthogonalisation, the momentum update, and
Moonlight's RMS-matching scale.

Muon replaces a matrix's gradient step by its nearest semi-orthogonal matrix `U Vᵀ`
(from `G = U Σ Vᵀ`), so every direction of the update moves by the same amount however
skewed the gradient's spectrum. An SVD per step is too slow; five iterations of a quintic
Newton–Schulz map with coefficients (3.4445, −4.7750, 2.0315) push every singular value that
is not tiny into roughly [0.68, 1.20] instead of exactly 1, which trains as well (Keller
Jordan's Muon). The map acts on singular values only (`NS(U Σ Vᵀ) = U p⁵(Σ) Vᵀ`), so the
singular vectors are kept exactly.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from kimmy_swarm.model.errors import ModelConfigError

__all__ = ["NS_COEFFICIENTS", "muon_update", "newton_schulz", "rms_match_scale"]

NS_COEFFICIENTS = (3.4445, -4.7750, 2.0315)
"""(a, b, c) of p(x) = a·x + b·x³ + c·x⁵: the steepest slope at 0 that still keeps every
singular value in a band around 1 (Keller Jordan's tuning)."""


def _check_steps(steps: int) -> None:
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ModelConfigError(f"Newton–Schulz steps must be an int ≥ 1; got {steps!r}")


def _fused(
    bias: torch.Tensor, m1: torch.Tensor, m2: torch.Tensor, *, beta: float, alpha: float = 1.0
) -> torch.Tensor:
    """`beta·bias + alpha·(m1 @ m2)` in one kernel (addmm, or baddbmm for a batch).

    One fused call rounds once in bf16, the same way `torch.optim.Muon` does, so the two
    agree bit for bit when run in the same dtype.
    """
    if m1.ndim == 2:
        return torch.addmm(bias, m1, m2, beta=beta, alpha=alpha)
    return torch.baddbmm(bias, m1, m2, beta=beta, alpha=alpha)


def newton_schulz(
    G: torch.Tensor,  # (..., A, B)
    steps: int = 5,
    *,
    eps: float = 1e-7,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """Approximately orthogonalise `G` (each matrix of a batch on its own).

    Args:
        G: a matrix `[A, B]` or a batch `[..., A, B]`.
        steps: Newton–Schulz iterations; 5 is Muon's choice.
        eps: added to the Frobenius norm so an all-zero gradient gives zeros, not NaN.
        dtype: compute dtype. fp32 by default: on CPU bf16 matmuls were measured 25× slower
            (model-spec §3); bf16 is the usual choice on GPUs.

    Returns:
        `U p⁵(Σ) Vᵀ`, same shape and dtype as `G`; singular values of the result lie in
        about [0.68, 1.21] for every input singular value above 0.002·‖G‖_F.

    Raises:
        ModelConfigError: `G` has fewer than 2 dims, `steps` < 1, or `dtype` is not floating.
    """
    if G.ndim < 2:
        raise ModelConfigError(
            f"newton_schulz needs a matrix or a batch of matrices; got shape {tuple(G.shape)}"
        )
    _check_steps(steps)
    if not dtype.is_floating_point:
        raise ModelConfigError(f"newton_schulz dtype must be floating point; got {dtype}")
    a, b, c = NS_COEFFICIENTS
    batch = G.shape[:-2]
    x = G.to(dtype).reshape(-1, *G.shape[-2:]) if G.ndim > 2 else G.to(dtype)  # (N?, A, B)
    # Work on the wide orientation: the Gram matrix X Xᵀ is then the smaller one.
    tall = G.size(-2) > G.size(-1)
    if tall:
        x = x.mT  # (N?, B, A)
    # ‖X‖₂ ≤ ‖X‖_F = 1 after this, inside p's basin of attraction (0, 1].
    norm = torch.linalg.vector_norm(x, dim=(-2, -1), keepdim=True)  # (N?, 1, 1) Frobenius
    x = x / (norm + eps)  # (N?, A, B)
    for _ in range(steps):
        gram = x @ x.mT  # (N?, A, A)
        poly = _fused(gram, gram, gram, beta=b, alpha=c)  # b·XXᵀ + c·(XXᵀ)²
        x = _fused(x, poly, x, beta=a)  # a·X + poly·X
    if tall:
        x = x.mT  # (N?, A, B)
    return x.reshape(*batch, *G.shape[-2:]).to(G.dtype)


def muon_update(
    grad: torch.Tensor,  # (A, B)
    momentum_buf: torch.Tensor,  # (A, B), updated in place
    *,
    momentum: float = 0.95,
    nesterov: bool = True,
    ns_steps: int = 5,
    eps: float = 1e-7,
    ns_dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """One Muon direction: update the momentum buffer in place, orthogonalise the result.

    The buffer is an exponential average, `m ← μ·m + (1 − μ)·g`, and the Nesterov look-ahead
    is `(1 − μ)·g + μ·m` (Keller Jordan's and `torch.optim.Muon`'s form). Moonlight writes
    the plain sum `m ← μ·m + g`, `g + μ·m`; that is the same direction times `1/(1 − μ)`,
    a constant that Newton–Schulz's normalisation removes, while the average keeps the
    buffer on the gradient's scale.

    Returns:
        The orthogonalised direction, same shape and dtype as `grad` (not yet scaled by lr).

    Raises:
        ModelConfigError: momentum outside [0, 1), mismatched shapes, or bad `ns_steps`.
    """
    if not 0.0 <= momentum < 1.0:
        raise ModelConfigError(f"momentum must be in [0, 1); got {momentum}")
    if grad.shape != momentum_buf.shape:
        raise ModelConfigError(
            f"momentum buffer shape {tuple(momentum_buf.shape)} != grad shape {tuple(grad.shape)}"
        )
    momentum_buf.lerp_(grad, 1.0 - momentum)  # (A, B)
    direction = grad.lerp(momentum_buf, momentum) if nesterov else momentum_buf  # (A, B)
    return newton_schulz(direction, ns_steps, eps=eps, dtype=ns_dtype)


def rms_match_scale(shape: Sequence[int] | torch.Size) -> float:
    """Moonlight's lr multiplier `0.2·√max(A, B)` for a matrix of shape `[A, B]`.

    An orthogonal `[A, B]` matrix has RMS `1/√max(A, B)`; this factor lifts Muon's update
    to RMS ≈ 0.2, the RMS of a typical AdamW update, so AdamW's lr and weight decay carry
    over unchanged. For a batch `[..., A, B]` the last two dims are the matrix.

    Raises:
        ModelConfigError: fewer than 2 dims, or a dim < 1.
    """
    dims = tuple(int(d) for d in shape)
    if len(dims) < 2 or min(dims) < 1:
        raise ModelConfigError(
            f"rms_match_scale needs a matrix shape [..., A, B] with dims ≥ 1; got {dims}"
        )
    return 0.2 * math.sqrt(max(dims[-2], dims[-1]))
