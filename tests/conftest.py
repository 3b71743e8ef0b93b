"""Shared test setup: the repository root on `sys.path`, so `swarm` and `tests.support` import
without an install; Triton's interpreter switched on before anything imports triton."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# The kernel tests run Triton on the CPU, in its interpreter, which triton reads once, when
# it is first imported. Test modules collected before tests/kernels (TRL's, whose import
# pulls in triton through transformers) would otherwise import it with the interpreter off,
# and every kernel test then fails with "Cannot call @triton.jit'd outside of the scope of
# a kernel".
os.environ["TRITON_INTERPRET"] = "1"


@pytest.fixture(scope="session")
def iclr_attention_review(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any]:
    """One real offline review of 20 ICLR 2017 papers on attention, stored: (trajectory,
    outcome), shared by the tests that grade or judge a real pipeline run."""
    from agents.review import ReviewConfig, run_review
    from rewards.trajectory import load_trajectory
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
