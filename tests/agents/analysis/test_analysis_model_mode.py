"""The batch analysis in model mode, end to end against a real loopback OpenAI-API server.

The scripted model (`tests.support.analysis_model`) writes pandas code that runs in the
sandbox, answers once with invalid JSON (the repair turn must follow), and reports one
wrong mean, which the fact-checker's recomputation must catch and report.md must flag.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from kimmy_swarm.agents.analysis import AnalysisConfig, AnalysisOutcome, run_analysis
from kimmy_swarm.agents.tools.datasets import load_dataset
from kimmy_swarm.agents.tools.sandbox import sandbox_available
from kimmy_swarm.cli.summaries import print_analysis
from kimmy_swarm.swarm.events import AgentStep, Event
from kimmy_swarm.swarm.llm import OpenAIChat
from tests.support.analysis_model import AnalysisModel, Body, Turn
from tests.support.openai_server import OpenAIServer

DATASETS = ["statsmodels:longley", "sklearn:diabetes", "statsmodels:stackloss"]
BAD_JSON, WRONG_MEAN = "sklearn:diabetes", "statsmodels:longley"

pytestmark = pytest.mark.skipif(
    not sandbox_available()[0], reason=f"no isolated sandbox here: {sandbox_available()[1]}"
)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[AnalysisOutcome, Any]]:
    out = tmp_path_factory.mktemp("model")
    with OpenAIServer(default=AnalysisModel(bad_json=BAD_JSON, wrong_mean=WRONG_MEAN)) as srv:
        model = OpenAIChat(srv.base_url, "test-model")
        # the model calls the tools itself (its code runs in the sandbox): no briefs
        outcome = run_analysis(AnalysisConfig(DATASETS, out=out, model=model, briefs=False))
        yield outcome, srv


def _bodies(srv: Any, role: str) -> list[dict[str, Any]]:
    return [
        r.body for r in srv.chat_requests if f"(role {role})" in r.body["messages"][0]["content"]
    ]


def _is_repair(body: dict[str, Any]) -> bool:
    return "Your answer is invalid" in str(body["messages"][-1].get("content"))


def test_model_mode_writes_the_artifacts(served: tuple[AnalysisOutcome, Any]) -> None:
    outcome, srv = served
    assert not srv.errors
    assert all(p.is_file() for p in outcome.paths.values())
    html = outcome.paths["report.html"].read_text()
    assert "Model-made analysis report" in html  # the model's title, via render_report
    # the model ordered the sections last-first
    assert html.index("statsmodels:stackloss — ") < html.index("statsmodels:longley — ")
    md = outcome.paths["report.md"].read_text()
    assert md.startswith("# Findings (model-written)")
    assert outcome.analyses == 3


def test_analysts_ran_pandas_code_in_the_sandbox(served: tuple[AnalysisOutcome, Any]) -> None:
    outcome, srv = served
    printed: dict[str, dict[str, Any]] = {}
    for body in _bodies(srv, "data_analyst"):
        tools = {t["function"]["name"] for t in body.get("tools") or []}
        # every turn offers the sandbox, except a repair turn: that one only asks for the
        # answer again, constrained to the schema
        assert "run_python" in tools or _is_repair(body)
        dataset = json.loads(body["messages"][1]["content"].split("Inputs:\n")[1])["dataset"]
        for m in body["messages"]:
            if m.get("role") == "tool" and '"stdout"' in m["content"]:
                result = json.loads(m["content"])
                assert result["ok"], result
                printed[dataset] = json.loads(result["stdout"])
    assert set(printed) == set(DATASETS)
    for dataset, out in printed.items():  # what the code printed is what pandas gives
        frame = load_dataset(dataset).frame
        assert out["corr"] == pytest.approx(frame[out["x"]].corr(frame[out["y"]]))
    records = [json.loads(x) for x in outcome.paths["findings.jsonl"].read_text().splitlines()]
    assert {r["statistic"] for r in records} == {"mean", "missing", "corr", "slope", "intercept"}


def test_invalid_answer_gets_the_repair_turn(served: tuple[AnalysisOutcome, Any]) -> None:
    outcome, srv = served
    repairs = [b for b in _bodies(srv, "data_analyst") if _is_repair(b)]
    assert len(repairs) == 1
    assert not repairs[0].get("tools") and repairs[0]["response_format"]["type"] == "json_schema"
    assert BAD_JSON in repairs[0]["messages"][1]["content"]
    assert "oops" in repairs[0]["messages"][-2]["content"]  # the invalid answer, shown back
    records = [json.loads(x) for x in outcome.paths["findings.jsonl"].read_text().splitlines()]
    assert any(r["dataset"] == BAD_JSON and r["verdict"] == "verified" for r in records)


def test_recomputation_catches_the_wrong_number(served: tuple[AnalysisOutcome, Any]) -> None:
    outcome, _ = served
    records = [json.loads(x) for x in outcome.paths["findings.jsonl"].read_text().splitlines()]
    [wrong] = [r for r in records if r["verdict"] == "mismatch"]
    frame = load_dataset(WRONG_MEAN).frame
    col = wrong["columns"][0]
    assert (wrong["dataset"], wrong["statistic"]) == (WRONG_MEAN, "mean")
    assert wrong["recomputed"] == pytest.approx(frame[col].mean())
    assert wrong["value"] == pytest.approx(1.1 * frame[col].mean())
    assert outcome.mismatched == 1 and outcome.verified == outcome.findings - 1
    flagged = [ln for ln in outcome.paths["report.md"].read_text().splitlines() if "MISMATCH" in ln]
    assert len(flagged) == 1 and f"mean of {col}" in flagged[0]
    assert "MISMATCH" in outcome.paths["report.html"].read_text()


def test_model_mode_uses_the_same_tools(served: tuple[AnalysisOutcome, Any]) -> None:
    _, srv = served
    checker = _bodies(srv, "fact_checker")
    assert checker and all(
        {"verify_analysis", "verify_finding"} <= {t["function"]["name"] for t in b["tools"]}
        for b in checker
    )
    calls = [
        c["function"]["name"]
        for b in _bodies(srv, "frontend_engineer")
        for m in b["messages"]
        for c in m.get("tool_calls") or []
    ]
    assert "render_report" in calls


class WeakAnalysisModel(AnalysisModel):
    """A model that answers in prose, never JSON, as the planner and as the analyst of
    `prose_dataset` (its repair turn too); the other sub-agents answer as `AnalysisModel`."""

    def __init__(self, prose_dataset: str) -> None:
        super().__init__(bad_json="(none)", wrong_mean="(none)")
        self.prose_dataset = prose_dataset

    def _planner(self, body: Body, inputs: Body, tools: Body) -> Turn:
        return "I would analyse each dataset in turn.", None

    def _data_analyst(self, body: Body, inputs: Body, tools: Body) -> Turn:
        if inputs["dataset"] == self.prose_dataset:
            return "The data look interesting; the mean is about average.", None
        return super()._data_analyst(body, inputs, tools)


WEAK = ["statsmodels:longley", "statsmodels:stackloss"]


def _weak_run(out: Any, *, fallback: bool) -> tuple[AnalysisOutcome, list[Event]]:
    events: list[Event] = []
    with OpenAIServer(default=WeakAnalysisModel(prose_dataset=WEAK[1])) as srv:
        config = AnalysisConfig(
            WEAK, out=out, model=OpenAIChat(srv.base_url, "test-model"), fallback=fallback,
            briefs=False,
        )  # fmt: skip
        return run_analysis(config, sinks=[_Sink(events)]), events


class _Sink:
    def __init__(self, events: list[Event]) -> None:
        self.handle = events.append


def test_a_weak_model_still_gets_the_analysis_from_the_fallbacks(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    outcome, events = _weak_run(tmp_path, fallback=True)
    records = [json.loads(x) for x in outcome.paths["findings.jsonl"].read_text().splitlines()]
    [prose_id] = {r["analysis"] for r in records if r["dataset"] == WEAK[1]}
    # the planner and the analyst of the prose dataset fell back to their procedures
    assert set(outcome.fallbacks) == {"plan", prose_id}
    assert all(e.startswith("ModelBehaviourError: ") for e in outcome.fallbacks.values())
    fell = {e.subtask_id for e in events if isinstance(e, AgentStep) and e.outcome == "fallback"}
    assert fell == {"plan", prose_id}
    assert outcome.analyses == 2 and outcome.status == "completed", outcome.problems
    for r in records:  # each number says whether a fallen-back sub-agent stands behind it
        assert r["fallbacks"] == ([prose_id] if r["dataset"] == WEAK[1] else [])
    # the model's fact-checker verified the procedure's numbers; the model wrote report.md
    assert any(r["dataset"] == WEAK[1] and r["verdict"] == "verified" for r in records)
    md = outcome.paths["report.md"].read_text()
    assert md.startswith("# Findings (model-written)")
    tail = md.split("## Made by the offline procedure")[1]
    assert "- plan: ModelBehaviourError" in tail and f"- {prose_id}: ModelBehaviourError" in tail
    print_analysis(outcome)
    said = capsys.readouterr().out
    assert f"fallback: 2 of {outcome.subagents} sub-agents fell back" in said
    # every sub-agent's output says who made it: the rest the model
    assert outcome.made_by == {
        "model": outcome.subagents - 2,
        "offline": 0,
        "offline_fallback": 2,
    }
    assert (
        f"model: {outcome.subagents - 2} of {outcome.subagents} sub-agents' outputs made by "
        "the model, 2 by the offline procedure after the model failed"
    ) in said


def test_strict_model_mode_fails_the_plan_as_before(tmp_path: Any) -> None:
    outcome, events = _weak_run(tmp_path, fallback=False)
    assert outcome.fallbacks == {} and outcome.analyses == 0 and outcome.findings == 0
    assert outcome.status != "completed"
    assert any(p.startswith("plan failed (ModelBehaviourError") for p in outcome.problems)
    assert not any(isinstance(e, AgentStep) and e.outcome == "fallback" for e in events)
