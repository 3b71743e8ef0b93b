"""Both pipelines in model mode against a real third-party server and a weak real model:
llama.cpp's OpenAI-compatible server (llama-cpp-python, built by `make llama-cpp`) serving
SmolLM2-135M-Instruct, as a user runs them: `kimmy review` with the plain ChatML format
(no native tools: the server enforces an answer's schema only in its own `json_object`
format) and `kimmy analyze` with ChatML function calling (a Jinja template over every
message). Each run finishes with non-empty artifacts, whatever the model managed; every
sub-agent's output says who made it, and the run's line, the outputs and the events agree
on how many fell back to the offline procedure.

Sizes are small (3 papers, 1 dataset, answers cut at 256 tokens, prompts at 2,048):
SmolLM2 answers a few dozen tokens a second on a CI core.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from kimmy_swarm.cli.app import main
from kimmy_swarm.swarm.events import AgentStep
from kimmy_swarm.swarm.store import RunStore
from tests.support.llama_cpp_server import (
    CHATML,
    CHATML_TOOLS,
    llama_cpp_server,
    llama_cpp_unavailable,
)

ICLR_JSON = (
    Path(__file__).resolve().parents[3] / "shared" / "data" / "papers"
    / "iclr2017_citations_in_2018.json"
)  # fmt: skip

pytestmark = pytest.mark.skipif(
    llama_cpp_unavailable() is not None, reason=str(llama_cpp_unavailable())
)

#: Answers cut at 256 tokens, prompts fit in 2,048 (upstream results digested to fit).
SMALL = ("--max-answer-tokens", "256", "--context-tokens", "2048")
#: The line a model-mode run prints: how many outputs the model made, how many fell back.
MADE = re.compile(
    r"model: (\d+) of (\d+) sub-agents' outputs made by the model, (\d+) by the offline "
    r"procedure after the model failed"
)


def _made_by(runs: Path) -> tuple[dict[str, str | None], set[str]]:
    """Who made each sub-agent's stored output, and the sub-agents whose events record a
    fallback."""
    with RunStore(runs) as store:
        run_id = store.list_runs()[0].run_id
        stored = store.load_run(run_id)
        steps = list(store.events(run_id, types=["agent_step"]))
    made = {
        sid: (r.output or {}).get("made_by") if isinstance(r.output, dict) else None
        for sid, r in stored.results.items()
    }
    fell = {e.subtask_id for e in steps if isinstance(e, AgentStep) and e.outcome == "fallback"}
    return made, fell


def _counted(said: str, runs: Path) -> tuple[int, int]:
    """Check that every fallback is counted alike by the printed line, the outputs and the
    events; (model-made, fallen back)."""
    made, fell = _made_by(runs)
    assert set(made.values()) <= {"model", "offline_fallback"}, made  # each says who
    fallen = {sid for sid, who in made.items() if who == "offline_fallback"}
    assert fallen == fell
    match = MADE.search(said)
    assert match is not None, said
    by_model, total, by_fallback = map(int, match.groups())
    assert total == len(made) and by_fallback == len(fallen) and by_model + by_fallback == total
    if fallen:
        assert f"fallback: {len(fallen)} of {total} sub-agents fell back" in said
    return by_model, by_fallback


def test_review_with_llama_cpp_chatml_writes_a_review(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if not ICLR_JSON.exists():
        pytest.skip(f"the shared corpus is not at {ICLR_JSON}")
    out, runs = tmp_path / "review", tmp_path / "runs"
    with llama_cpp_server(CHATML) as url:
        code = main(["review", str(ICLR_JSON), "--max-papers", "3", "--out", str(out),
                     "--base-url", url, "--model", "smollm2", *SMALL,
                     "--runs-dir", str(runs)])  # fmt: skip
    said = capsys.readouterr().out
    assert code == 0, said
    # the server enforces a schema only in its own format, and the probe found it
    assert "structured output yes (json_object) (probed)" in said
    review = (out / "review.md").read_text()
    assert review.startswith("# ") and len(review) > 500
    claims = [json.loads(x) for x in (out / "claims.jsonl").read_text().splitlines()]
    assert claims and all(c["claim"] and c["cited"] for c in claims)
    assert (out / "references.bib").read_text().count("@") >= 3
    _counted(said, runs)


def test_analysis_with_llama_cpp_function_calling_writes_a_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, runs = tmp_path / "analysis", tmp_path / "runs"
    with llama_cpp_server(CHATML_TOOLS) as url:
        code = main(["analyze", "statsmodels:longley", "--out", str(out),
                     "--base-url", url, "--model", "smollm2", *SMALL,
                     "--runs-dir", str(runs)])  # fmt: skip
    said = capsys.readouterr().out
    assert code == 0, said
    assert "analysis: 1 analyses" in said
    report = (out / "report.md").read_text()
    assert "longley" in report.lower() and len(report) > 300
    findings = [json.loads(x) for x in (out / "findings.jsonl").read_text().splitlines()]
    assert findings and any(f["verdict"] == "verified" for f in findings)
    _counted(said, runs)
