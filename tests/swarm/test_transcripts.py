"""`read_transcript`: one sub-agent's stored events grouped by attempt — model calls, tool
calls, steps, retries and how it ended — for a run of plain swarm workers (the agent loop's
transcripts over a real HTTP server: tests/agents/test_subagent_transcripts.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kimmy_swarm.swarm import Plan, RunConfig, Subtask, SubtaskContext, Swarm, read_transcript
from kimmy_swarm.swarm.errors import ModelServerError, UserError
from kimmy_swarm.swarm.limits import Backoff
from kimmy_swarm.swarm.llm.scripted import ScriptedChat
from kimmy_swarm.swarm.schema import SubtaskStatus
from kimmy_swarm.swarm.store import RunStore
from kimmy_swarm.swarm.transcript_capture import TranscriptCapture
from kimmy_swarm.swarm.transcripts import (
    FinishedEntry,
    ModelCallEntry,
    RetryEntry,
    StepEntry,
    ToolCallEntry,
)

PLAN = Plan(
    goal="add",
    subtasks=[
        Subtask(id="adder", role="add", inputs={"numbers": [2, 3]}),
        Subtask(id="broken", role="fail"),
        Subtask(id="after", role="add", depends_on=["broken"]),
    ],
)


async def add(ctx: SubtaskContext) -> dict[str, int]:
    reply = await ctx.model.chat([{"role": "user", "content": "add them"}])
    total = sum(ctx.inputs.get("numbers", []))
    arguments = json.dumps(ctx.inputs)  # text is kept as it is (other values as their repr)
    ctx.record_tool("sum", step=1, latency_s=0.01, arguments=arguments, result=total)
    ctx.record_step(1, policy="model", tools=["sum"], outcome="answer")
    return {"total": total, "said": len(reply.content or "")}


async def fail(ctx: SubtaskContext) -> None:
    raise ValueError("not retried")


def _run(tmp_path: Path, capture: TranscriptCapture) -> str:
    # The adder's first call fails with a retryable error: its second attempt answers.
    model = ScriptedChat([ModelServerError("busy", status=503), "five"])
    config = RunConfig(max_retries=1, backoff=Backoff(0.001, 0.002), transcripts=capture)
    swarm = Swarm(model=model, runs_dir=tmp_path, config=config, roles={"add": add, "fail": fail})
    result = swarm.run_sync(PLAN)
    assert result.results["adder"].status is SubtaskStatus.DONE
    return result.run_id


def test_attempts_hold_their_calls_tools_steps_and_end(tmp_path: Path) -> None:
    run_id = _run(tmp_path, TranscriptCapture())
    with RunStore(tmp_path) as store:
        t = read_transcript(store, run_id, "adder")
    assert (t.role, t.status, t.capture) == ("add", SubtaskStatus.DONE, True)
    first, second = t.attempts
    assert (first.attempt, second.attempt) == (1, 2)
    assert [e.kind for e in first.entries] == ["model_call", "retry"]
    [failed] = first.model_calls
    assert isinstance(failed, ModelCallEntry) and failed.error is not None
    assert failed.error.type == "ModelServerError"
    retry = first.entries[1]
    assert isinstance(retry, RetryEntry) and retry.error.type == "ModelServerError"
    assert [e.kind for e in second.entries] == ["model_call", "tool_call", "step", "finished"]
    call, tool, step, end = second.entries
    assert isinstance(call, ModelCallEntry) and call.response is not None
    assert call.response["content"] == "five"
    assert isinstance(tool, ToolCallEntry) and (tool.tool, tool.ok) == ("sum", True)
    assert json.loads(tool.arguments or "") == {"numbers": [2, 3]} and tool.result == "5"
    assert isinstance(step, StepEntry) and step.outcome == "answer"
    assert isinstance(end, FinishedEntry) and json.loads(end.output or "")["total"] == 5


def test_a_skipped_subtask_has_one_attempt_0_holding_its_end(tmp_path: Path) -> None:
    run_id = _run(tmp_path, TranscriptCapture())
    with RunStore(tmp_path) as store:
        t = read_transcript(store, run_id, "after")
        broken = read_transcript(store, run_id, "broken")
    [attempt] = t.attempts
    assert attempt.attempt == 0 and t.status is SubtaskStatus.SKIPPED
    [end] = attempt.entries
    assert isinstance(end, FinishedEntry) and end.error is not None
    assert end.error.type == "DependencyFailed"
    assert broken.status is SubtaskStatus.FAILED and len(broken.attempts) == 1


def test_without_content_capture_outputs_are_left_out(tmp_path: Path) -> None:
    run_id = _run(tmp_path, TranscriptCapture(content=False))
    with RunStore(tmp_path) as store:
        t = read_transcript(store, run_id, "adder")
    assert t.capture is False
    end = t.attempts[-1].entries[-1]
    assert isinstance(end, FinishedEntry) and end.output is None
    tool = t.attempts[-1].entries[1]
    assert isinstance(tool, ToolCallEntry) and tool.arguments is None and tool.result is None


def test_an_unknown_subtask_is_named_with_some_of_the_run_s(tmp_path: Path) -> None:
    run_id = _run(tmp_path, TranscriptCapture())
    with RunStore(tmp_path) as store, pytest.raises(UserError, match=r"no subtask 'nope'.*adder"):
        read_transcript(store, run_id, "nope")
