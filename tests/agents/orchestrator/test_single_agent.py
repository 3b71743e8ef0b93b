"""The single-agent baseline of the wide-task benchmark: told how to search and read (as the
orchestrator is), told the corpus's fields, and answering the rows of what it found — not
one row per "document you are given", which it never is."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kimmy_swarm.agents.orchestrator.single_agent import run_single
from kimmy_swarm.agents.widesearch import WideTask, grade_answer, load_papers
from kimmy_swarm.swarm.llm.scripted import ScriptedChat
from kimmy_swarm.swarm.llm.types import ChatResponse, FunctionCall, ToolCall

RECORDS = [
    {"id": "p1", "title": "Deep RL at scale", "abstract": "Reinforcement learning for games.",
     "authors": ["Ann Lee", "Bo Chen"], "decision": "Accept (Oral)", "citations": 120},
    {"id": "p2", "title": "Dropout revisited", "abstract": "Dropout regularizes nets.",
     "authors": ["Di Erb", "Ed Fox"], "decision": "Accept (Poster)", "citations": 40},
    {"id": "p3", "title": "Policy search", "abstract": "Reinforcement learning with dropout.",
     "authors": ["Cy Dunn"], "decision": "Reject", "citations": 3},
]  # fmt: skip


def _call(name: str, arguments: dict[str, Any]) -> ChatResponse:
    return ChatResponse(
        tool_calls=[ToolCall(id=name, function=FunctionCall(name=name,
                                                            arguments=json.dumps(arguments)))]
    )  # fmt: skip


def test_the_single_agent_is_told_how_to_search_and_answers_the_rows_it_found(
    tmp_path: Path,
) -> None:
    corpus = tmp_path / "papers.json"
    corpus.write_text(json.dumps(RECORDS))
    task = WideTask(name="accepted_dropout", phrases=("dropout",), decision="Accept",
                    columns=("title", "first_author", "citations"))  # fmt: skip
    seen: dict[str, Any] = {}

    def search(messages: list[dict[str, Any]], options: dict[str, Any]) -> ChatResponse:
        seen["system"], seen["task"] = messages[0]["content"], messages[1]["content"]
        seen["choices"] = [options.get("tool_choice")]
        where = [{"field": "decision", "op": "contains", "value": "Accept"}]
        return _call("search", {"query": "'dropout'", "where": where, "limit": 100})

    def read(messages: list[dict[str, Any]], options: dict[str, Any]) -> ChatResponse:
        seen["found"] = json.loads(messages[-1]["content"])
        seen["choices"].append(options.get("tool_choice"))
        return _call("read_metadata", {"doc_id": "p2"})

    def answer(messages: list[dict[str, Any]], options: dict[str, Any]) -> str:
        seen["metadata"] = messages[-1]["content"]
        rows = [{"meets": True, "title": "Dropout revisited", "first_author": "Di Erb",
                 "citations": 40}]  # fmt: skip
        return json.dumps({"rows": rows})

    model = ScriptedChat([search, read, answer])
    outcome = run_single("Accepted papers on dropout, with first author and citations.", task,
                         corpus, model, runs_dir=tmp_path / "runs")  # fmt: skip
    model.assert_consumed()

    search_only = {"type": "function", "function": {"name": "search"}}
    assert seen["choices"] == [search_only, None]  # it must search first, then may answer
    assert "search(query, where, limit=100)" in seen["system"]
    assert "each document you are given" not in seen["system"]  # it is given none
    assert "one row for each document that meets the goal" in seen["system"]
    assert seen["task"].count("Corpus: 3 documents.") == 1
    assert "- decision (one of: " in seen["task"]
    assert "Columns of each row: title, first_author, citations" in seen["task"]
    assert [d["id"] for d in seen["found"]["shown"]] == ["p2"]  # the runtime kept Accept only
    assert "Di Erb" in seen["metadata"] or "40" in seen["metadata"]
    assert outcome.status == "completed" and outcome.error is None
    score = grade_answer(task, outcome.answer, task.ground_truth(load_papers(corpus)))
    assert (score.f1, score.cell_accuracy) == (1.0, 1.0)
