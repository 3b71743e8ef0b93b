"""Newton–Schulz orthogonalisation, the Muon momentum update and the RMS-matching scale.

Measured band (this file's shapes plus 8 seeds × 12 shapes × 4 kinds, fp32, 5 steps): every
singular value whose normalised input σ/‖G‖_F ≥ 2e-3 came out in [0.6818, 1.2024];
rectangular Gaussian matrices gave [0.6818, 1.1344]. The math behind the asserted band: NS
acts on singular values only, `σ_out = p⁵(σ/‖G‖_F)` with p(x) = 3.4445x − 4.775x³ + 2.0315x⁵,
and the scalar map sends every x ∈ [2e-3, 1] into [0.68183, 1.20237]. Input singular values
far below 2e-3·‖G‖_F (square or ill-conditioned matrices) are amplified ~490× but not to 1.
"""

from __future__ import annotations

import math

import pytest
import torch

from kimmy_swarm.model.errors import ModelConfigError
from kimmy_swarm.model.optim import muon_update, newton_schulz, rms_match_scale
from kimmy_swarm.model.optim.newton_schulz import NS_COEFFICIENTS

BAND = (0.68, 1.2024 + 1e-3)  # the scalar map's image of [2e-3, 1], plus fp32 slack
THRESHOLD = 2e-3  # normalised input singular value above which the band is guaranteed


def _p5(x: torch.Tensor, steps: int = 5) -> torch.Tensor:
    a, b, c = NS_COEFFICIENTS
    for _ in range(steps):
        x = a * x + b * x**3 + c * x**5
    return x


def _matrix(kind: str, m: int, n: int, gen: torch.Generator) -> torch.Tensor:
    if kind == "gauss":
        return torch.randn(m, n, generator=gen)
    if kind == "heavy":  # Cauchy-like entries: a few huge values dominate the norm
        return torch.randn(m, n, generator=gen) / torch.randn(m, n, generator=gen).abs().add(0.05)
    k = min(m, n)
    u, _ = torch.linalg.qr(torch.randn(m, k, generator=gen, dtype=torch.float64))
    v, _ = torch.linalg.qr(torch.randn(n, k, generator=gen, dtype=torch.float64))
    s = torch.logspace(0, -6, k, dtype=torch.float64)  # condition number 1e6
    return (u @ torch.diag(s) @ v.T).float()


SHAPES = [(8, 8), (16, 64), (64, 16), (96, 32), (32, 96), (64, 64), (3, 50), (50, 3), (1, 20)]


