"""Calls that wait for a person (`swarm.approvals`): the waiting sub-agent gives its slot to
the rest of the swarm, its deadline stops, answers come from the store whoever writes them,
the policy's timeout answers when nobody does, and a decision holds for the same call."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import pytest

from kimmy_swarm.swarm import (
    ApprovalError,
    ApprovalPolicy,
    ConfigError,
    Decision,
    Plan,
    RunConfig,
    Subtask,
    SubtaskContext,
    Swarm,
)
from kimmy_swarm.swarm.errors import RunNotFoundError
from kimmy_swarm.swarm.store import RunStore


async def _pending(swarm: Swarm, run_id: str, n: int = 1) -> list[Any]:
    """The run's waiting calls, once `n` of them wait (polls the store, as a person would)."""
    for _ in range(500):
        with contextlib.suppress(RunNotFoundError):  # not stored yet
            found = swarm.approvals(run_id, pending=True)
            if len(found) >= n:
                return found
        await asyncio.sleep(0.01)
    raise AssertionError(f"no {n} calls waiting in run {run_id}")


def _asking_swarm(tmp_path: Path, **config: Any) -> tuple[Swarm, dict[str, Any]]:
    swarm = Swarm(config=RunConfig(**config), runs_dir=tmp_path)
    seen: dict[str, Any] = {"finished": []}

    @swarm.role("asker")
    async def asker(ctx: SubtaskContext) -> dict[str, Any]:
        decision = await ctx.approval("delete_files", {"path": "/data"})
        return {"verdict": decision.verdict, "args": decision.arguments, "why": decision.reason}

    @swarm.role("worker")
    async def worker(ctx: SubtaskContext) -> str:
        seen["finished"].append(ctx.id)
        return ctx.id

    return swarm, seen


def _plan(workers: int = 3) -> Plan:
    return Plan(
        goal="g",
        subtasks=[
            Subtask(id="ask", role="asker"),
            *(Subtask(id=f"w{i}", role="worker") for i in range(workers)),
        ],
    )


async def test_a_waiting_call_frees_its_slot_and_the_run_goes_on(tmp_path: Path) -> None:
    swarm, seen = _asking_swarm(tmp_path, max_concurrency=1)
    run = asyncio.create_task(swarm.execute(_plan(), run_id="r1"))
    (waiting,) = await _pending(swarm, "r1")
    # the only slot was the asker's: the workers ran while it waits
    for _ in range(200):
        if len(seen["finished"]) == 3:
            break
        await asyncio.sleep(0.01)
    assert sorted(seen["finished"]) == ["w0", "w1", "w2"]
    assert not run.done()
    assert (waiting.call_id, waiting.subtask_id, waiting.tool) == ("a1", "ask", "delete_files")
    assert waiting.arguments == {"path": "/data"}
    swarm.approve("r1", "a1", arguments={"path": "/data/tmp"}, by="test")
    result = await asyncio.wait_for(run, 5)
    assert result.results["ask"].output == {"verdict": "approve", "args": {"path": "/data/tmp"},
                                            "why": None}  # fmt: skip
    kinds = [e.type for e in RunStore(tmp_path).events("r1")]
    assert kinds.count("approval_requested") == kinds.count("approval_decided") == 1
    (answered,) = swarm.approvals("r1")
    assert answered.status == "approved" and answered.decision.by == "test"


async def test_a_denial_reaches_the_sub_agent_with_its_reason(tmp_path: Path) -> None:
    swarm, _ = _asking_swarm(tmp_path)
    run = asyncio.create_task(swarm.execute(_plan(0), run_id="r2"))
    await _pending(swarm, "r2")
    swarm.deny("r2", "a1", "not on production data")
    result = await asyncio.wait_for(run, 5)
    assert result.results["ask"].output["verdict"] == "deny"
    assert result.results["ask"].output["why"] == "not on production data"


async def test_the_first_answer_wins_and_unknown_calls_are_named(tmp_path: Path) -> None:
    swarm, _ = _asking_swarm(tmp_path)
    run = asyncio.create_task(swarm.execute(_plan(0), run_id="r3"))
    await _pending(swarm, "r3")
    with pytest.raises(ApprovalError, match=r"no call 'a9'.*waiting: a1"):
        swarm.approve("r3", "a9")
    swarm.approve("r3", "a1")
    with pytest.raises(ApprovalError, match="approved already"):
        swarm.deny("r3", "a1", "too late")
    await asyncio.wait_for(run, 5)


async def test_the_deadline_stops_while_a_call_waits(tmp_path: Path) -> None:
    swarm, _ = _asking_swarm(tmp_path, timeout_s=0.3)
    run = asyncio.create_task(swarm.execute(_plan(0), run_id="r4"))
    await _pending(swarm, "r4")
    await asyncio.sleep(0.6)  # twice the attempt's timeout
    swarm.approve("r4", "a1")
    result = await asyncio.wait_for(run, 5)
    assert result.results["ask"].status.value == "done"


@pytest.mark.parametrize("on_timeout, verdict", [("deny", "deny"), ("approve", "approve")])
async def test_the_policy_answers_when_nobody_does(
    tmp_path: Path, on_timeout: str, verdict: str
) -> None:
    policy = ApprovalPolicy(timeout_s=0.2, on_timeout=on_timeout)
    swarm, _ = _asking_swarm(tmp_path, approvals=policy)
    result = await asyncio.wait_for(swarm.execute(_plan(0), run_id="r5"), 5)
    output = result.results["ask"].output
    assert output["verdict"] == verdict and "nobody answered in 0.2 s" in output["why"]
    (answered,) = swarm.approvals("r5")
    assert answered.decision.by == "timeout"


