"""Schema models: exact JSON round-trips, id rules, strict plans, usage arithmetic."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel, ValidationError

from kimmy_swarm.swarm import events as ev
from kimmy_swarm.swarm.errors import ModelServerError, SwarmError
from kimmy_swarm.swarm.schema import (
    NO_USAGE,
    ErrorInfo,
    Plan,
    RunResult,
    RunStatus,
    Subtask,
    SubtaskResult,
    SubtaskStatus,
    Timings,
    Usage,
)

NESTED = {
    "query": "héllo ✓",
    "n": 3,
    "ratio": 0.1 + 0.2,  # a float whose shortest repr has 17 digits
    "big": 2**62,
    "flags": [True, False, None],
    "deep": {"a": [{"b": [1, 2.5, "x"]}, []], "empty": {}},
}


def subtask(id_: str = "a", **kw: object) -> Subtask:
    return Subtask.model_validate({"id": id_, "role": "researcher", **kw})


def roundtrip(model: BaseModel) -> None:
    again = type(model).model_validate_json(model.model_dump_json())
    assert again == model
    assert again.model_dump() == model.model_dump()


def full_result() -> SubtaskResult:
    return SubtaskResult(
        id="s:1",
        role="writer",
        status=SubtaskStatus.FAILED,
        output={"partial": [1, {"x": None}]},
        error=ErrorInfo(type="ValueError", message="bad", retryable=False, traceback="tb..."),
        usage=Usage(prompt_tokens=10, completion_tokens=5, total_tokens=15, model_calls=2),
        timings=Timings(started_at=1_700_000_000.123456, finished_at=1_700_000_001.5),
        attempts=3,
    )


def test_subtask_roundtrip_keeps_nested_inputs_and_overrides() -> None:
    st = subtask(
        "r.1:x@y.z-q_",
        instructions="find things",
        inputs=NESTED,
        depends_on=["a", "b"],
        output_schema="Summary",
        timeout_s=2.5,
        max_retries=0,
        parent="p",
        depth=2,
    )
    roundtrip(st)
    assert Subtask.model_validate_json(st.model_dump_json()).inputs["ratio"] == 0.1 + 0.2


def test_plan_roundtrip() -> None:
    plan = Plan(goal="g", subtasks=[subtask("a"), subtask("b", depends_on=["a"], inputs=NESTED)])
    roundtrip(plan)
    assert list(plan.by_id()) == ["a", "b"]


def test_subtask_result_roundtrip_with_error_usage_timings() -> None:
    result = full_result()
    roundtrip(result)
    assert result.timings.duration_s == pytest.approx(1.376544)
    assert Timings(started_at=1.0).duration_s is None


def test_run_result_roundtrip_and_views() -> None:
    done = SubtaskResult(id="a", role="r", status=SubtaskStatus.DONE, output=NESTED, attempts=1)
    run = RunResult(
        run_id="20240101-000000-abcdef",
        goal="g",
        status=RunStatus.PARTIAL,
        stop_reason=None,
        results={"a": done, "s:1": full_result()},
        usage=Usage(total_tokens=15, model_calls=2),
        started_at=1.0,
        finished_at=2.0,
    )
    roundtrip(run)
    assert run.outputs == {"a": NESTED}
    assert run.counts() == {"done": 1, "failed": 1}
    assert not run.ok


EVENTS: list[ev._Event] = [
    ev.RunStarted(
        run_id="r", seq=0, ts=1.5, goal="g", n_subtasks=2, resumed=True, settings={"k": [1, None]}
    ),
    ev.SubtaskStarted(run_id="r", seq=1, ts=2.0, subtask_id="a", role="x", attempt=2),
    ev.ModelCalled(
        run_id="r",
        seq=2,
        ts=2.1,
        subtask_id="a",
        latency_s=0.25,
        usage=Usage(prompt_tokens=1, completion_tokens=2, total_tokens=3, model_calls=1),
        error=ErrorInfo(type="ModelServerError", message="502", retryable=True),
        logprobs=[{"token": "a", "logprob": -0.5}],
    ),
    ev.AgentStep(
        run_id="r",
        seq=2,
        ts=2.2,
        subtask_id="a",
        policy="model",
        step=1,
        tools=["search", "read"],
        outcome="tools",
    ),
    ev.ToolCalled(
        run_id="r",
        seq=2,
        ts=2.3,
        subtask_id="a",
        tool="read",
        step=1,
        latency_s=0.01,
        ok=False,
        error="ValueError: bad bounds",
    ),
    ev.AgentTurn(
        run_id="r",
        seq=2,
        ts=2.4,
        subtask_id="a",
        attempt=1,
        step=1,
        messages=[{"role": "assistant", "content": None, "tool_calls": []}],
        spawned=["t1"],
        state={"agents": {"x": "prompt"}},
        logprobs=[{"token": "a", "logprob": -0.1}],
    ),
    ev.TokenDelta(
        run_id="r",
        seq=2,
        ts=2.41,
        subtask_id="a",
        call=2,
        text='{"q": ',
        kind="tool_arguments",
        index=1,
    ),
    ev.ApprovalRequested(
        run_id="r",
        seq=2,
        ts=2.42,
        subtask_id="a",
        call_id="a1",
        tool="git.commit",
        arguments={"message": "x", "paths": ["a", "b"]},
    ),
    ev.ApprovalDecided(
        run_id="r",
        seq=2,
        ts=2.43,
        subtask_id="a",
        call_id="a1",
        tool="git.commit",
        verdict="approve",
        arguments={"message": "y"},
        reason="typo",
        by="cli",
    ),
    ev.SubtaskRetrying(
        run_id="r",
        seq=3,
        ts=2.2,
        subtask_id="a",
        attempt=1,
        error=ErrorInfo(type="T", message="m", retryable=True),
        delay_s=0.125,
    ),
    ev.SubtaskFinished(run_id="r", seq=4, ts=2.3, result=full_result()),
    ev.SubtasksSpawned(
        run_id="r",
        seq=5,
        ts=2.4,
        parent_id="a",
        subtasks=[subtask("n1", parent="a", depth=1, inputs=NESTED)],
        edges=[("n1", "w")],
    ),
    ev.SpawnRefused(
        run_id="r", seq=6, ts=2.5, parent_id="a", error=ErrorInfo(type="SpawnError", message="c")
    ),
    ev.ConcurrencyChanged(run_id="r", seq=7, ts=2.6, limit=4, previous=8, reason="429"),
    ev.BudgetExhausted(run_id="r", seq=8, ts=2.7, reason="token budget"),
    ev.RunFinished(
        run_id="r",
        seq=9,
        ts=2.8,
        status=RunStatus.BUDGET_EXHAUSTED,
        stop_reason="token budget",
        usage=Usage(total_tokens=3),
        counts={"done": 1, "skipped_budget": 1},
    ),
]


def test_every_event_type_is_covered() -> None:
    union = ev.Event.__origin__.__args__  # type: ignore[attr-defined]
    assert {type(e) for e in EVENTS} == set(union)


@pytest.mark.parametrize("event", EVENTS, ids=lambda e: e.type)
def test_event_roundtrip_through_parse_event(event: ev._Event) -> None:
    parsed = ev.parse_event(event.model_dump_json())
    assert type(parsed) is type(event)
    assert parsed == event
    assert ev.parse_event(event.model_dump_json().encode()) == event


def test_parse_event_rejects_unknown_type_and_extra_fields() -> None:
    with pytest.raises(ValidationError):
        ev.parse_event('{"type": "nope", "run_id": "r", "ts": 1}')
    with pytest.raises(ValidationError):
        ev.parse_event('{"type": "budget_exhausted", "run_id": "r", "ts": 1, "reason": "", "z": 1}')


@pytest.mark.parametrize("good", ["a", "A1", "0", "a.b:c@d.e-f_g", "x" * 200])
def test_id_pattern_accepts(good: str) -> None:
    assert subtask(good).id == good


@pytest.mark.parametrize(
    "bad", ["", "-a", "_a", ".a", "/a", "a/b", "a b", "a\n", "a\tb", "é", "a#b", "a?b", "x" * 201]
)
def test_id_pattern_rejects(bad: str) -> None:
    with pytest.raises(ValidationError, match="id"):
        subtask(bad)
    with pytest.raises(ValidationError):
        subtask("ok", depends_on=[bad])


@pytest.mark.parametrize("bad_role", ["", "1x", "a b", "x" * 65])
def test_role_pattern_rejects(bad_role: str) -> None:
    with pytest.raises(ValidationError):
        Subtask(id="a", role=bad_role)


def test_plans_reject_extra_fields() -> None:
    with pytest.raises(ValidationError, match="extra"):
        Plan.model_validate({"goal": "g", "subtasks": [], "oops": 1})
    with pytest.raises(ValidationError, match="dependson"):
        Plan.model_validate({"subtasks": [{"id": "a", "role": "r", "dependson": ["b"]}]})


@pytest.mark.parametrize(
    "field, value",
    [("timeout_s", 0), ("timeout_s", -1), ("max_retries", -1), ("max_retries", 101), ("depth", -1)],
)
def test_subtask_override_bounds(field: str, value: object) -> None:
    with pytest.raises(ValidationError, match=field):
        subtask("a", **{field: value})


@pytest.mark.parametrize(
    "field, value",
    [("max_retries", True), ("max_retries", "2"), ("max_retries", 2.0), ("depth", False),
     ("timeout_s", True), ("timeout_s", "30")],
)  # fmt: skip
def test_subtask_numbers_are_strict(field: str, value: object) -> None:
    """A bool or a string where a number belongs is a mistake in the plan, not a 1 or a 2."""
    with pytest.raises(ValidationError, match=field):
        subtask("a", **{field: value})
    with pytest.raises(ValidationError, match=field):  # JSON text too
        Subtask.model_validate_json(json.dumps({"id": "a", "role": "r", field: value}))
    assert subtask("a", timeout_s=30, max_retries=2).timeout_s == 30.0  # an int is a number


def test_models_are_frozen() -> None:
    st = subtask("a")
    with pytest.raises(ValidationError):
        st.id = "b"  # type: ignore[misc]


def test_usage_addition_sums_every_field() -> None:
    a = Usage(prompt_tokens=1, completion_tokens=2, total_tokens=3, model_calls=1)
    b = Usage(prompt_tokens=10, completion_tokens=20, total_tokens=30, model_calls=2)
    assert a + b == Usage(prompt_tokens=11, completion_tokens=22, total_tokens=33, model_calls=3)
    assert a + NO_USAGE == a
    assert NO_USAGE + a == a
    assert Usage() == NO_USAGE + NO_USAGE


def test_usage_addition_keeps_tokens_without_a_total() -> None:
    # A server may report prompt/completion tokens without total_tokens or a call count.
    a = Usage(prompt_tokens=2)
    b = Usage(completion_tokens=3)
    assert a + b == Usage(prompt_tokens=2, completion_tokens=3)
    assert Usage(model_calls=1) + b == Usage(completion_tokens=3, model_calls=1)


def test_error_info_from_exceptions() -> None:
    try:
        raise ValueError("boom")
    except ValueError as exc:
        info = ErrorInfo.from_exception(exc)
    assert (info.type, info.message, info.retryable) == ("ValueError", "boom", False)
    assert info.traceback is not None and "ValueError: boom" in info.traceback
    assert "test_error_info_from_exceptions" in info.traceback

    swarm_err = ErrorInfo.from_exception(ModelServerError("502 from server", status=502))
    assert swarm_err.retryable is True and swarm_err.traceback is None
    assert isinstance(ModelServerError("x"), SwarmError)
    assert ErrorInfo.from_exception(KeyError()).message == "KeyError"


def test_subtask_status_finished() -> None:
    unfinished = {SubtaskStatus.PENDING, SubtaskStatus.RUNNING}
    for s in SubtaskStatus:
        assert s.finished is (s not in unfinished)


def test_usage_total_equals_repeated_addition() -> None:
    parts = [
        Usage(prompt_tokens=3, completion_tokens=1, total_tokens=4, model_calls=1),
        Usage(),
        Usage(prompt_tokens=2, total_tokens=2),
        Usage(completion_tokens=5, total_tokens=5, model_calls=2),
    ]
    summed = Usage()
    for u in parts:
        summed = summed + u
    assert (
        Usage.total(parts)
        == summed
        == Usage(prompt_tokens=5, completion_tokens=6, total_tokens=11, model_calls=3)
    )
    assert Usage.total([]) == Usage()