@pytest.mark.parametrize("kind", ["gauss", "heavy", "illcond"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_ns_is_the_scalar_map_on_singular_values_and_lands_in_band(
    kind: str, shape: tuple[int, int]
) -> None:
    gen = torch.Generator().manual_seed(shape[0] * 1000 + shape[1])
    G = _matrix(kind, *shape, gen) * 37.0  # any scale: NS normalises first
    out = newton_schulz(G)
    assert out.shape == G.shape and out.dtype == G.dtype
    # Exact in arithmetic: NS(U Σ Vᵀ) = U p⁵(Σ/‖G‖_F) Vᵀ (singular vectors kept).
    u, s, vh = torch.linalg.svd(G.double(), full_matrices=False)
    expected = u @ torch.diag(_p5(s / (s.square().sum().sqrt() + 1e-7))) @ vh
    torch.testing.assert_close(out.double(), expected, rtol=0, atol=1e-4)
    # The band: the top-N output singular values, N = inputs above the threshold.
    s_out = torch.linalg.svdvals(out.double())  # descending
    n_ok = int((s / s.square().sum().sqrt() >= THRESHOLD).sum())
    assert n_ok >= 1
    assert BAND[0] <= s_out[:n_ok].min() and s_out.max() <= BAND[1], s_out


def test_rectangular_gaussian_band_is_tight() -> None:
    """Well-conditioned gradients (the common case) all land in [0.68, 1.14]."""
    gen = torch.Generator().manual_seed(7)
    for m, n in [(32, 128), (128, 32), (48, 200)]:
        s = torch.linalg.svdvals(newton_schulz(torch.randn(m, n, generator=gen)).double())
        assert s.min() >= 0.68 and s.max() <= 1.14, (m, n, s.min(), s.max())


def test_batched_equals_per_matrix_and_keeps_shape_dtype() -> None:
    gen = torch.Generator().manual_seed(1)
    G = torch.randn(2, 3, 12, 20, generator=gen)  # (2, 3, A, B) wide
    out = newton_schulz(G)
    assert out.shape == G.shape
    for i in range(2):
        for j in range(3):
            torch.testing.assert_close(out[i, j], newton_schulz(G[i, j]), rtol=1e-5, atol=1e-6)
    tall = torch.randn(4, 20, 12, generator=gen)  # (4, A, B) tall: transposed inside
    torch.testing.assert_close(newton_schulz(tall), newton_schulz(tall.mT).mT)
    half = G[0, 0].bfloat16()
    assert newton_schulz(half).dtype == torch.bfloat16
    assert newton_schulz(half, dtype=torch.bfloat16).dtype == torch.bfloat16


def test_compute_dtype_is_used() -> None:
    """fp64 compute agrees with fp32 to fp32 precision; bf16 compute is visibly coarser."""
    G = torch.randn(24, 40, generator=torch.Generator().manual_seed(2))
    ref = newton_schulz(G.double())
    err32 = (newton_schulz(G) - ref).abs().max().item()
    err16 = (newton_schulz(G, dtype=torch.bfloat16) - ref).abs().max().item()
    assert err32 < 1e-5 < 1e-3 < err16


def test_zero_gradient_gives_zero_and_scale_is_irrelevant() -> None:
    assert torch.equal(newton_schulz(torch.zeros(5, 7)), torch.zeros(5, 7))
    G = torch.randn(10, 30, generator=torch.Generator().manual_seed(3))
    for scale in (1e-3, 1e3):
        torch.testing.assert_close(newton_schulz(G * scale), newton_schulz(G), rtol=0, atol=1e-5)


@pytest.mark.parametrize(
    ("G", "kwargs"),
    [
        (torch.ones(5), {}),
        (torch.ones(3, 3), {"steps": 0}),
        (torch.ones(3, 3), {"steps": 2.5}),
        (torch.ones(3, 3), {"steps": True}),
        (torch.ones(3, 3), {"dtype": torch.int32}),
    ],
)
def test_newton_schulz_rejects_bad_input(G: torch.Tensor, kwargs: dict[str, object]) -> None:
    with pytest.raises(ModelConfigError):
        newton_schulz(G, **kwargs)  # type: ignore[arg-type]


def test_muon_update_momentum_and_nesterov() -> None:
    gen = torch.Generator().manual_seed(4)
    mu = 0.9
    buf = torch.zeros(6, 10)
    buf_plain = torch.zeros(6, 10)
    moonlight_sum = torch.zeros(6, 10)  # Moonlight's form: m ← μm + g, direction g + μm
    for _ in range(3):
        g = torch.randn(6, 10, generator=gen)
        before = buf.clone()
        out = muon_update(g, buf, momentum=mu)
        torch.testing.assert_close(buf, mu * before + (1 - mu) * g)  # buffer updated in place
        torch.testing.assert_close(out, newton_schulz((1 - mu) * g + mu * buf))
        moonlight_sum = mu * moonlight_sum + g
        # Same direction up to the constant 1/(1 − μ), which NS normalises away.
        torch.testing.assert_close(out, newton_schulz(g + mu * moonlight_sum), atol=1e-5, rtol=0)
        plain = muon_update(g, buf_plain, momentum=mu, nesterov=False)
        torch.testing.assert_close(plain, newton_schulz(buf_plain))


def test_muon_update_rejects_bad_arguments() -> None:
    g = torch.ones(3, 4)
    for momentum in (-0.1, 1.0, 1.5):
        with pytest.raises(ModelConfigError, match="momentum"):
            muon_update(g, torch.zeros(3, 4), momentum=momentum)
    with pytest.raises(ModelConfigError, match="shape"):
        muon_update(g, torch.zeros(4, 3))
    with pytest.raises(ModelConfigError, match="steps"):
        muon_update(g, torch.zeros(3, 4), ns_steps=0)


def test_rms_match_scale_gives_adamw_like_update_rms() -> None:
    assert rms_match_scale((24, 96)) == pytest.approx(0.2 * math.sqrt(96))
    assert rms_match_scale(torch.Size([96, 24])) == rms_match_scale((24, 96))
    assert rms_match_scale((5, 24, 96)) == rms_match_scale((24, 96))  # batch: last two dims
    gen = torch.Generator().manual_seed(5)
    for shape in [(64, 256), (256, 64), (128, 128)]:
        update = newton_schulz(torch.randn(*shape, generator=gen)) * rms_match_scale(shape)
        rms = update.square().mean().sqrt().item()
        assert 0.2 * 0.68 <= rms <= 0.2 * 1.21, (shape, rms)  # ≈ 0.2, AdamW's typical RMS


@pytest.mark.parametrize("shape", [(5,), (), (0, 4), (4, 0)])
def test_rms_match_scale_rejects_non_matrices(shape: tuple[int, ...]) -> None:
    with pytest.raises(ModelConfigError, match="matrix shape"):
        rms_match_scale(shape)
