"""`kimmy analyze` of a partial run (issue 37): one analysis fails, and nothing reads as a
whole success — no pass-rate percentage on stdout, no `ok` badge over report.html's summary,
and report.md's overview says that an analysis reported nothing."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from kimmy_swarm.agents.analysis import roles
from kimmy_swarm.cli.app import main


def test_a_partial_run_claims_no_whole_success(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    analyze = roles.analyze_dataset

    def spector_fails(run: Any) -> Any:
        if run.inputs["dataset"] == "statsmodels:spector":
            raise RuntimeError("the analyst crashed")
        return analyze(run)

    monkeypatch.setattr(roles, "analyze_dataset", spector_fails)
    out = tmp_path / "out"
    argv = ["analyze", "statsmodels:spector", "statsmodels:longley", "--no-store"]
    assert main([*argv, "--out", str(out)]) == 1
    printed = capsys.readouterr().out
    [check] = [line for line in printed.splitlines() if line.startswith("fact-check:")]
    assert re.fullmatch(
        r"fact-check: (\d+)/\1 numbers verified by recomputation, 0 mismatched, "
        r"0 unverifiable \(run partial: see the problems\)",
        check,
    ), check  # every reported number checks out, but not every analysis reported
    assert "%" not in check
    assert "(status partial)" in printed
    assert "problem: analyze:1 failed (RuntimeError: the analyst crashed)" in printed
    html = (out / "report.html").read_text()
    assert '>Findings across datasets <span class="badge badge-warning">warning</span>' in html
    assert 'badge-ok">ok</span></li>' in html  # longley's own section did succeed
    md = (out / "report.md").read_text()
    assert "1 of the analyses failed and reported nothing (see Problems)." in md
