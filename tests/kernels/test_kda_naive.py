"""The reference recurrence, the gate and the short convolution, checked against the math."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from kimmy_swarm.kernels.errors import KernelError  # noqa: E402
from kimmy_swarm.kernels.kda import KDAInputError, causal_conv1d, kda_gate, l2norm, naive_kda  # noqa: E402
from tests.kernels.kda_cases import Case, assert_rel, make_inputs  # noqa: E402


def _unit(*shape: int, seed: int = 0) -> torch.Tensor:
    return l2norm(
        torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    )


def test_one_token_is_a_scaled_outer_product() -> None:
    q, k = _unit(1, 1, 2, 8, seed=1), _unit(1, 1, 2, 8, seed=2)
    v = torch.randn(1, 1, 2, 4, dtype=torch.float64)
    g, beta = -torch.rand(1, 1, 2, 8, dtype=torch.float64), torch.rand(1, 1, 2, dtype=torch.float64)
    o, s = naive_kda(q, k, v, g, beta, scale=0.5, output_final_state=True)
    want_s = beta[0, 0, :, None, None] * k[0, 0, :, :, None] * v[0, 0, :, None, :]  # (H, K, V)
    assert torch.allclose(s[0], want_s)
    want_o = 0.5 * beta[0, 0, :, None] * (q * k).sum(-1)[0, 0, :, None] * v[0, 0]
    assert torch.allclose(o[0, 0], want_o)


def test_delta_rule_overwrites_the_value_stored_under_a_key() -> None:
    k = _unit(1, 1, 1, 16).expand(1, 2, 1, 16)  # the same key twice
    v = torch.randn(1, 2, 1, 8, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    zeros, ones = (
        torch.zeros(1, 2, 1, 16, dtype=torch.float64),
        torch.ones(1, 2, 1, dtype=torch.float64),
    )
    o, _ = naive_kda(k, k, v, zeros, ones, scale=1.0)
    # |k|² = 1 up to l2norm's epsilon, so the read-back is exact to ~1e-6 of |v|
    assert torch.allclose(o[0, 0], v[0, 0], atol=1e-5)  # reading k returns what was written...
    assert torch.allclose(o[0, 1], v[0, 1], atol=1e-5)  # ...and a second write replaces it


def test_with_beta_zero_the_state_only_decays() -> None:
    inp = make_inputs(Case(T=20, H=2, K=8, V=4), torch.float64)
    beta = torch.zeros_like(inp["beta"])
    h0 = inp["initial_state"]
    o, s = naive_kda(
        inp["q"],
        inp["k"],
        inp["v"],
        inp["g"],
        beta,
        scale=1.0,
        initial_state=h0,
        output_final_state=True,
    )
    decay = inp["g"].cumsum(1).exp()  # (B, T, H, K)
    want_o = torch.einsum("bthk,bhkv->bthv", inp["q"] * decay, inp["initial_state"])
    assert torch.allclose(o, want_o)
    assert torch.allclose(s, decay[:, -1, :, :, None] * inp["initial_state"])


def test_packed_sequences_equal_separate_calls() -> None:
    lens = (5, 17, 1)
    inp = make_inputs(Case(lens=lens, H=2, K=8, V=8), torch.float64)
    o, s = naive_kda(
        *(inp[x] for x in ("q", "k", "v", "g", "beta")),
        initial_state=inp["initial_state"],
        output_final_state=True,
        cu_seqlens=inp["cu_seqlens"],
    )
    start = 0
    for n, t in enumerate(lens):
        sl = slice(start, start + t)
        parts = (inp[x][:, sl] for x in ("q", "k", "v", "g", "beta"))
        h0 = inp["initial_state"][n : n + 1]
        o_n, s_n = naive_kda(*parts, initial_state=h0, output_final_state=True)
        assert torch.allclose(o[:, sl], o_n) and torch.allclose(s[n : n + 1], s_n)
        start += t


def test_l2norm_option_equals_normalising_first() -> None:
    inp = make_inputs(Case(T=9, h0=False), torch.float64)
    q, k = inp["q"] * 3.0, inp["k"] * 0.5
    args = (inp["v"], inp["g"], inp["beta"])
    o1, _ = naive_kda(q, k, *args, use_qk_l2norm=True)
    o2, _ = naive_kda(l2norm(q), l2norm(k), *args)
    assert_rel("o", o1, o2, 1e-12)


def test_gate_formulas_and_bounds() -> None:
    f = torch.randn(3, 5, 2, 4, dtype=torch.float64)
    a_log, dt_bias = torch.tensor([0.0, 1.0]), torch.randn(8, dtype=torch.float64)
    g = kda_gate(f, a_log, dt_bias)
    want = -a_log.double().exp().view(2, 1) * torch.nn.functional.softplus(
        f + dt_bias.view(2, 4)
    )
    assert torch.allclose(g, want) and g.dtype == torch.float64 and (g <= 0).all()
    assert kda_gate(f.bfloat16(), a_log, dt_bias).dtype == torch.float32  # fp32 at least
    safe = kda_gate(f * 100, a_log, dt_bias, lower_bound=-5.0)
    assert (safe >= -5.0).all() and (safe <= 0).all()
    with pytest.raises(KDAInputError, match="A_log has 3 elements"):
        kda_gate(f, torch.zeros(3))
    with pytest.raises(KDAInputError, match="lower_bound must be < 0"):
        kda_gate(f, a_log, lower_bound=1.0)


@pytest.mark.parametrize("n", [9, 40])  # the shifted-sum path (≤ 16 tokens) and conv1d's
def test_short_conv_decodes_token_by_token_like_one_call(n: int) -> None:
    gen = torch.Generator().manual_seed(5)
    x = torch.randn(2, n, 6, dtype=torch.float64, generator=gen)
    w = torch.randn(6, 1, 4, dtype=torch.float64, generator=gen)  # the checkpoint's layout
    y, state = causal_conv1d(x, w)
    xs = torch.nn.functional.pad(x, (0, 0, 3, 0))  # zeros before the start
    manual = sum(w[None, None, :, 0, i] * xs[:, i : i + n] for i in range(4))
    assert torch.allclose(y, torch.nn.functional.silu(manual))
    st = None
    for t in range(n):
        y_t, st = causal_conv1d(x[:, t : t + 1], w, state=st)
        assert torch.allclose(y_t, y[:, t : t + 1])
    assert torch.equal(st, state) and torch.equal(state, x[:, -3:].transpose(1, 2))


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"k": torch.zeros(1, 5, 2, 7)}, "k has shape"),
        ({"q": torch.zeros(1, 0, 2, 8)}, "every size ≥ 1"),
        ({"beta": torch.zeros(1, 5, 3)}, "beta has shape"),
        ({"initial_state": torch.zeros(2, 2, 8, 4)}, "initial_state has shape"),
        ({"cu_seqlens": torch.tensor([0, 3, 4])}, "end at T = 5"),
        ({"cu_seqlens": torch.tensor([0.0, 5.0])}, "int32/int64"),
    ],
)
def test_bad_inputs_name_the_problem(change: dict, match: str) -> None:
    args = {
        "q": torch.zeros(1, 5, 2, 8),
        "k": torch.zeros(1, 5, 2, 8),
        "v": torch.zeros(1, 5, 2, 4),
        "g": torch.zeros(1, 5, 2, 8),
        "beta": torch.zeros(1, 5, 2),
        "initial_state": None,
        "cu_seqlens": None,
    } | change
    with pytest.raises(KDAInputError, match=match) as err:
        naive_kda(
            args.pop("q"), args.pop("k"), args.pop("v"), args.pop("g"), args.pop("beta"), **args
        )
    assert isinstance(err.value, KernelError) and isinstance(err.value, ValueError)
