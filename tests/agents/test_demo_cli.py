"""`kimmy demo` (the README's first command) and `kimmy analyze` on the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agents.demo import DEMO_DATASETS, run_demo
from swarm.cli import main


def test_demo_runs_both_pipelines_offline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outcome = run_demo(tmp_path)
    printed = capsys.readouterr().out
    analysis, review = outcome.analysis, outcome.review
    assert len(DEMO_DATASETS) >= 10
    assert analysis.analyses == len(DEMO_DATASETS) and analysis.peak_analysts >= 10
    assert analysis.findings > 500 and analysis.pass_rate == 1.0
    assert review.status == "completed" and review.relevant >= 50 and review.subagents >= 60
    assert review.files.claims > 0 and review.pass_rate >= 0.9
    for name in ("report.md", "report.html", "findings.jsonl"):
        assert (tmp_path / "analysis" / name).stat().st_size > 0
    for name in ("review.md", "references.bib", "report.html", "claims.jsonl"):
        assert (tmp_path / "review" / name).stat().st_size > 0
    assert "numbers verified by recomputation (100.0%)" in printed
    assert "claims supported" in printed and "demo finished in" in printed
    assert str(tmp_path / "review" / "review.md") in printed


def test_cli_analyze_good_and_partial(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "a"
    assert (
        main(
            [
                "analyze",
                "statsmodels:longley",
                "--question",
                "What drives TOTEMP?",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "1 analyses" in printed and "(100.0%)" in printed
    records = [json.loads(x) for x in (out / "findings.jsonl").read_text().splitlines()]
    assert {r["verdict"] for r in records} == {"verified"}
    # an unknown dataset: the message lists what exists, the other dataset still runs
    out2 = tmp_path / "b"
    assert main(["analyze", "statsmodels:longly", "sklearn:iris", "--out", str(out2)]) == 1
    printed = capsys.readouterr().out
    assert "statsmodels:longley" in printed and "1 analyses" in printed
    assert (out2 / "report.md").exists()