async def test_a_policy_that_fails_fails_the_sub_agent_only(tmp_path: Path) -> None:
    policy = ApprovalPolicy(timeout_s=0.1, on_timeout="fail")
    swarm, seen = _asking_swarm(tmp_path, approvals=policy, failure_policy="continue")
    result = await asyncio.wait_for(swarm.execute(_plan(2), run_id="r6"), 5)
    failed = result.results["ask"]
    assert failed.status.value == "failed" and failed.error.type == "ApprovalTimeoutError"
    assert failed.attempts == 1  # not retried: waiting longer would not change the answer
    assert sorted(seen["finished"]) == ["w0", "w1"]


async def test_a_decision_holds_for_the_same_call(tmp_path: Path) -> None:
    swarm = Swarm(runs_dir=tmp_path)

    @swarm.role("asker")
    async def asker(ctx: SubtaskContext) -> list[str]:
        first = await ctx.approval("send", {"to": "x"})
        again = await ctx.approval("send", {"to": "x"})  # answered: nobody is asked twice
        return [first.verdict, again.verdict]

    run = asyncio.create_task(swarm.execute(Plan(goal="g", subtasks=[
        Subtask(id="ask", role="asker")]), run_id="r7"))  # fmt: skip
    await _pending(swarm, "r7")
    swarm.approve("r7", "a1")
    result = await asyncio.wait_for(run, 5)
    assert result.results["ask"].output == ["approve", "approve"]
    assert len(swarm.approvals("r7")) == 1


async def test_a_run_without_a_store_cannot_be_answered_and_says_how(tmp_path: Path) -> None:
    swarm, _ = _asking_swarm(tmp_path)
    swarm.runs_dir = None
    result = await asyncio.wait_for(swarm.execute(_plan(0)), 5)
    error = result.results["ask"].error
    assert error is not None and "runs directory" in error.message


def test_the_policy_is_stored_with_the_run_and_read_back() -> None:
    config = RunConfig(approvals={"tools": "run_python, git.*", "timeout_s": 60})
    assert config.approvals.tools == ("run_python", "git.*")
    again = RunConfig.from_settings(config.to_settings())
    assert again.approvals == config.approvals
    assert again.approvals.covers("git.commit", "researcher")
    assert not again.approvals.covers("github.commit", "researcher")


@pytest.mark.parametrize(
    "fields, match",
    [({"timeout_s": 0}, "timeout_s must be a positive"),
     ({"on_timeout": "ignore"}, "on_timeout must be one of deny, approve, fail"),
     ({"spawns_over": -1}, "spawns_over must be an integer"),
     ({"tools": "a,,b"}, "names separated by commas"),
     ({"every": True}, r"unknown approval setting\(s\) \['every'\]")],
)  # fmt: skip
def test_a_bad_policy_names_the_value(fields: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        RunConfig(approvals=fields)


def test_approvals_refuse_an_executor_that_cannot_wait() -> None:
    with pytest.raises(ConfigError, match="approvals need the local executor"):
        RunConfig(executor="ray", approvals={"tools": ["x"]})


def test_a_decision_is_checked() -> None:
    with pytest.raises(ApprovalError, match="denied call runs with no arguments"):
        Decision("deny", {"a": 1})
    with pytest.raises(ApprovalError, match="'approve' or 'deny'"):
        Decision("maybe")  # type: ignore[arg-type]


async def test_five_hundred_sub_agents_finish_while_one_call_waits(tmp_path: Path) -> None:
    swarm, seen = _asking_swarm(tmp_path, max_concurrency=8)
    run = asyncio.create_task(swarm.execute(_plan(500), run_id="r8"))
    await _pending(swarm, "r8")
    for _ in range(1000):
        if len(seen["finished"]) == 500:
            break
        await asyncio.sleep(0.01)
    assert len(seen["finished"]) == 500 and not run.done()  # all of them, the asker waiting
    swarm.approve("r8", "a1")
    result = await asyncio.wait_for(run, 10)
    assert result.status.value == "completed"


async def test_the_progress_view_says_what_waits_for_a_person(tmp_path: Path) -> None:
    from kimmy_swarm.swarm._progress_render import format_line
    from kimmy_swarm.swarm._progress_stats import RunStats

    swarm, _ = _asking_swarm(tmp_path)
    stats = RunStats()
    run = asyncio.create_task(swarm.execute(_plan(0), run_id="r9", sinks=[stats]))
    await _pending(swarm, "r9")
    await asyncio.sleep(0.05)  # the event reaches the sinks once it is stored
    assert "1 call waiting for approval (kimmy approvals)" in format_line(stats.snapshot())
    swarm.approve("r9", "a1")
    await asyncio.wait_for(run, 5)
    assert "waiting for approval" not in format_line(stats.snapshot())


async def test_every_runs_waiting_calls_are_listed_newest_run_first(tmp_path: Path) -> None:
    swarm, _ = _asking_swarm(tmp_path)
    older = asyncio.create_task(swarm.execute(_plan(0), run_id="older"))
    await _pending(swarm, "older")
    newer = asyncio.create_task(swarm.execute(_plan(0), run_id="newer"))
    await _pending(swarm, "newer")
    store = RunStore(tmp_path)
    assert [(a.run_id, a.call_id) for a in store.approvals(None, pending=True)] == [
        ("newer", "a1"), ("older", "a1")]  # fmt: skip
    swarm.approve("older", "a1")
    swarm.approve("newer", "a1")
    await asyncio.wait_for(asyncio.gather(older, newer), 5)
    assert store.approvals(None, pending=True) == []
    assert len(store.approvals(None)) == 2
    store.close()
