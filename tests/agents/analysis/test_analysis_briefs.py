"""The batch analysis with briefs (`agents.analysis.briefs`), over a real loopback
OpenAI-API server: every sub-agent answers from its brief in one turn, under the schema made
for its subtask, and every output is the model's — the numbers still the tools'."""

from __future__ import annotations

import json
from pathlib import Path

from kimmy_swarm.agents.analysis import AnalysisConfig, run_analysis
from kimmy_swarm.swarm.llm import OpenAIChat
from tests.support.analysis_brief_model import SUMMARY, TITLE, BriefedAnalysisModel
from tests.support.openai_server import OpenAIServer

DATASETS = ["statsmodels:longley", "statsmodels:stackloss"]


def test_every_subagent_answers_from_its_brief(tmp_path: Path) -> None:
    with OpenAIServer(default=BriefedAnalysisModel()) as srv:
        model = OpenAIChat(srv.base_url, "test-model")
        outcome = run_analysis(AnalysisConfig(DATASETS, out=tmp_path, model=model))
        requests = [r.body for r in srv.chat_requests]
    assert not srv.errors and outcome.status == "completed", outcome.problems
    total = outcome.subagents
    assert outcome.made_by == {"model": total, "offline": 0, "offline_fallback": 0}
    assert len(requests) == total  # one turn each: no tool turn, no repair
    assert all(not r.get("tools") for r in requests)
    assert all(r["response_format"]["type"] == "json_schema" for r in requests)

    records = [json.loads(x) for x in outcome.paths["findings.jsonl"].read_text().splitlines()]
    assert records and all(r["verdict"] == "verified" for r in records)  # the tools' numbers
    html = outcome.paths["report.html"].read_text()
    assert TITLE in html  # rendered from the model's title and order (last first)
    assert html.index("statsmodels:stackloss — ") < html.index("statsmodels:longley — ")
    md = outcome.paths["report.md"].read_text()
    assert md.startswith("# Findings (model-written)")
    assert md.count(SUMMARY) == len(DATASETS)  # each analyst's answer, as the model wrote it
