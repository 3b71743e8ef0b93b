"""`benchmarks/bench_orchestrator.py --quick` runs end to end: the serial agent and both
swarms (listing ids and rows, and by reference) answer the wide task against the simulated
model, the swarms in fewer steps, with equal F1 (no timings asserted: the figures are the
benchmark's to report)."""

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
    assert rows["F1 of the answer"][:3] == ["1.000", "1.000", "1.000"]
    serial, listing, by_reference = rows["steps (model calls on the critical path)"][:3]
    assert int(listing) < int(serial) and int(by_reference) < int(serial)
    assert rows["sub-agents / orchestrator turns"][1:3] == ["8 / 2", "8 / 2"]
