"""Transcripts of sub-agents (model policy over a real loopback HTTP server, and offline):
what the store keeps of each call and tool, read back with `read_transcript` and shown by
`kimmy show RUN --agent ID`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kimmy_swarm.agents import install
from kimmy_swarm.cli.app import main
from kimmy_swarm.swarm import RunConfig, Swarm
from kimmy_swarm.swarm.llm import OpenAIChat
from kimmy_swarm.swarm.store import RunStore
from kimmy_swarm.swarm.transcript_capture import TranscriptCapture
from kimmy_swarm.swarm.transcripts import ModelCallEntry, StepEntry, ToolCallEntry, read_transcript
from tests.support.openai_server import OpenAIServer, reply, tool_call
from tests.support.summing_role import SUMMER, summing_tools

PLAN = {
    "goal": "add primes",
    "subtasks": [{"id": "s1", "role": "summer", "inputs": {"key": "primes"}}],
}
#: A tool error, a good tool call, prose where JSON was due (repair turn), a valid answer.
SCRIPT = (
    tool_call("lookup", {"key": "cubes"}),
    tool_call("lookup", {"key": "primes"}),
    reply("The total is seventeen."),
    reply(json.dumps({"numbers": [2, 3, 5, 7], "total": 17})),
)


def _run(runs_dir: Path, config: RunConfig | None = None) -> tuple[str, list[Any]]:
    with OpenAIServer(SCRIPT) as srv:
        model = OpenAIChat(srv.base_url, "test-model")
        swarm = Swarm(model=model, runs_dir=runs_dir, config=config or RunConfig(max_retries=0))
        install(swarm, [SUMMER], summing_tools())
        result = swarm.run_sync(PLAN)
        requests = [r.body for r in srv.chat_requests]
    assert result.results["s1"].status.value == "done"
    return result.run_id, requests


def test_transcript_keeps_every_call_tool_error_and_repair_turn(tmp_path: Path) -> None:
    run_id, requests = _run(tmp_path)
    with RunStore(tmp_path) as store:
        t = read_transcript(store, run_id, "s1")
    assert (t.role, t.status.value, t.capture) == ("summer", "done", True)
    [attempt] = t.attempts
    calls = attempt.model_calls
    assert len(calls) == len(requests) == 4
    # The conversation is the concatenation of what each call added: exactly what was sent.
    rebuilt: list[Any] = []
    for call in calls:
        assert call.first_message == len(rebuilt)
        rebuilt += call.messages
    assert rebuilt == requests[-1]["messages"]
    assert [m["role"] for m in calls[0].messages] == ["system", "user"]
    # call 2 added the model's tool call and the tool's error
    assert calls[1].messages[0]["tool_calls"][0]["function"]["name"] == "lookup"
    assert calls[1].messages[1]["role"] == "tool"
    assert "KeyError" in calls[1].messages[1]["content"]
    # the answers, as the server gave them
    assert calls[0].response["tool_calls"][0]["arguments"] == json.dumps({"key": "cubes"})
    assert calls[2].response["content"] == "The total is seventeen."
    assert calls[0].request["tools"] == ["lookup", "add"]
    assert calls[3].request["response_format"] == "Total"  # the repair turn is constrained
    assert "Your answer is invalid" in calls[3].messages[-1]["content"]
    tools = [e for e in attempt.entries if isinstance(e, ToolCallEntry)]
    assert [(x.tool, x.ok) for x in tools] == [("lookup", False), ("lookup", True)]
    assert json.loads(tools[0].arguments) == {"key": "cubes"}
    assert "KeyError" in tools[0].error and tools[0].result.startswith("error: KeyError")
    assert tools[1].result == "[2, 3, 5, 7]" and tools[1].call_id == "call_0"
    [invalid] = [e for e in attempt.entries if isinstance(e, StepEntry) and e.outcome == "invalid"]
    assert "JSON" in invalid.error or "Expecting value" in invalid.error
    assert attempt.entries[-1].kind == "finished"
    assert json.loads(attempt.entries[-1].output) == {"numbers": [2, 3, 5, 7], "total": 17}
    assert all(isinstance(c, ModelCallEntry) and c.usage.model_calls == 1 for c in calls)


def test_content_capture_off_keeps_only_shapes_and_sizes(tmp_path: Path) -> None:
    config = RunConfig(max_retries=0, transcripts=TranscriptCapture(content=False))
    run_id, requests = _run(tmp_path, config)
    with RunStore(tmp_path) as store:
        t = read_transcript(store, run_id, "s1")
        raw = json.dumps([e.model_dump(mode="json") for e in store.events(run_id)])
    assert t.capture is False
    calls = t.attempts[0].model_calls
    assert calls[0].messages[0] == {
        "role": "system",
        "chars": len(requests[0]["messages"][0]["content"]),
    }
    assert calls[0].response["tool_calls"] == [{"id": "call_0", "name": "lookup"}]
    assert "seventeen" not in raw and "You add numbers" not in raw and '"primes"' not in raw
    tools = [e for e in t.attempts[0].entries if isinstance(e, ToolCallEntry)]
    assert tools and all(x.arguments is None and x.result is None for x in tools)
    assert t.attempts[0].entries[-1].output is None


def test_kimmy_show_agent_prints_the_conversation_and_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id, _ = _run(tmp_path)
    code = main(["show", run_id, "--agent", "s1", "--runs-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0
    for text in (
        "s1",
        "summer",
        "system",
        "You add numbers",
        "lookup",
        "KeyError",
        "The total is seventeen.",
        "invalid",
        "Your answer is invalid",
        "done",
    ):
        assert text in out, text
    code = main(["show", run_id, "--agent", "s1", "--json", "--runs-dir", str(tmp_path)])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["subtask_id"] == "s1"
    assert [e["kind"] for e in data["attempts"][0]["entries"]].count("model_call") == 4
    code = main(["show", run_id, "--agent", "nope", "--runs-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and "no subtask 'nope'" in err and "s1" in err
