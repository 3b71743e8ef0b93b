"""Shared test setup: the `tests` and `benchmarks` folders importable without the repository
root on `sys.path`; Triton's interpreter switched on before anything imports triton."""

from __future__ import annotations

import os
import signal
import sys
import types
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
# The project imports as `kimmy_swarm.…` (installed, editable or not). The repository root
# stays off `sys.path`: its top-level folders (`kernels`, `agents`, `model`, …) would shadow
# other distributions' packages of those names, such as Hugging Face's `kernels`, which
# transformers imports. Only the folders that are not installed are made importable, each
# from its own folder: `tests` (`tests.support`) and `benchmarks` (the scripts under test).
for _name, _doc in (
    ("tests", "The test suite's shared modules (`tests.support`)."),
    ("benchmarks", "The benchmark scripts."),
):
    if _name not in sys.modules:
        _package = types.ModuleType(_name, _doc)
        _package.__path__ = [str(ROOT / _name)]
        sys.modules[_name] = _package

# The kernel tests run Triton on the CPU, in its interpreter, which triton reads once, when
# it is first imported. Test modules collected before tests/kernels (TRL's, whose import
# pulls in triton through transformers) would otherwise import it with the interpreter off,
# and every kernel test then fails with "Cannot call @triton.jit'd outside of the scope of
# a kernel".
os.environ["TRITON_INTERPRET"] = "1"

# The Ctrl-C tests send SIGINT to the test process and to the `kimmy` processes it starts.
# A suite started in the background of a script (`nohup make test &`) inherits SIGINT
# ignored, as background jobs do, and so would every process it starts: those tests would
# wait out their timeouts and fail. The suite takes Ctrl-C back, as an interactive one has.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session")
def iclr_attention_review(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any]:
    """One real offline review of 20 ICLR 2017 papers on attention, stored: (trajectory,
    outcome), shared by the tests that grade or judge a real pipeline run."""
    from kimmy_swarm.agents.review import ReviewConfig, run_review
    from kimmy_swarm.rewards.trajectory import load_trajectory
    from tests.agents.review.conftest import ICLR_JSON

    if not ICLR_JSON.exists():
        pytest.skip(f"the shared corpus is not at {ICLR_JSON}")
    tmp = tmp_path_factory.mktemp("review")
    out = run_review(
        ReviewConfig(
            corpus=ICLR_JSON, topic="attention", out=tmp, runs_dir=tmp / "r", max_papers=20
        )
    )
    return load_trajectory(out.run_id, tmp / "r"), out
