"""Inputs and comparisons shared by the KDA kernel tests (seeded, realistic value ranges)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from kimmy_swarm.kernels.kda import kda_gate, l2norm, rel_err

__all__ = ["Case", "assert_rel", "make_inputs", "naive_grads", "tol"]

STEEP = 2.0  # gate-input multiplier of the "steep" case: some 16-token blocks decay > e^60

# Relative-error bounds (‖got − ref‖ / ‖ref‖, ref in fp64) for outputs/states and gradients.
TOLERANCES = {
    torch.float64: (1e-10, 1e-9),
    torch.float32: (1e-5, 5e-5),
    torch.bfloat16: (1.5e-2, 3e-2),
}


def tol(dtype: torch.dtype, *, grad: bool = False) -> float:
    """The relative-error bound for dtype (outputs, or gradients with grad=True)."""
    return TOLERANCES[dtype][1 if grad else 0]


@dataclass(frozen=True)
class Case:
    """One input configuration; `lens` packs sequences of those lengths (B = 1)."""

    B: int = 1
    T: int = 70
    H: int = 2
    K: int = 32
    V: int = 32
    lens: tuple[int, ...] | None = None
    gate: str = "softplus"  # "softplus" (fla init), "steep" (long decays), "safe" (bounded)
    h0: bool = True


def make_inputs(case: Case, dtype: torch.dtype, seed: int = 0) -> dict[str, torch.Tensor | None]:
    """q, k (unit norm), v, g (from the KDA gate), beta, initial_state and cu_seqlens."""
    gen = torch.Generator().manual_seed(seed)
    b, t = (1, sum(case.lens)) if case.lens else (case.B, case.T)
    h, kd, vd = case.H, case.K, case.V

    def randn(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=gen, dtype=torch.float64)

    a_log = torch.empty(h, dtype=torch.float64).uniform_(1, 16, generator=gen).log()
    dt = (
        torch.empty(h * kd, dtype=torch.float64)
        .uniform_(math.log(1e-3), math.log(0.1), generator=gen)
        .exp()
    )
    dt_bias = dt + torch.log(-torch.expm1(-dt))  # inverse softplus, as fla initialises it
    f = randn(b, t, h, kd) * (STEEP if case.gate == "steep" else 1.0)
    bound = -5.0 if case.gate == "safe" else None
    g = kda_gate(f, a_log, dt_bias, lower_bound=bound).double()
    n = len(case.lens) if case.lens else b
    out = {
        "q": l2norm(randn(b, t, h, kd)),
        "k": l2norm(randn(b, t, h, kd)),
        "v": randn(b, t, h, vd),
        "g": g,
        "beta": torch.rand(b, t, h, generator=gen, dtype=torch.float64),
        "initial_state": randn(n, h, kd, vd) if case.h0 else None,
        "cu_seqlens": torch.tensor([0, *torch.tensor(case.lens).cumsum(0).tolist()])
        if case.lens
        else None,
    }
    return {
        k: (x.to(dtype) if x is not None and x.is_floating_point() else x) for k, x in out.items()
    }


def assert_rel(name: str, got: torch.Tensor | None, ref: torch.Tensor | None, bound: float) -> None:
    """Fail with the measured error when ‖got − ref‖ / ‖ref‖ exceeds bound."""
    assert got is not None and ref is not None, f"{name}: missing tensor"
    assert got.shape == ref.shape, f"{name}: shape {tuple(got.shape)} != {tuple(ref.shape)}"
    assert torch.isfinite(got).all(), f"{name}: non-finite values"
    err = rel_err(got, ref)
    assert err <= bound, f"{name}: relative error {err:.3e} > {bound:.1e}"


GRAD_NAMES = ("q", "k", "v", "g", "beta", "initial_state")


def naive_grads(
    fn, inputs: dict, *, seed: int = 1, **kw
) -> tuple[torch.Tensor, torch.Tensor, dict]:
    """Run fn with grads on (q, k, v, g, beta, initial_state); loss = <o, do> + <S_T, dS>.

    Returns (o, final_state, {name: grad}); the cotangents are seeded, so two functions called
    on the same inputs get the same ones.
    """
    leaves = {
        n: inputs[n].detach().clone().requires_grad_() for n in GRAD_NAMES if inputs[n] is not None
    }
    args = {n: leaves.get(n, inputs[n]) for n in GRAD_NAMES}
    o, s = fn(
        args["q"],
        args["k"],
        args["v"],
        args["g"],
        args["beta"],
        initial_state=args["initial_state"],
        output_final_state=True,
        cu_seqlens=inputs["cu_seqlens"],
        **kw,
    )
    gen = torch.Generator().manual_seed(seed)
    do = torch.randn(o.shape, generator=gen, dtype=torch.float64).to(o.dtype)
    ds = torch.randn(s.shape, generator=gen, dtype=torch.float64).to(s.dtype)
    ((o * do).sum() + (s * ds).sum()).backward()
    return o.detach(), s.detach(), {n: x.grad for n, x in leaves.items()}
