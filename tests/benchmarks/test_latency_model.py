"""The simulated model server of the wide-search benchmark: its latency floor, and the rules
it answers by (orchestrator turns, sub-agents, serial calls), through our own HTTP client."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from benchmarks._latency_model import Latency, LatencyModelServer, serial_messages
from kimmy_swarm.agents.widesearch import (
    WIDE_TASKS,
    ExtractedRows,
    Paper,
    grade_answer,
    load_papers,
)
from kimmy_swarm.swarm.llm import OpenAIChat

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
ICLR_JSON = SHARED / "data" / "papers" / "iclr2017_citations_in_2018.json"
TASK = WIDE_TASKS["rl_papers"]
FAST = Latency(ttft_s=0.0, tokens_per_s=1e9)
ORCHESTRATOR_TOOLS = [
    {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
    for n in ("create_subagent", "assign_task", "wait", "read_result", "finish")
]


@pytest.fixture(scope="module")
def papers() -> list[Paper]:
    if not ICLR_JSON.exists():
        pytest.skip(f"the shared corpus is not at {ICLR_JSON}")
    return load_papers(ICLR_JSON)


def _args(call: Any) -> dict[str, Any]:
    assert isinstance(call.function.arguments, str)  # a JSON string, as OpenAI sends it
    return json.loads(call.function.arguments)


async def test_a_call_takes_at_least_the_time_to_first_token(papers: list[Paper]) -> None:
    rl = next(p for p in papers if TASK.matches(p))
    with LatencyModelServer(papers, TASK, latency=Latency(ttft_s=0.2)) as srv:
        async with OpenAIChat(srv.base_url, srv.model_id) as model:
            t0 = time.perf_counter()
            response = await model.chat(serial_messages(TASK, rl.id))
            elapsed = time.perf_counter() - t0
    assert elapsed >= 0.2
    assert json.loads(response.content or "") == {"rows": [TASK.row(rl)]}
    assert response.usage.completion_tokens == srv.completion_tokens > 0
    assert srv.calls == {"serial": 1}
    assert srv.latency.seconds(40) == pytest.approx(0.2 + 1.0)  # 40 tokens at 40 tok/s


def _subagent_messages(task_text: str, inputs: dict[str, Any]) -> list[dict[str, str]]:
    """What `agents.loop.task_messages` sends a created sub-agent."""
    return [
        {"role": "system", "content": "...\n\nYou are a sub-agent (role extractor) in a swarm."},
        {"role": "user", "content": f"{task_text}\n\nInputs:\n{json.dumps(inputs)}"},
    ]


async def test_orchestrator_fans_out_then_reads_and_merges_the_rows(papers: list[Paper]) -> None:
    ids = [p.id for p in papers[:120]]
    goal = {"role": "user", "content": f"{TASK.goal()}\n\nDocuments: {', '.join(ids)}"}
    messages: list[dict[str, Any]] = [{"role": "system", "content": "orchestrate"}, goal]
    schema = {"type": "json_schema", "json_schema": {"name": "ExtractedRows",
              "schema": ExtractedRows.model_json_schema()}}  # fmt: skip
    with LatencyModelServer(papers[:120], TASK, latency=FAST, subagents=4) as srv:
        async with OpenAIChat(srv.base_url, srv.model_id) as model:
            first = await model.chat(messages, tools=ORCHESTRATOR_TOOLS)
            names = [c.function.name for c in first.tool_calls]
            assert names == ["create_subagent"] + ["assign_task"] * 4 + ["wait"]
            created = _args(first.tool_calls[0])
            assert created["name"] == "extractor" and created["output_schema"]["type"] == "object"
            assigned = [_args(c) for c in first.tool_calls[1:5]]
            assert [d for a in assigned for d in a["inputs"]["doc_ids"]] == ids  # slices
            assert {len(a["inputs"]["doc_ids"]) for a in assigned} == {30}
            assert _args(first.tool_calls[5]) == {"ids": "all", "timeout_s": None}

            # Run each assignment as the sub-agent it becomes (rule (b)).
            outputs = []
            for a in assigned:
                answer = await model.chat(
                    _subagent_messages(a["task"], a["inputs"]), response_format=schema
                )
                outputs.append(answer.content or "")
            messages.append(first.message.to_openai())
            for i, call in enumerate(first.tool_calls):
                content: Any = {"ok": True}
                if call.function.name == "assign_task":
                    content = {"task_id": f"t{i}"}
                if call.function.name == "wait":  # digests: too short to hold the rows
                    content = {
                        "results": [{"id": f"t{k + 1}", "agent": "extractor", "status": "done",
                                     "output": out[:20] + "…", "error": None}
                                    for k, out in enumerate(outputs)],
                        "pending": [],
                    }  # fmt: skip
                messages.append(
                    {"role": "tool", "tool_call_id": call.id, "content": json.dumps(content)}
                )

            second = await model.chat(messages, tools=ORCHESTRATOR_TOOLS)
            reads = [_args(c) for c in second.tool_calls]
            assert [c.function.name for c in second.tool_calls] == ["read_result"] * 4
            assert [r["id"] for r in reads] == ["t1", "t2", "t3", "t4"]
            messages.append(second.message.to_openai())
            for call, r in zip(second.tool_calls, reads, strict=True):
                full = outputs[int(r["id"][1:]) - 1]
                page = {"id": r["id"], "offset": 0, "text": full, "next_offset": None}
                messages.append(
                    {"role": "tool", "tool_call_id": call.id, "content": json.dumps(page)}
                )

            third = await model.chat(messages, tools=ORCHESTRATOR_TOOLS)
    assert [c.function.name for c in third.tool_calls] == ["finish"]
    truth = TASK.ground_truth(papers[:120])
    assert truth  # the slice holds RL papers
    score = grade_answer(TASK, _args(third.tool_calls[0])["answer"], truth)
    assert (score.precision, score.recall, score.f1) == (1.0, 1.0, 1.0)
    assert srv.calls == {"orchestrator": 3, "subagent": 4}
    assert not srv.errors


async def test_with_fan_out_offered_it_lists_no_id_and_finishes_by_reference(
    papers: list[Paper],
) -> None:
    tools = [*ORCHESTRATOR_TOOLS, {"type": "function", "function": {
        "name": "fan_out", "parameters": {"type": "object"}}}]  # fmt: skip
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "orchestrate"}, {"role": "user", "content": TASK.goal()}
    ]  # fmt: skip
    with LatencyModelServer(papers[:40], TASK, latency=FAST, subagents=4) as srv:
        async with OpenAIChat(srv.base_url, srv.model_id) as model:
            first = await model.chat(messages, tools=tools)
            assert [c.function.name for c in first.tool_calls] == [
                "create_subagent", "fan_out", "wait"
            ]  # fmt: skip
            fan = _args(first.tool_calls[1])
            assert fan["all_documents"] is True and fan["tasks"] == 4 and "ids" not in fan
            messages.append(first.message.to_openai())
            results = {
                "create_subagent": {"created": "extractor"},
                "fan_out": {"task_ids": ["t1", "t2", "t3", "t4"]},
                "wait": {"results": [{"id": f"t{k}", "status": "done", "output": "…"}
                                     for k in range(1, 5)], "pending": []},
            }  # fmt: skip
            for call in first.tool_calls:
                content = json.dumps(results[call.function.name])
                messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
            second = await model.chat(messages, tools=tools)
    assert [c.function.name for c in second.tool_calls] == ["finish"]
    assert _args(second.tool_calls[0]) == {"table": {"columns": list(TASK.columns)}}


async def test_a_subagent_with_tools_answers_at_once_for_the_task_in_its_inputs(
    papers: list[Paper],
) -> None:
    task = WIDE_TASKS["attention_papers"]
    ids = [p.id for p in papers[:150]]
    inputs = {"task": task.model_dump(mode="json"), "doc_ids": ids}
    read = {"type": "function", "function": {"name": "read_document", "parameters": {}}}
    with LatencyModelServer(papers, TASK, latency=FAST) as srv:
        async with OpenAIChat(srv.base_url, srv.model_id) as model:
            answer = await model.chat(_subagent_messages("Extract.", inputs), tools=[read])
    assert not answer.tool_calls  # it has the documents in its prompt: no tool call needed
    assert json.loads(answer.content or "") == {"rows": task.ground_truth(papers[:150])}
    assert srv.calls == {"subagent": 1}
