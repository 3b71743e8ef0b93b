"""The scheduler under its limits: budgets, cancellation and resume, rate limit, admission."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path
from typing import Any, ClassVar

import pytest

from kimmy_swarm.swarm.context import SubtaskContext
from kimmy_swarm.swarm.errors import BudgetExceededError
from kimmy_swarm.swarm.limits import AdaptiveLimit
from kimmy_swarm.swarm.llm import ChatResponse, OpenAIChat, ScriptedChat
from kimmy_swarm.swarm.schema import RunStatus, SubtaskStatus, Usage
from kimmy_swarm.swarm.store import RunStore
from tests.support.openai_server import OpenAIServer, delay, reply, status
from tests.support.scheduling import Recorder, make_plan, make_swarm

S = SubtaskStatus


async def call_model(ctx: SubtaskContext) -> str:
    response = await ctx.model.chat([{"role": "user", "content": ctx.id}])
    return response.content or ""


# --- budgets ---------------------------------------------------------------------------


async def test_subagent_budget_skips_the_rest() -> None:
    rec = Recorder()
    swarm = make_swarm(roles={"work": call_model}, max_concurrency=2, max_subagents=4,
                       model=ScriptedChat.always("ok"), sinks=[rec])  # fmt: skip
    result = await swarm.execute(make_plan(*((f"s{i}", []) for i in range(10))))
    assert result.counts() == {"done": 4, "skipped_budget": 6}
    assert result.status is RunStatus.BUDGET_EXHAUSTED
    assert result.stop_reason == "sub-agent budget of 4 spent"
    assert [e.reason for e in rec.of("budget_exhausted")] == ["sub-agent budget of 4 spent"]
    skipped = [r for r in result.results.values() if r.status is S.SKIPPED_BUDGET]
    assert all(r.attempts == 0 and "budget" in r.error.message for r in skipped)  # type: ignore[union-attr]


async def test_token_budget_lets_in_flight_finish_and_skips_the_rest() -> None:
    def step(messages: list[dict[str, Any]], options: dict[str, Any]) -> ChatResponse:
        usage = Usage(prompt_tokens=60, completion_tokens=40, total_tokens=100, model_calls=1)
        return ChatResponse(content="x", usage=usage)

    swarm = make_swarm(roles={"work": call_model}, model=ScriptedChat.always(step),
                       max_total_tokens=250)  # fmt: skip
    chain = make_plan(*((f"s{i}", [f"s{i - 1}"] if i else []) for i in range(5)))
    result = await swarm.execute(chain)
    statuses = [result.results[f"s{i}"].status for i in range(5)]
    assert statuses == [S.DONE, S.DONE, S.DONE, S.SKIPPED_BUDGET, S.SKIPPED_BUDGET]
    assert result.status is RunStatus.BUDGET_EXHAUSTED
    assert result.stop_reason == "token budget of 250 spent (300 tokens used)"
    assert result.usage == Usage(
        prompt_tokens=180, completion_tokens=120, total_tokens=300, model_calls=3
    )


async def test_deadline_cancels_in_flight_and_skips_the_rest() -> None:
    async def work(ctx: SubtaskContext) -> str:
        if ctx.id.startswith("slow"):
            await asyncio.sleep(10)
        return ctx.id

    swarm = make_swarm(roles={"work": work}, deadline_s=0.25, max_retries=3)
    plan = make_plan(("fast", []), ("slow", []), ("slow2", ["fast"]), ("after", ["slow"]))
    result = await swarm.execute(plan)
    statuses = {k: r.status for k, r in result.results.items()}
    assert statuses == {
        "fast": S.DONE,
        "slow": S.CANCELLED,
        "slow2": S.CANCELLED,
        "after": S.SKIPPED_BUDGET,
    }
    assert result.status is RunStatus.BUDGET_EXHAUSTED
    assert result.stop_reason == "deadline of 0.25s reached"
    slow = result.results["slow"]
    assert slow.attempts == 1 and slow.error.type == BudgetExceededError.__name__  # type: ignore[union-attr]


# --- cancellation and resume -----------------------------------------------------------


async def test_cancel_saves_finished_work_and_resume_completes_the_rest(tmp_path: Path) -> None:
    calls: Counter[str] = Counter()
    release = asyncio.Event()
    quick_durable = asyncio.Event()

    async def work(ctx: SubtaskContext) -> str:
        calls[ctx.id] += 1
        if ctx.id == "slow":
            await release.wait()
        return f"out-{ctx.id}"

    class Watch:  # with a store, sinks see an event only once it is committed
        done: ClassVar[set[str]] = set()

        def handle(self, event: Any) -> None:
            if event.type == "subtask_finished" and event.result.status is S.DONE:
                self.done.add(event.result.id)
                if {"q0", "q1", "q2"} <= self.done:
                    quick_durable.set()

    swarm = make_swarm(roles={"work": work}, runs_dir=tmp_path, sinks=[Watch()])
    plan = make_plan(("q0", []), ("q1", []), ("q2", ["q0"]), ("slow", []),
                     ("final", ["q1", "q2", "slow"]))  # fmt: skip
    task = asyncio.create_task(swarm.execute(plan, run_id="run-1"))
    await asyncio.wait_for(quick_durable.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    with RunStore(tmp_path) as store:
        stored = store.load_run("run-1")
        assert stored.status is RunStatus.CANCELLED
        assert {k: r.status for k, r in stored.results.items()} == {
            "q0": S.DONE, "q1": S.DONE, "q2": S.DONE, "slow": S.CANCELLED,
        }  # fmt: skip
        assert stored.results["q2"].output == "out-q2"

    release.set()
    result = await swarm.resume("run-1")
    assert result.status is RunStatus.COMPLETED
    assert calls == {"q0": 1, "q1": 1, "q2": 1, "slow": 2, "final": 1}
    assert result.outputs["final"] == "out-final"
    with RunStore(tmp_path) as store:
        seqs = [e.seq for e in store.events("run-1")]
        assert seqs == list(range(len(seqs)))  # numbering continues across sessions
        assert store.load_run("run-1").status is RunStatus.COMPLETED


async def test_cancel_without_store_still_records_in_flight_as_cancelled() -> None:
    rec = Recorder()
    started = asyncio.Event()

    async def work(ctx: SubtaskContext) -> None:
        started.set()
        await asyncio.sleep(10)

    swarm = make_swarm(roles={"work": work}, sinks=[rec])
    task = asyncio.create_task(swarm.execute(make_plan(("a", []), ("b", ["a"]))))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    (finished,) = rec.of("subtask_finished")
    assert finished.result.id == "a" and finished.result.status is S.CANCELLED
    assert rec.events[-1].type == "run_finished" and rec.events[-1].status is RunStatus.CANCELLED


async def test_resumed_spawner_respawns_without_effect(tmp_path: Path) -> None:
    calls: Counter[str] = Counter()
    children_durable = asyncio.Event()
    release = asyncio.Event()

    async def lead(ctx: SubtaskContext) -> str:
        calls[ctx.id] += 1
        ctx.spawn([{"id": f"r{i}", "role": "work"} for i in range(2)], feeds=["writer"])
        await release.wait()
        return "lead"

    async def work(ctx: SubtaskContext) -> Any:
        calls[ctx.id] += 1
        return sorted(ctx.upstream) if ctx.id == "writer" else ctx.id

    class Watch:
        def handle(self, event: Any) -> None:
            if event.type == "subtask_finished" and event.result.id == "r1":
                children_durable.set()

    swarm = make_swarm(roles={"lead": lead, "work": work}, runs_dir=tmp_path, sinks=[Watch()])
    task = asyncio.create_task(
        swarm.execute(make_plan(("lead", [], "lead"), ("writer", ["lead"])), run_id="sp")
    )
    await asyncio.wait_for(children_durable.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    release.set()
    result = await swarm.resume("sp")
    assert result.status is RunStatus.COMPLETED
    assert calls == {"lead": 2, "r0": 1, "r1": 1, "writer": 1}
    assert result.outputs["writer"] == ["lead", "r0", "r1"]


# --- rate limit ------------------------------------------------------------------------


async def test_rate_limit_caps_calls_per_window() -> None:
    stamps: list[float] = []

    def step(messages: list[dict[str, Any]], options: dict[str, Any]) -> str:
        stamps.append(time.monotonic())
        return "ok"

    swarm = make_swarm(roles={"work": call_model}, model=ScriptedChat.always(step),
                       rate_limit="5/0.2", max_concurrency=50)  # fmt: skip
    result = await swarm.execute(make_plan(*((f"s{i}", []) for i in range(16))))
    assert result.ok and len(stamps) == 16
    stamps.sort()
    # Any 6 consecutive calls span more than one period (10 ms allowed for clock reads;
    # unthrottled, all 16 calls would land within a few milliseconds).
    gaps = [stamps[i + 5] - stamps[i] for i in range(len(stamps) - 5)]
    assert min(gaps) > 0.2 - 0.01, gaps


# --- adaptive admission against a real HTTP server -------------------------------------


async def test_adaptive_admission_backs_off_on_429_and_completes() -> None:
    n, limit = 16, 8
    rec = Recorder()
    burst = [delay(0.1, status(429))] * limit  # answered together
    with OpenAIServer(burst, default=delay(0.1, reply("fine"))) as srv:
        async with OpenAIChat(srv.base_url, "m") as model:
            swarm = make_swarm(roles={"work": call_model}, model=model, sinks=[rec],
                               max_concurrency=limit, max_retries=5)  # fmt: skip
            result = await swarm.execute(make_plan(*((f"s{i}", []) for i in range(n))))
        requests = srv.chat_requests
    assert result.ok and result.outputs["s0"] == "fine"
    changes = rec.of("concurrency_changed")
    assert changes and changes[0].previous == limit and changes[0].limit < limit
    assert "429" in changes[0].reason
    assert len(requests) == n + limit
    assert max(r.in_flight for r in requests[:limit]) == limit  # the burst was concurrent
    # The retries of the burst go through admission too: once the limit is cut, the server
    # never again sees the old concurrency (additive recovery from <= 4 reaches at most 7
    # in 16 successes). The cut comes with the 4th 429 (fewer are not sustained overload),
    # so up to 3 retries may leave before it, beside the rest of the burst.
    early = AdaptiveLimit(limit).min_overloads - 1
    after = [r.in_flight for r in requests[limit + early :]]
    assert max(after) < limit, after


async def test_a_timed_out_model_call_gives_its_admission_slot_back() -> None:
    async def step(messages: list[dict[str, Any]], options: dict[str, Any]) -> str:
        if messages[-1]["content"] == "a":
            await asyncio.sleep(10)
        return "ok"

    model = ScriptedChat.always(step)
    swarm = make_swarm(roles={"work": call_model}, model=model, max_concurrency=1, max_retries=0)
    result = await swarm.execute(make_plan(("a", []), ("b", []), timeout_s=0.05))
    assert result.results["a"].error.type == "SubtaskTimeoutError"  # type: ignore[union-attr]
    assert result.results["b"].status is S.DONE and result.outputs["b"] == "ok"


async def test_parallel_calls_of_one_subagent_are_not_held_while_healthy() -> None:
    in_flight = peak = 0

    async def step(messages: list[dict[str, Any]], options: dict[str, Any]) -> str:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.01)
        in_flight -= 1
        return "ok"

    async def fan(ctx: SubtaskContext) -> int:
        calls = [ctx.model.chat([{"role": "user", "content": str(i)}]) for i in range(4)]
        return len(await asyncio.gather(*calls))

    swarm = make_swarm(roles={"work": fan}, model=ScriptedChat.always(step), max_concurrency=1)
    result = await swarm.execute(make_plan(("a", [])))
    assert result.outputs == {"a": 4} and peak == 4
