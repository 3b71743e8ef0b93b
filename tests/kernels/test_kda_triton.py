"""The Triton kernels (run by Triton's CPU interpreter) against the reference: outputs, final
states and every gradient, per dtype; packed input; state passing; the decode kernel."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from kimmy_swarm.kernels.kda import KDAInputError, naive_kda  # noqa: E402
from kimmy_swarm.kernels.kda.triton_chunk import triton_chunk_kda  # noqa: E402
from kimmy_swarm.kernels.kda.triton_recurrent import triton_fused_recurrent_kda  # noqa: E402
from tests.kernels.kda_cases import Case, assert_rel, make_inputs, naive_grads, tol  # noqa: E402

NAMES = ("q", "k", "v", "g", "beta")

CASES = [
    (Case(B=2, T=100, H=2, K=32, V=16), torch.float32),  # T % 64 ≠ 0, H > 1, K ≠ V
    (Case(B=1, T=37, H=1, K=16, V=48, h0=False), torch.float32),  # T < 64, no initial state
    (Case(B=1, T=130, H=1, K=24, V=40, gate="steep"), torch.float32),  # K, V not powers of 2
    (Case(lens=(30, 70, 5), H=2, K=16, V=32), torch.float32),  # packed variable length
    (Case(B=1, T=80, H=2, K=32, V=32), torch.bfloat16),
]


def _to_ref(inp: dict) -> dict:
    return {
        n: (x.double() if x is not None and x.is_floating_point() else x) for n, x in inp.items()
    }


@pytest.mark.parametrize(("case", "dtype"), CASES, ids=lambda x: repr(x))
def test_triton_chunk_forward_and_gradients_equal_naive(case: Case, dtype: torch.dtype) -> None:
    inp = make_inputs(case, dtype)
    o_ref, s_ref, g_ref = naive_grads(naive_kda, _to_ref(inp))
    o, s, grads = naive_grads(triton_chunk_kda, inp)
    assert o.dtype == dtype and s.dtype == torch.float32
    assert_rel("o", o, o_ref, tol(dtype))
    assert_rel("final_state", s, s_ref, tol(dtype))
    assert set(grads) == set(g_ref)
    for name, want in g_ref.items():
        assert grads[name].dtype == inp[name].dtype
        assert_rel(f"d{name}", grads[name], want, tol(dtype, grad=True))


def test_triton_chunk_l2norm_and_scale_options() -> None:
    inp = make_inputs(Case(T=40, H=1, K=16, V=16), torch.float32)
    inp["q"], inp["k"] = inp["q"] * 3.0, inp["k"] * 0.5
    o_ref, _, g_ref = naive_grads(naive_kda, _to_ref(inp), scale=0.3, use_qk_l2norm=True)
    o, _, grads = naive_grads(triton_chunk_kda, inp, scale=0.3, use_qk_l2norm=True)
    assert_rel("o", o, o_ref, tol(torch.float32))
    for name in ("q", "k"):
        assert_rel(f"d{name}", grads[name], g_ref[name], tol(torch.float32, grad=True))


def test_triton_chunk_state_passing_equals_one_run() -> None:
    inp = make_inputs(Case(T=90, H=1, K=16, V=16), torch.float32)
    h0 = inp["initial_state"]
    whole_o, whole_s = triton_chunk_kda(
        *(inp[n] for n in NAMES), initial_state=h0, output_final_state=True
    )
    first = (inp[n][:, :50] for n in NAMES)
    o1, s1 = triton_chunk_kda(*first, initial_state=h0, output_final_state=True)
    second = (inp[n][:, 50:] for n in NAMES)
    o2, s2 = triton_chunk_kda(*second, initial_state=s1, output_final_state=True)
    assert_rel("o", torch.cat([o1, o2], dim=1), whole_o, 1e-6)
    assert_rel("final_state", s2, whole_s, 1e-6)


@pytest.mark.parametrize("l2", [False, True])
def test_fused_recurrent_equals_naive_and_updates_state_in_place(l2: bool) -> None:
    inp = make_inputs(Case(lens=(1, 3, 2, 1), H=2, K=32, V=24), torch.float32)
    inp["q"], inp["k"] = inp["q"] * 2.0, inp["k"] * 2.0
    ref = _to_ref(inp)
    cu = inp["cu_seqlens"]
    o_ref, s_ref = naive_kda(
        *(ref[n] for n in NAMES),
        initial_state=ref["initial_state"],
        output_final_state=True,
        use_qk_l2norm=l2,
        cu_seqlens=cu,
    )
    state = inp["initial_state"].clone()
    o, s = triton_fused_recurrent_kda(
        *(inp[n] for n in NAMES),
        initial_state=state,
        use_qk_l2norm=l2,
        cu_seqlens=cu,
        inplace_state=True,
    )
    assert s is state
    assert_rel("o", o, o_ref, tol(torch.float32))
    assert_rel("state", state, s_ref, tol(torch.float32))


def test_fused_recurrent_batch_decode_step_without_state_in_place() -> None:
    inp = make_inputs(Case(B=6, T=1, H=2, K=16, V=16), torch.bfloat16)
    ref = _to_ref(inp)
    o_ref, s_ref = naive_kda(
        *(ref[n] for n in NAMES), initial_state=ref["initial_state"], output_final_state=True
    )
    o, s = triton_fused_recurrent_kda(
        *(inp[n] for n in NAMES), initial_state=inp["initial_state"], output_final_state=True
    )
    assert o.dtype == torch.bfloat16 and s.dtype == torch.float32
    assert_rel("o", o, o_ref, tol(torch.bfloat16))
    assert_rel("state", s, s_ref, tol(torch.bfloat16))


def test_fused_recurrent_refuses_gradients() -> None:
    inp = make_inputs(Case(T=2, h0=False), torch.float32)
    q = inp["q"].requires_grad_()
    with pytest.raises(KDAInputError, match="no backward"):
        triton_fused_recurrent_kda(q, *(inp[n] for n in NAMES[1:]))
