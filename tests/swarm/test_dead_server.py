"""A model server that dies mid-run: the circuit breaker of its endpoint (`swarm.llm.circuit`)
keeps the remaining sub-agents from spending their attempts on a closed port; the run stops
with one reason, resumable, and a resume against a live server finishes it — nothing lost,
nothing finished run twice."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import pytest

from kimmy_swarm.swarm import Plan, Subtask, SubtaskContext, Swarm
from kimmy_swarm.swarm.errors import (
    ModelConnectionError,
    ModelServerError,
    ModelUnreachableError,
)
from kimmy_swarm.swarm.llm import OpenAIChat
from kimmy_swarm.swarm.llm.circuit import CircuitBreaker, CircuitSettings
from kimmy_swarm.swarm.schema import RunStatus
from kimmy_swarm.swarm.store import RunStore
from tests.support.openai_server import OpenAIServer, echo

N = 60
FAST = CircuitSettings(failures=3, first_probe_s=0.2, max_probe_s=0.4, give_up_s=1.5)


async def call_model(ctx: SubtaskContext) -> str:
    response = await ctx.model.chat([{"role": "user", "content": ctx.id}])
    return response.content or ""


def _plan() -> Plan:
    return Plan(goal="dead server", subtasks=[Subtask(id=f"s{i}", role="work") for i in range(N)])


def _swarm(tmp_path: Path, model: OpenAIChat) -> Swarm:
    swarm = Swarm(runs_dir=tmp_path, model=model, max_concurrency=4, max_retries=2)
    swarm.role("work")(call_model)
    return swarm


async def test_a_dead_server_is_not_hammered_and_resume_finishes_the_rest(
    tmp_path: Path,
) -> None:
    with OpenAIServer(default=echo()) as live:
        model = OpenAIChat(live.base_url, "m", circuit=FAST, timeout_s=5)

        async def kill_at_30_percent() -> None:
            while len(live.chat_requests) < N * 3 // 10:
                await asyncio.sleep(0.01)
            await asyncio.to_thread(live.stop)

        killer = asyncio.create_task(kill_at_30_percent())
        result = await _swarm(tmp_path, model).execute(_plan(), run_id="dead")
        await killer
        await model.aclose()
    statuses = Counter(r.status.value for r in result.results.values())
    assert result.status is RunStatus.CANCELLED
    assert result.stop_reason is not None and result.stop_reason.startswith(
        f"model server at {live.base_url} unreachable: "
    )
    assert "kimmy resume continues it" in result.stop_reason
    assert statuses["failed"] == 0 and statuses["done"] >= N * 3 // 10
    # before: every remaining sub-agent tried 3 times (~120 calls to the closed port here)
    store = RunStore(tmp_path, create=False)
    failed_calls = sum(
        1 for e in store.events("dead") if e.type == "model_called" and e.error is not None
    )
    assert failed_calls <= 4 + FAST.failures + 6, failed_calls  # in flight + to open + probes
    done_before = {k for k, r in result.results.items() if r.status.value == "done"}

    with OpenAIServer(default=echo()) as back:
        async with OpenAIChat(back.base_url, "m", circuit=FAST) as model:
            resumed = await _swarm(tmp_path, model).resume("dead")
        asked = Counter(r.body["messages"][0]["content"] for r in back.chat_requests)
    assert resumed.status is RunStatus.COMPLETED
    assert all(r.status.value == "done" for r in resumed.results.values())  # 0 lost
    assert not done_before & set(asked) and max(asked.values()) == 1  # 0 run twice


async def test_the_breaker_opens_probes_and_gives_up() -> None:
    now = [0.0]
    breaker = CircuitBreaker("http://x/v1", FAST, clock=lambda: now[0])
    refused = ModelConnectionError("refused")
    assert await breaker.admit() is False
    for _ in range(FAST.failures):
        breaker.failed(refused, probe=False)
    assert breaker.state == "open"
    waiting = asyncio.ensure_future(breaker.admit())
    await asyncio.sleep(0.05)
    assert not waiting.done()  # no call goes out while open
    now[0] = 0.25
    assert await waiting is True  # the probe
    breaker.failed(refused, probe=True)  # still down: open again, for longer
    now[0] = 0.5
    assert breaker.state == "open"
    now[0] = 0.7
    assert await breaker.admit() is True
    breaker.failed(ModelServerError("500", status=500), probe=True)  # it answered: closed
    assert breaker.closed and breaker.failures == 0 and await breaker.admit() is False
    for _ in range(FAST.failures):
        breaker.failed(refused, probe=False)
    now[0] = 0.7 + FAST.give_up_s
    with pytest.raises(ModelUnreachableError, match="3 connection attempts failed in a row"):
        await breaker.admit()


def test_circuit_settings_are_checked() -> None:
    from kimmy_swarm.swarm.errors import ConfigError

    with pytest.raises(ConfigError, match="failures must be an int >= 1, got 0"):
        CircuitSettings(failures=0)
    with pytest.raises(ConfigError, match="give_up_s must be > 0 seconds, got -1"):
        CircuitSettings(give_up_s=-1)
