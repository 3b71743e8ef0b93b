"""The public API of `kernels.kda` is pinned."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

KDA_API = {
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
}


def test_kda_exports_exactly_its_public_api() -> None:
    from kimmy_swarm.kernels import kda as kda_pkg

    assert kda_pkg.__doc__ and set(kda_pkg.__all__) == KDA_API
    for name in kda_pkg.__all__:
        assert getattr(kda_pkg, name) is not None, name


def test_kda_functions_share_one_signature() -> None:
    import inspect

    from kimmy_swarm.kernels.kda import (
        chunk_kda,
        fused_recurrent_kda,
        kda,
        naive_kda,
        torch_chunk_kda,
    )

    want = ["scale", "initial_state", "output_final_state", "use_qk_l2norm", "cu_seqlens"]
    for fn in (naive_kda, torch_chunk_kda, chunk_kda, fused_recurrent_kda, kda):
        params = inspect.signature(fn).parameters
        assert list(params)[:5] == ["q", "k", "v", "g", "beta"], fn.__name__
        kw_only = [n for n, p in params.items() if p.kind is p.KEYWORD_ONLY]
        assert kw_only[:5] == want, fn.__name__


def test_kernels_load_no_swarm_and_raise_their_own_errors() -> None:
    """`kernels/` depends on torch and Triton only: its errors are its own, not the swarm's."""
    import subprocess
    import sys

    from kimmy_swarm.kernels.errors import KDAInputError, KernelError

    code = (
        "import sys, kimmy_swarm.kernels.kda; "
        "print(sorted(m for m in sys.modules if m.split('.')[:2] in "
        "(['kimmy_swarm', p] for p in ('swarm', 'agents', 'rewards', 'model')) "
        "or m.split('.')[0] in ('pydantic', 'asyncio_throttle')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    assert issubclass(KDAInputError, KernelError) and issubclass(KDAInputError, ValueError)
    assert KernelError.__mro__[1] is Exception
