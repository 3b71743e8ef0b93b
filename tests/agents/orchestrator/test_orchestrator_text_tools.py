"""The orchestrator against a server without native tool calls (llama.cpp's server with
most chat formats), over loopback HTTP: its tools described in the system message, its
calls read from the reply's text, their results sent back as user messages — and the
recorded conversation the same as with native calls. A model that only fails its calls
is stopped after `MAX_IDLE_TURNS` turns."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kimmy_swarm.agents.loop import TextTools
from kimmy_swarm.agents.orchestrator import ORCHESTRATOR_ID, SolveConfig, run_solve
from kimmy_swarm.agents.orchestrator.agent import MAX_IDLE_TURNS
from kimmy_swarm.swarm.llm import OpenAIChat
from kimmy_swarm.swarm.llm.capabilities import Capabilities
from kimmy_swarm.swarm.store import RunStore
from tests.support.openai_server import OpenAIServer, ServerRequest, completion, json_reply

NO_TOOLS = Capabilities(tools=False, parallel_tool_calls=False)


def _is_orchestrator(body: dict[str, Any]) -> bool:
    return "create_subagent" in str(body["messages"][0]["content"])


def _text_behaviour(request: ServerRequest) -> Any:
    body = request.body
    assert "tools" not in body and "tool_choice" not in body  # a server without tools
    if not _is_orchestrator(body):
        return json_reply(200, completion(request, json.dumps({"answer": "42", "sources": []})))
    messages = body["messages"]
    assert all(m["role"] != "tool" and "tool_calls" not in m for m in messages)
    turn = sum(m["role"] == "assistant" for m in messages)
    if turn == 0:
        calls = [{"tool": "assign_task", "arguments": {"agent": "researcher", "task": f"Q{i}"}}
                 for i in range(2)] + [{"tool": "wait", "arguments": {"ids": "all"}}]  # fmt: skip
        text = "I will assign two questions.\n" + "\n".join(json.dumps(c) for c in calls)
    else:
        last = messages[-1]["content"]
        assert last.startswith("Result of tool assign_task:") and "Result of tool wait:" in last
        text = json.dumps({"tool": "finish", "arguments": {"answer": "two answers: 42"}})
    return json_reply(200, completion(request, text, usage=(30, 12)))


def test_a_server_without_tool_calls_gets_them_in_text(tmp_path: Path) -> None:
    with OpenAIServer(default=_text_behaviour) as srv:
        model = OpenAIChat(srv.base_url, "text-model", capabilities=NO_TOOLS)
        out = run_solve(SolveConfig(goal="Answer two questions", out=tmp_path / "o", model=model,
                                    runs_dir=tmp_path / "r"))  # fmt: skip
        first = next(r for r in srv.chat_requests if _is_orchestrator(r.body))
        temperatures = {r.body.get("temperature") for r in srv.chat_requests}
    assert temperatures == {0.0}  # greedy by default, the orchestrator and its sub-agents
    assert out.status == "completed" and out.subagents == 2 and out.answer == "two answers: 42"
    system = first.body["messages"][0]["content"]
    assert "# Tools" in system and "one such object per line" in system
    with RunStore(tmp_path / "r", create=False) as store:
        recorded = store.load_run(out.run_id).turns[ORCHESTRATOR_ID]
    calls = recorded[0].messages[0]["tool_calls"]  # recorded as native calls
    assert [c["function"]["name"] for c in calls] == ["assign_task", "assign_task", "wait"]
    assert [m["role"] for m in recorded[1].messages] == ["tool"] * 3


def test_the_text_conversation_joins_results_and_keeps_turns_alternating() -> None:
    native = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "goal"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "wait", "arguments": "{}"}},
            {"id": "b", "type": "function",
             "function": {"name": "finish", "arguments": '{"answer": "x"}'}}]},
        {"role": "tool", "tool_call_id": "a", "content": "{}"},
        {"role": "tool", "tool_call_id": "b", "content": "error: no"},
        {"role": "user", "content": "Your turn called no tool."},
    ]  # fmt: skip
    text = TextTools.conversation(native)
    assert [m["role"] for m in text] == ["system", "user", "assistant", "user"]
    assert text[2]["content"] == ('{"tool": "wait", "arguments": {}}\n'
                                  '{"tool": "finish", "arguments": {"answer": "x"}}')  # fmt: skip
    assert text[3]["content"] == (
        "Result of tool wait:\n{}\n\nResult of tool finish:\nerror: no\n\nYour turn called no tool."
    )
    protocol = TextTools([{"type": "function", "function": {"name": "wait"}}])
    reply = 'Sure. {"tool": "wait", "arguments": {"ids": "all"}} and [{"tool": "x"}] {"a": 1}'
    assert [(c.name, json.loads(c.arguments)) for c in protocol.parse_calls(reply)] == [
        ("wait", {"ids": "all"}), ("x", {})
    ]  # fmt: skip


def _failing(request: ServerRequest) -> Any:
    return json_reply(200, completion(request, None, tool_calls=[("wait", {"ids": "all"})]))


def test_a_model_whose_calls_all_fail_is_stopped(tmp_path: Path) -> None:
    with OpenAIServer(default=_failing) as srv:
        model = OpenAIChat(srv.base_url, "m")
        out = run_solve(SolveConfig(goal="Do it", out=tmp_path / "o", model=model,
                                    runs_dir=tmp_path / "r", max_turns=50,
                                    temperature=None))  # fmt: skip
        asked = len(srv.chat_requests)
        assert all("temperature" not in r.body for r in srv.chat_requests)  # the server's
    assert out.status != "completed"
    assert f"{MAX_IDLE_TURNS} turns in a row without one successful tool call" in out.answer
    assert "no task has been assigned yet" in out.answer
    assert asked <= 2 * MAX_IDLE_TURNS  # the orchestrator's one retry included
