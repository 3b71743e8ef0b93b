"""The dispatcher picks the right path, and each mode's public function runs its backend."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from kimmy_swarm.kernels.kda import (  # noqa: E402
    KDAInputError,
    KDAPath,
    chunk_kda,
    fused_recurrent_kda,
    kda,
    naive_kda,
    select_kda_path,
    torch_chunk_kda,
)
from tests.kernels.kda_cases import Case, make_inputs  # noqa: E402

NAMES = ("q", "k", "v", "g", "beta")


@pytest.mark.parametrize(
    ("device", "length", "grad", "backend", "want"),
    [
        ("cuda", 1, False, "auto", KDAPath.TRITON_RECURRENT),
        ("cuda", 64, False, "auto", KDAPath.TRITON_RECURRENT),
        ("cuda", 65, False, "auto", KDAPath.TRITON_CHUNK),
        ("cuda", 1, True, "auto", KDAPath.TRITON_CHUNK),
        ("cuda", 4096, False, "torch", KDAPath.TORCH_CHUNK),
        ("cpu", 1, False, "auto", KDAPath.NAIVE),
        ("cpu", 4, False, "auto", KDAPath.NAIVE),
        ("cpu", 5, False, "auto", KDAPath.TORCH_CHUNK),  # the Python loop loses from here
        ("cpu", 4096, False, "auto", KDAPath.TORCH_CHUNK),
        ("cpu", 8, True, "auto", KDAPath.TORCH_CHUNK),
        ("cpu", 4096, True, "triton", KDAPath.TRITON_CHUNK),  # the interpreter, as in tests
    ],
)
def test_select_path(device: str, length: int, grad: bool, backend: str, want: KDAPath) -> None:
    if device == "cuda" or backend == "triton":
        pytest.importorskip("triton")
    got = select_kda_path(device_type=device, max_seq_len=length, needs_grad=grad, backend=backend)
    assert got is want


def test_unknown_backend_and_unusable_triton_are_rejected(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(KDAInputError, match="'cutlass' is not one of"):
        select_kda_path(device_type="cpu", max_seq_len=8, needs_grad=False, backend="cutlass")
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    with pytest.raises(KDAInputError, match="backend='triton' needs Triton"):
        select_kda_path(device_type="cpu", max_seq_len=8, needs_grad=False, backend="triton")


def test_kda_on_cpu_runs_the_path_it_selects() -> None:
    long = make_inputs(Case(T=100), torch.float32)
    args = [long[n] for n in NAMES]
    o, _ = kda(*args, initial_state=long["initial_state"])
    o_chunk, _ = torch_chunk_kda(*args, initial_state=long["initial_state"])
    assert torch.equal(o, o_chunk)
    short = make_inputs(Case(T=3), torch.float32)
    args = [short[n] for n in NAMES]
    o, _ = kda(*args, initial_state=short["initial_state"])
    o_naive, _ = naive_kda(*args, initial_state=short["initial_state"])
    assert torch.equal(o, o_naive)
    leaf = short["q"].clone().requires_grad_()
    o, _ = kda(leaf, *args[1:], initial_state=short["initial_state"])  # training: chunked
    o_chunk, _ = torch_chunk_kda(leaf, *args[1:], initial_state=short["initial_state"])
    assert torch.equal(o, o_chunk) and o.requires_grad


def test_mode_functions_on_cpu_use_pytorch_and_update_state_in_place() -> None:
    inp = make_inputs(Case(T=5, H=2, K=8, V=8), torch.float32)
    args = [inp[n] for n in NAMES]
    o, _ = chunk_kda(*args)
    assert torch.equal(o, torch_chunk_kda(*args)[0])
    state = inp["initial_state"].clone()
    o, s = fused_recurrent_kda(*args, initial_state=state, inplace_state=True)
    o_ref, s_ref = naive_kda(*args, initial_state=inp["initial_state"], output_final_state=True)
    assert s is state and torch.equal(state, s_ref) and torch.equal(o, o_ref)
    with pytest.raises(KDAInputError, match="needs an initial_state"):
        fused_recurrent_kda(*args, inplace_state=True)


def test_kda_packed_input_measures_the_longest_sequence() -> None:
    inp = make_inputs(Case(lens=(3, 70), H=1, K=8, V=8), torch.float32)
    args = [inp[n] for n in NAMES]
    o, _ = kda(*args, cu_seqlens=inp["cu_seqlens"])  # 70 > 64 tokens: chunked
    assert torch.equal(o, torch_chunk_kda(*args, cu_seqlens=inp["cu_seqlens"])[0])
