"""Shared test setup: the repository root on `sys.path`, so `swarm` and `tests.support` import
without an install."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


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
