"""The chunkwise PyTorch path equals the reference: outputs, states, gradients, packing."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from kimmy_swarm.kernels.kda import naive_kda, torch_chunk_kda  # noqa: E402
from kimmy_swarm.kernels.kda.chunk import SAFE_SPAN, SUB_CHUNK, _unit_lower_inverse  # noqa: E402
from tests.kernels.kda_cases import Case, assert_rel, make_inputs, naive_grads, tol  # noqa: E402

NAMES = ("q", "k", "v", "g", "beta")

CASES = [
    Case(B=2, T=100, H=2, K=32, V=16),  # T not a multiple of 64, H > 1, K ≠ V
    Case(B=1, T=37, H=3, K=16, V=48, h0=False),  # T < 64
    Case(B=1, T=128, H=1, K=64, V=64),  # exactly two chunks
    Case(B=1, T=130, H=2, K=24, V=40, gate="steep"),  # long decays: the pairwise fallback
    Case(B=1, T=90, H=2, K=32, V=32, gate="safe"),
    Case(lens=(30, 64, 1, 100), H=2, K=32, V=16),  # packed variable-length input
]


def _run(fn, inp: dict, **kw) -> tuple[torch.Tensor, torch.Tensor]:
    return fn(
        *(inp[n] for n in NAMES),
        initial_state=inp["initial_state"],
        output_final_state=True,
        cu_seqlens=inp["cu_seqlens"],
        **kw,
    )


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_chunk_equals_naive_in_fp32(case: Case) -> None:
    inp = make_inputs(case, torch.float32)
    ref = make_inputs(case, torch.float64)
    o_ref, s_ref = _run(naive_kda, ref)
    o, s = _run(torch_chunk_kda, inp)
    assert o.dtype == torch.float32 and s.dtype == torch.float32
    assert_rel("o", o, o_ref, tol(torch.float32))
    assert_rel("final_state", s, s_ref, tol(torch.float32))


@pytest.mark.parametrize("case", [CASES[0], CASES[3], CASES[5]], ids=repr)
def test_chunk_algebra_is_exact_in_fp64(case: Case) -> None:
    inp = make_inputs(case, torch.float64)
    o_ref, s_ref = _run(naive_kda, inp)
    o, s = _run(torch_chunk_kda, inp)
    assert_rel("o", o, o_ref, 1e-11)
    assert_rel("final_state", s, s_ref, 1e-11)


@pytest.mark.parametrize("case", [CASES[0], CASES[3], CASES[5]], ids=repr)
def test_chunk_gradients_equal_naive(case: Case) -> None:
    inp = make_inputs(case, torch.float64)
    _, _, want = naive_grads(naive_kda, inp)
    _, _, got = naive_grads(torch_chunk_kda, inp)
    assert set(got) == set(want)
    for name in want:
        assert_rel(f"d{name}", got[name], want[name], 1e-10)


def test_fp32_gradients_stay_finite_under_long_decays() -> None:
    """The steep case in fp32: diagonal blocks whose decay spreads past e^44 once made the
    backward form 1 / e^{2·44}, overflowing fp32 into NaN gate gradients mid-training."""
    case = CASES[3]
    _, _, want = naive_grads(naive_kda, make_inputs(case, torch.float64))
    _, _, got = naive_grads(torch_chunk_kda, make_inputs(case, torch.float32))
    for name in want:
        assert torch.isfinite(got[name]).all(), f"d{name} has non-finite entries"
        assert_rel(f"d{name}", got[name], want[name], tol(torch.float32, grad=True))


def test_chunk_bf16_inputs_within_bf16_tolerance() -> None:
    case = CASES[0]
    inp = make_inputs(case, torch.bfloat16)
    ref = {
        n: (x.double() if x is not None and x.is_floating_point() else x) for n, x in inp.items()
    }
    o_ref, s_ref = _run(naive_kda, ref)
    o, s = _run(torch_chunk_kda, inp)
    assert o.dtype == torch.bfloat16
    assert_rel("o", o, o_ref, tol(torch.bfloat16))
    assert_rel("final_state", s, s_ref, tol(torch.bfloat16))


def test_scale_and_l2norm_options_match_naive() -> None:
    inp = make_inputs(Case(T=80, H=2, K=16, V=16), torch.float64)
    inp["q"], inp["k"] = inp["q"] * 4.0, inp["k"] * 0.3
    o_ref, s_ref = _run(naive_kda, inp, scale=0.7, use_qk_l2norm=True)
    o, s = _run(torch_chunk_kda, inp, scale=0.7, use_qk_l2norm=True)
    assert_rel("o", o, o_ref, 1e-11)
    assert_rel("final_state", s, s_ref, 1e-11)


@settings(max_examples=12, deadline=None)
@given(t=st.integers(2, 150), split=st.floats(0.01, 0.99), seed=st.integers(0, 2**16))
def test_state_passing_equals_one_run(t: int, split: float, seed: int) -> None:
    inp = make_inputs(Case(T=t, H=2, K=16, V=8), torch.float64, seed=seed)
    cut = min(t - 1, max(1, int(t * split)))
    whole_o, whole_s = _run(torch_chunk_kda, inp)
    first = {n: inp[n][:, :cut] for n in NAMES} | {
        "initial_state": inp["initial_state"],
        "cu_seqlens": None,
    }
    o1, s1 = _run(torch_chunk_kda, first)
    second = {n: inp[n][:, cut:] for n in NAMES} | {"initial_state": s1, "cu_seqlens": None}
    o2, s2 = _run(torch_chunk_kda, second)
    assert_rel("o", torch.cat([o1, o2], dim=1), whole_o, 1e-11)
    assert_rel("final_state", s2, whole_s, 1e-11)


def test_final_state_is_none_unless_asked() -> None:
    inp = make_inputs(Case(T=10), torch.float32)
    _, s = torch_chunk_kda(*(inp[n] for n in NAMES))
    assert s is None


def test_blocked_unit_lower_inverse() -> None:
    gen = torch.Generator().manual_seed(3)
    lower = torch.randn(5, 64, 64, generator=gen, dtype=torch.float64).tril(-1) * 0.2
    eye = torch.eye(64, dtype=torch.float64)
    assert_rel("inverse", _unit_lower_inverse(lower), torch.linalg.inv(eye + lower), 1e-12)


def test_steep_case_exercises_both_diagonal_block_paths() -> None:
    inp = make_inputs(CASES[3], torch.float64)
    g = inp["g"][:, :128]  # two full chunks
    gc = g.reshape(1, 2, 64, *g.shape[2:]).cumsum(2).reshape(1, 2, 4, SUB_CHUNK, *g.shape[2:])
    spread = (gc - gc[:, :, :, SUB_CHUNK // 2 : SUB_CHUNK // 2 + 1]).abs().amax((3, 5))
    wide = int((spread > SAFE_SPAN).sum())
    assert 0 < wide < spread.numel()  # some blocks take the pairwise path, some the GEMM one


@pytest.mark.parametrize(
    "case", [Case(T=300, H=2, K=16, V=8), Case(lens=(129, 300, 7), K=16)], ids=repr
)
def test_segments_carry_the_state_exactly(case: Case, monkeypatch: pytest.MonkeyPatch) -> None:
    from kimmy_swarm.kernels.kda import chunk as chunk_mod

    monkeypatch.setattr(chunk_mod, "SEGMENT", 2 * chunk_mod.CHUNK_SIZE)  # several segments
    inp = make_inputs(case, torch.float64)
    o_ref, s_ref = _run(naive_kda, inp)
    o, s = _run(torch_chunk_kda, inp)
    assert_rel("o", o, o_ref, 1e-11)
    assert_rel("final_state", s, s_ref, 1e-11)
