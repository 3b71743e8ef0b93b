"""`kimmy demo` (the README's first command) and `kimmy analyze` on the command line
(`--max-answer-tokens` caps every call and is stored with the run)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kimmy_swarm.agents import demo
from kimmy_swarm.agents.demo import DEMO_DATASETS, DemoOutcome
from kimmy_swarm.cli.app import main


def test_demo_runs_both_pipelines_offline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    outcomes: list[DemoOutcome] = []
    run_demo = demo.run_demo

    def keep(*args: Any, **kwargs: Any) -> DemoOutcome:
        outcomes.append(run_demo(*args, **kwargs))
        return outcomes[-1]

    monkeypatch.setattr(demo, "run_demo", keep)
    assert main(["demo", "--out", str(tmp_path), "--no-store"]) == 0
    printed = capsys.readouterr().out
    analysis, review = outcomes[0].analysis, outcomes[0].review
    assert len(DEMO_DATASETS) >= 10
    assert analysis.analyses == len(DEMO_DATASETS) and analysis.peak_analysts >= 10
    assert analysis.findings > 500 and analysis.pass_rate == 1.0
    assert review.status == "completed" and review.relevant >= 50 and review.subagents >= 60
    assert review.files.claims > 0 and review.pass_rate >= 0.9
    for name in ("report.md", "report.html", "findings.jsonl"):
        assert (tmp_path / "analysis" / name).stat().st_size > 0
    for name in ("review.md", "references.bib", "report.html", "claims.jsonl"):
        assert (tmp_path / "review" / name).stat().st_size > 0
    # the steps, both summaries and the closing line, in order
    lines = printed.splitlines()
    assert lines[0].startswith(f"[1/2] batch analysis of {len(DEMO_DATASETS)} bundled datasets")
    assert "numbers verified by recomputation (100.0%)" in printed
    assert "[2/2] literature review of" in printed
    review_check = [line for line in lines if line.startswith("fact-check: ")][1]
    assert " claims, 0 flagged; " in review_check and "%" not in review_check
    assert "(not stored)" in printed
    assert lines[-1].startswith("demo finished in")
    assert str(tmp_path / "review" / "review.md") in lines[-1]


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
                "--runs-dir",
                str(tmp_path / "runs"),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "1 analyses" in printed and "(100.0%)" in printed
    assert "kimmy show " in printed  # stored: the summary says how to see the run again
    records = [json.loads(x) for x in (out / "findings.jsonl").read_text().splitlines()]
    assert {r["verdict"] for r in records} == {"verified"}
    # an unknown dataset is bad input: one line that lists what exists, nothing runs
    out2 = tmp_path / "b"
    argv = ["analyze", "statsmodels:longly", "sklearn:iris", "--out", str(out2), "--no-store"]
    assert main(argv) == 2
    captured = capsys.readouterr()
    [line] = captured.err.splitlines()
    assert "'statsmodels:longly'" in line and "did you mean statsmodels:longley" in line
    assert "analyses" not in captured.out and not out2.exists()


def test_cli_analyze_missing_file_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    assert main(["analyze", "nope.csv", "--out", str(out), "--no-store"]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("kimmy: error: ")
    assert f"{str(tmp_path / 'nope.csv')!r} does not exist" in line
    assert ".csv, .tsv or .parquet" in line and "'statsmodels:NAME'" in line
    assert not out.exists()  # no empty reports
    # with a good dataset beside it: still bad input, refused before anything runs
    assert main(["analyze", "sklearn:iris", "nope.csv", "--out", str(out), "--no-store"]) == 2
    captured = capsys.readouterr()
    assert len(captured.err.splitlines()) == 1 and "nope.csv" in captured.err
    assert not out.exists() and "analyses" not in captured.out


def test_kimmy_analyze_max_tokens_caps_every_call_and_is_stored(tmp_path: Path) -> None:
    from kimmy_swarm.swarm.store import RunStore
    from tests.support.openai_server import OpenAIServer

    with OpenAIServer() as srv:  # echo(): schema-shaped answers, as a constrained server
        code = main(["analyze", "statsmodels:longley", "--out", str(tmp_path / "a"),
                     "--base-url", srv.base_url, "--model", "test-model",
                     "--max-answer-tokens", "64", "--runs-dir", str(tmp_path / "runs"),
                     "--json"])  # fmt: skip
        asked = [r.body.get("max_tokens") for r in srv.chat_requests]
    assert code in (0, 1)
    assert asked and all(a is not None and a <= 64 for a in asked), asked
    with RunStore(tmp_path / "runs") as store:
        run = store.list_runs()[0]
        settings = json.loads(json.dumps(store.load_run(run.run_id).settings))
    assert settings["pipeline"]["endpoint"]["max_tokens"] == 64
