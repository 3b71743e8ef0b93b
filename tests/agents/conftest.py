"""Pipeline runs started from the command line are stored in the test's own folder."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _runs_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    runs = tmp_path / "kimmy-runs"
    monkeypatch.setenv("KIMMY_RUNS_DIR", str(runs))
    monkeypatch.delenv("KIMMY_BASE_URL", raising=False)
    return runs
