"""The orchestrator's loop over real HTTP: a loopback OpenAI server (logprobs recorded with
each turn), and `kimmy serve --tiny` in a subprocess, whose grammar-constrained tool calls
are always valid calls of the orchestrator's tools."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kimmy_swarm.agents.orchestrator import ORCHESTRATOR_ID, SolveConfig, run_solve
from kimmy_swarm.agents.orchestrator.tools import TOOLS
from kimmy_swarm.rewards import load_trajectory
from kimmy_swarm.swarm.llm import OpenAIChat
from kimmy_swarm.swarm.store import RunStore
from tests.support.openai_server import OpenAIServer, ServerRequest, completion, json_reply
from tests.support.serve_process import tiny_server

ROOT = Path(__file__).resolve().parents[3]


def _behaviour(request: ServerRequest) -> Any:
    body = request.body
    names = {t["function"]["name"] for t in body.get("tools") or ()}
    if "assign_task" not in names:  # a sub-agent
        return json_reply(200, completion(request, json.dumps({"answer": "42", "sources": []})))
    turn = sum(m["role"] == "assistant" for m in body["messages"])
    calls: list[tuple[str, dict[str, Any]]]
    if turn == 0:
        calls = [
            ("assign_task", {"agent": "researcher", "task": f"Question {i}"}) for i in range(3)
        ] + [("wait", {"ids": "all"})]
    else:
        calls = [("finish", {"answer": "three answers: 42"})]
    logprobs = [("tok", -0.5), ("en", -0.25)] if body.get("logprobs") else None
    return json_reply(
        200, completion(request, None, tool_calls=calls, logprobs=logprobs, usage=(30, 12))
    )


def test_the_loop_over_loopback_http_records_turns_with_logprobs(tmp_path: Path) -> None:
    with OpenAIServer(default=_behaviour) as srv:
        model = OpenAIChat(srv.base_url, "test-model")
        out = run_solve(
            SolveConfig(goal="Answer three questions", out=tmp_path / "o", model=model,
                        runs_dir=tmp_path / "r", logprobs=True)
        )  # fmt: skip
        orchestrator_calls = [
            r for r in srv.chat_requests if any(
                t["function"]["name"] == "assign_task" for t in r.body.get("tools") or ())
        ]  # fmt: skip
    assert out.status == "completed" and out.subagents == 3 and out.answer == "three answers: 42"
    assert all(r.body["tool_choice"] == "required" and r.body["max_tokens"] for r in
               orchestrator_calls)  # fmt: skip
    traj = load_trajectory(out.run_id, tmp_path / "r")
    turns = [t for t in traj.turns if t.subtask_id == ORCHESTRATOR_ID]
    assert [len(t.spawned) for t in turns] == [3, 0]
    assert turns[0].logprobs is not None and turns[0].logprobs[0]["token"] == "tok"
    with RunStore(tmp_path / "r", create=False) as store:
        recorded = store.load_run(out.run_id).turns[ORCHESTRATOR_ID]
    assert recorded[0].messages[0]["tool_calls"][0]["function"]["name"] == "assign_task"
    assert [m["role"] for m in recorded[1].messages] == ["tool"] * 4  # its calls' results


@pytest.fixture(scope="module")
def tiny_url() -> Iterator[str]:
    """`kimmy serve --tiny` in a subprocess, on a free loopback port."""
    with tiny_server("--max-model-len", "8192") as url:
        yield url


def test_tool_calls_of_a_grammar_constrained_server_are_always_valid(
    tiny_url: str, tmp_path: Path
) -> None:
    """Random weights answer noise, but every turn the server finished (not cut at
    max_tokens) is a call of one of the orchestrator's tools with arguments that parse (the
    server decodes them from the tools' schemas); a cut turn is a prefix of such a call."""
    model = OpenAIChat(tiny_url, "kimmy-tiny", timeout_s=120)
    # Unseeded sampling from random weights: in about 1 run of 5 every turn runs on in a
    # string until max_tokens and the orchestrator stops after two such turns, leaving no
    # finished call to check. Up to 4 runs, each checked whole, until one finishes a call.
    complete = 0
    for attempt in range(4):
        complete = _check_turns(model, tmp_path / str(attempt))
        if complete:
            break
    assert complete >= 1


def _check_turns(model: OpenAIChat, tmp_path: Path) -> int:
    """One solve run: every finished turn a valid call, every cut one a prefix of a call;
    the number of finished turns."""
    max_tokens = 256
    out = run_solve(
        SolveConfig(goal="Say hello", out=tmp_path / "o", model=model, runs_dir=tmp_path / "r",
                    max_turns=4, max_tokens=max_tokens, context_tokens=8192, max_subagents=4)
    )  # fmt: skip
    with RunStore(tmp_path / "r", create=False) as store:
        recorded = store.load_run(out.run_id).turns.get(ORCHESTRATOR_ID, [])
    turns = [t for t in recorded if t.messages and t.messages[0].get("role") == "assistant"]
    results = {t.step - 1: t for t in recorded if t not in turns}
    calls_made = load_trajectory(out.run_id, tmp_path / "r").episodes[ORCHESTRATOR_ID].model_calls
    assert turns and len(calls_made) >= len(turns), out.answer
    complete = 0
    for turn, call_made in zip(turns, calls_made, strict=False):
        message = turn.messages[0]
        if not message.get("tool_calls"):  # cut at its max_tokens: a call's unfinished prefix
            content = str(message.get("content", ""))
            assert content.startswith('{"name": "'), message
            with pytest.raises(json.JSONDecodeError):
                json.loads(content)
            assert call_made.usage.completion_tokens >= 64  # it ran out of tokens
            continue
        complete += 1
        calls = message.get("tool_calls") or []
        assert calls, message
        for call in calls:
            assert call["function"]["name"] in TOOLS
            assert isinstance(json.loads(call["function"]["arguments"]), dict)
        answers = [m["content"] for m in results[turn.step].messages if m["role"] == "tool"]
        assert not any("arguments are not JSON" in a for a in answers), answers
    return complete
