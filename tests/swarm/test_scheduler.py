"""The scheduler end to end through `Swarm.execute`: data flow, limits, retries, policies."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from typing import Any

import pytest
from pydantic import BaseModel

from kimmy_swarm.swarm.context import SubtaskContext
from kimmy_swarm.swarm.errors import ModelServerError, SpawnError
from kimmy_swarm.swarm.runtime import Swarm
from kimmy_swarm.swarm.schema import RunResult, RunStatus, Subtask, SubtaskStatus
from tests.support.scheduling import Recorder, make_plan, make_swarm

S = SubtaskStatus


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


async def test_upstream_outputs_reach_dependents() -> None:
    async def add(ctx: SubtaskContext) -> Any:
        assert all(r.status is S.DONE for r in ctx.upstream_results.values())
        return {"sum": ctx.inputs["x"] + sum(u["sum"] for u in ctx.upstream.values())}

    swarm = make_swarm(roles={"add": add})
    plan = make_plan(("a", [], "add"), ("b", [], "add"), ("c", ["a", "b"], "add"))
    plan = plan.model_copy(
        update={
            "subtasks": [
                s.model_copy(update={"inputs": {"x": x}})
                for s, x in zip(plan.subtasks, (1, 2, 10), strict=True)
            ]
        }
    )
    result = await swarm.execute(plan)
    assert result.status is RunStatus.COMPLETED and result.ok
    assert result.outputs == {"a": {"sum": 1}, "b": {"sum": 2}, "c": {"sum": 13}}
    assert all(r.attempts == 1 for r in result.results.values())
    assert RunResult.model_validate_json(result.model_dump_json()) == result


async def test_dependents_start_only_after_their_dependencies_finish() -> None:
    finished: set[str] = set()

    async def work(ctx: SubtaskContext) -> str:
        assert set(ctx.subtask.depends_on) <= finished
        await asyncio.sleep(0)
        finished.add(ctx.id)
        return ctx.id

    plan = make_plan(("a", []), ("b", ["a"]), ("c", ["a"]), ("d", ["b", "c"]), ("e", []))
    result = await make_swarm(roles={"work": work}).execute(plan)
    assert result.ok and finished == {"a", "b", "c", "d", "e"}


async def test_max_concurrency_is_respected() -> None:
    in_flight = peak = 0

    async def work(ctx: SubtaskContext) -> None:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.002)
        in_flight -= 1

    swarm = make_swarm(roles={"work": work}, max_concurrency=3)
    result = await swarm.execute(make_plan(*((f"s{i}", []) for i in range(20))))
    assert result.ok and peak == 3


async def test_retryable_errors_are_retried_with_backoff(recorder: Recorder) -> None:
    calls: Counter[str] = Counter()

    async def flaky(ctx: SubtaskContext) -> str:
        calls[ctx.id] += 1
        assert ctx.attempt == calls[ctx.id]
        if calls[ctx.id] <= 2:
            raise ModelServerError("502 bad gateway", status=502)
        return "ok"

    swarm = make_swarm(roles={"work": flaky}, max_retries=2, sinks=[recorder])
    result = await swarm.execute(make_plan(("a", [])))
    r = result.results["a"]
    assert (r.status, r.attempts, r.output, r.error) == (S.DONE, 3, "ok", None)
    retries = recorder.of("subtask_retrying")
    assert [e.attempt for e in retries] == [1, 2]
    assert all(e.error.type == "ModelServerError" and e.error.retryable for e in retries)
    assert all(0 <= e.delay_s <= 0.005 for e in retries)
    assert [e.attempt for e in recorder.of("subtask_started")] == [1, 2, 3]


async def test_retries_run_out() -> None:
    async def down(ctx: SubtaskContext) -> str:
        raise ModelServerError("503", status=503)

    swarm = make_swarm(roles={"work": down}, max_retries=1)
    plan = make_plan(("a", []))
    plan = plan.model_copy(
        update={"subtasks": [*plan.subtasks, Subtask(id="b", role="work", max_retries=3)]}
    )
    result = await swarm.execute(plan)
    assert result.results["a"].attempts == 2 and result.results["b"].attempts == 4
    assert all(r.status is S.FAILED and r.error.retryable for r in result.results.values())
    assert result.status is RunStatus.PARTIAL


async def test_non_retryable_error_fails_at_once_with_traceback() -> None:
    async def broken(ctx: SubtaskContext) -> str:
        raise ValueError("bad input 42")

    result = await make_swarm(roles={"work": broken}).execute(make_plan(("a", [])))
    r = result.results["a"]
    assert (r.status, r.attempts) == (S.FAILED, 1)
    assert r.error is not None and (r.error.type, r.error.message) == ("ValueError", "bad input 42")
    assert not r.error.retryable
    assert r.error.traceback is not None and "in broken" in r.error.traceback


async def test_timeout_is_retried_then_fails() -> None:
    calls = 0

    async def sleepy(ctx: SubtaskContext) -> str:
        nonlocal calls
        calls += 1
        await asyncio.sleep(10)
        return "never"

    swarm = make_swarm(roles={"work": sleepy}, max_retries=1)
    result = await swarm.execute(make_plan(("a", []), timeout_s=0.05))
    r = result.results["a"]
    assert (r.status, r.attempts, calls) == (S.FAILED, 2, 2)
    assert r.error is not None and r.error.type == "SubtaskTimeoutError"
    assert "0.05s" in r.error.message and r.error.retryable


async def test_timeout_then_success() -> None:
    async def slow_once(ctx: SubtaskContext) -> str:
        if ctx.attempt == 1:
            await asyncio.sleep(10)
        return "second"

    swarm = make_swarm(roles={"work": slow_once}, max_retries=1)
    result = await swarm.execute(make_plan(("a", []), timeout_s=0.05))
    assert (result.results["a"].status, result.results["a"].attempts) == (S.DONE, 2)


async def test_worker_swallowing_the_timeout_still_times_out() -> None:
    async def stubborn(ctx: SubtaskContext) -> str:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            return "ignored the cancel"
        return "never"

    swarm = make_swarm(roles={"work": stubborn}, max_retries=0)
    result = await swarm.execute(make_plan(("a", []), timeout_s=0.05))
    assert result.results["a"].error.type == "SubtaskTimeoutError"  # type: ignore[union-attr]


# --- failure policies ------------------------------------------------------------------


def policy_swarm(policy: str, seen: dict[str, Any]) -> tuple[Swarm, Any]:
    gate = asyncio.Event()

    async def work(ctx: SubtaskContext) -> Any:
        seen[ctx.id] = dict(ctx.upstream)
        if ctx.id == "a":
            gate.set()
            raise ValueError("a broke")
        if ctx.id == "b":
            await gate.wait()  # still running when `a` fails
            await asyncio.sleep(0.001)
        return f"out-{ctx.id}"

    plan = make_plan(("a", []), ("b", []), ("c", ["a"]), ("d", ["b"]), ("e", ["c"]))
    return make_swarm(roles={"work": work}, failure_policy=policy, max_retries=0), plan


async def test_skip_dependents_end_to_end() -> None:
    seen: dict[str, Any] = {}
    swarm, plan = policy_swarm("skip_dependents", seen)
    result = await swarm.execute(plan)
    statuses = {k: r.status for k, r in result.results.items()}
    assert statuses == {"a": S.FAILED, "b": S.DONE, "c": S.SKIPPED, "d": S.DONE, "e": S.SKIPPED}
    assert result.outputs == {"b": "out-b", "d": "out-d"}
    assert result.status is RunStatus.PARTIAL and result.stop_reason is None
    assert set(seen) == {"a", "b", "d"}


async def test_continue_end_to_end() -> None:
    seen: dict[str, Any] = {}
    swarm, plan = policy_swarm("continue", seen)
    result = await swarm.execute(plan)
    assert result.results["c"].status is S.DONE and result.results["e"].status is S.DONE
    assert seen["c"] == {"a": None}  # the failed dependency shows as None
    assert result.status is RunStatus.PARTIAL


async def test_fail_fast_keeps_siblings_results() -> None:
    seen: dict[str, Any] = {}
    swarm, plan = policy_swarm("fail_fast", seen)
    result = await swarm.execute(plan)
    statuses = {k: r.status for k, r in result.results.items()}
    assert statuses == {"a": S.FAILED, "b": S.DONE, "c": S.SKIPPED, "d": S.SKIPPED, "e": S.SKIPPED}
    assert result.outputs == {"b": "out-b"}  # in flight at the failure: kept
    assert result.status is RunStatus.FAILED
    assert result.stop_reason is not None and "'a'" in result.stop_reason


# --- dynamic spawning ------------------------------------------------------------------


async def test_spawn_feeds_a_pending_writer(recorder: Recorder) -> None:
    async def lead(ctx: SubtaskContext) -> str:
        added = ctx.spawn(
            [{"id": f"r{i}", "role": "research", "inputs": {"i": i}} for i in range(3)],
            feeds=["writer"],
        )
        assert [s.id for s in added] == ["r0", "r1", "r2"]
        return "planned"

    async def research(ctx: SubtaskContext) -> int:
        return ctx.inputs["i"] * 10

    async def write(ctx: SubtaskContext) -> dict[str, Any]:
        return dict(ctx.upstream)

    swarm = make_swarm(roles={"lead": lead, "research": research, "write": write}, sinks=[recorder])
    result = await swarm.execute(make_plan(("lead", [], "lead"), ("writer", ["lead"], "write")))
    assert result.ok
    assert result.outputs["writer"] == {"lead": "planned", "r0": 0, "r1": 10, "r2": 20}
    (spawned,) = recorder.of("subtasks_spawned")
    assert spawned.parent_id == "lead" and [s.depth for s in spawned.subtasks] == [1, 1, 1]
    assert spawned.edges == [("r0", "writer"), ("r1", "writer"), ("r2", "writer")]


async def test_cyclic_spawn_is_refused_inside_the_worker(recorder: Recorder) -> None:
    async def lead(ctx: SubtaskContext) -> str:
        with pytest.raises(SpawnError) as info:
            ctx.spawn([Subtask(id="n", role="work", depends_on=["x"])], feeds=["y"])
        return str(info.value)

    async def work(ctx: SubtaskContext) -> str:
        return ctx.id

    swarm = make_swarm(roles={"lead": lead, "work": work}, sinks=[recorder])
    plan = make_plan(("lead", [], "lead"), ("y", ["lead"]), ("x", ["y"]))
    result = await swarm.execute(plan)
    assert result.ok and "n" not in result.results
    assert "y -> x -> n -> y" in result.outputs["lead"]
    (refused,) = recorder.of("spawn_refused")
    assert refused.parent_id == "lead" and refused.error.type == "SpawnError"
    assert "cycle" in refused.error.message


async def test_spawn_depth_is_limited() -> None:
    async def work(ctx: SubtaskContext) -> str:
        try:
            ctx.spawn([{"id": f"{ctx.id}.c", "role": "work"}])
        except SpawnError as exc:
            return str(exc)
        return "spawned"

    result = await make_swarm(roles={"work": work}, max_depth=2).execute(make_plan(("s", [])))
    assert set(result.results) == {"s", "s.c", "s.c.c"}
    assert result.outputs["s.c.c"].endswith("depth 3 exceeds max_depth 2")
    assert result.results["s.c.c"].status is S.DONE


async def test_spawn_with_unknown_role_is_refused() -> None:
    async def work(ctx: SubtaskContext) -> str:
        with pytest.raises(SpawnError, match="unknown roles \\['nope'\\]; known roles: work"):
            ctx.spawn([{"id": "n", "role": "nope"}])
        return "ok"

    assert (await make_swarm(roles={"work": work}).execute(make_plan(("s", [])))).ok


# --- outputs ---------------------------------------------------------------------------


class Summary(BaseModel):
    title: str
    points: list[str]


async def test_output_schema_valid_invalid_and_non_json() -> None:
    swarm = make_swarm(max_retries=0)

    @swarm.role("summ", output=Summary)
    async def summ(ctx: SubtaskContext) -> Any:
        if ctx.id == "model":
            return Summary(title="t", points=["p"])
        if ctx.id == "dict":
            return {"title": "t", "points": []}
        return {"title": 3}

    @swarm.role("odd")
    async def odd(ctx: SubtaskContext) -> Any:
        return {"s": {1, 2}} if ctx.id == "set" else (1, "two")

    plan = make_plan(
        ("model", [], "summ"), ("dict", [], "summ"), ("bad", [], "summ"),
        ("set", [], "odd"), ("tuple", [], "odd"),
    )  # fmt: skip
    result = await swarm.execute(plan)
    assert result.outputs == {
        "model": {"title": "t", "points": ["p"]},
        "dict": {"title": "t", "points": []},
        "tuple": [1, "two"],
    }
    for key in ("bad", "set"):
        r = result.results[key]
        assert (r.status, r.attempts) == (S.FAILED, 1)
        assert r.error is not None and r.error.type == "OutputValidationError"
    assert "'bad'" in result.results["bad"].error.message  # type: ignore[union-attr]
    assert "Summary" in result.results["bad"].error.message  # type: ignore[union-attr]


async def test_spawned_subtasks_get_their_roles_output_schema() -> None:
    swarm = make_swarm(max_retries=0)

    @swarm.role("lead")
    async def lead(ctx: SubtaskContext) -> str:
        ctx.spawn([{"id": "child", "role": "summ"}])
        return "ok"

    @swarm.role("summ", output=Summary)
    async def summ(ctx: SubtaskContext) -> Any:
        return {"title": 3}

    result = await swarm.execute(make_plan(("lead", [], "lead")))
    assert result.results["child"].status is S.FAILED
    assert result.results["child"].error.type == "OutputValidationError"  # type: ignore[union-attr]


# --- events ----------------------------------------------------------------------------


async def test_events_are_numbered_from_zero_and_end_with_run_finished(recorder: Recorder) -> None:
    async def work(ctx: SubtaskContext) -> str:
        if ctx.attempt == 1 and ctx.id == "b":
            raise ModelServerError("x", status=500)
        return ctx.id

    swarm = make_swarm(roles={"work": work}, sinks=[recorder])
    result = await swarm.execute(make_plan(("a", []), ("b", ["a"]), ("c", ["a"])))
    assert [e.seq for e in recorder.events] == list(range(len(recorder.events)))
    assert recorder.events[0].type == "run_started" and recorder.events[-1].type == "run_finished"
    assert {e.run_id for e in recorder.events} == {result.run_id}
    finished = recorder.of("run_finished")[0]
    assert finished.status is RunStatus.COMPLETED and finished.counts == {"done": 3}


async def test_stream_yields_events_in_order() -> None:
    async def work(ctx: SubtaskContext) -> str:
        return ctx.id

    swarm = make_swarm(roles={"work": work})
    events = [e async for e in swarm.stream(make_plan(("a", []), ("b", ["a"])), run_id="s1")]
    assert [e.seq for e in events] == list(range(len(events)))
    assert events[-1].type == "run_finished" and events[-1].status is RunStatus.COMPLETED
    assert [e.result.id for e in events if e.type == "subtask_finished"] == ["a", "b"]


async def test_stream_raises_plan_errors() -> None:
    swarm = make_swarm(roles={"work": lambda ctx: None})
    with pytest.raises(Exception, match="unknown role") as info:
        async for _ in swarm.stream(make_plan(("a", [], "ghost"))):
            pass
    assert type(info.value).__name__ == "UnknownRoleError"


async def test_leaving_the_stream_early_cancels_the_run() -> None:
    cancelled: list[str] = []

    async def work(ctx: SubtaskContext) -> str:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.append(ctx.id)
            raise
        return ctx.id

    swarm = make_swarm(roles={"work": work})
    async with contextlib.aclosing(swarm.stream(make_plan(("a", []), ("b", [])))) as events:
        async for event in events:
            if event.type == "subtask_started":
                break
    assert sorted(cancelled) == ["a", "b"]

