"""`benchmarks/bench_orchestrator.py --quick` runs end to end: both agents answer the wide
task against the simulated model, the swarm in fewer steps, with equal F1 (no timings
asserted: the figures are the benchmark's to report)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.markdown_tables import table_rows

ROOT = Path(__file__).resolve().parents[2]
PAPERS = ROOT.parent / "shared" / "data" / "papers" / "iclr2017_citations_in_2018.json"


@pytest.mark.skipif(not PAPERS.is_file(), reason="../shared/data/papers is absent")
def test_quick_run_reports_both_agents() -> None:
    out = subprocess.run(
        [sys.executable, "benchmarks/bench_orchestrator.py", "--quick"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    rows = {r[0]: r[1:] for r in table_rows(out.stdout, "| measure |")}
    assert rows["F1 of the answer"][:2] == ["1.000", "1.000"]
    serial, swarm = rows["steps (model calls on the critical path)"][:2]
    assert int(swarm) < int(serial)
    assert rows["sub-agents / orchestrator turns"][1] == "8 / 2"
