"""A model server that dies mid-run: the circuit breaker of its endpoint (`swarm.llm.circuit`)
keeps the remaining sub-agents from spending their attempts on a closed port; the run stops
with one reason, resumable, and a resume against a live server finishes it — nothing lost,
nothing finished run twice."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from kimmy_swarm.swarm.errors import (
    ModelConnectionError,
    ModelServerError,
    ModelUnreachableError,
)
from kimmy_swarm.swarm.llm.circuit import CircuitBreaker, CircuitSettings
from kimmy_swarm.swarm.schema import RunStatus
from tests.support.dead_server import killed_run, resume_live

N = 60
FAST = CircuitSettings(failures=3, first_probe_s=0.2, max_probe_s=0.4, give_up_s=1.5)


async def test_a_dead_server_is_not_hammered_and_resume_finishes_the_rest(
    tmp_path: Path,
) -> None:
    run = await killed_run(N, FAST, tmp_path)
    result, statuses = run["result"], run["states"]
    assert result.status is RunStatus.CANCELLED
    assert result.stop_reason is not None and result.stop_reason.startswith(
        f"model server at {run['url']} unreachable: "
    )
    assert "kimmy resume continues it" in result.stop_reason
    assert statuses["failed"] == 0 and statuses["done"] >= N * 3 // 10
    # before: every remaining sub-agent tried 3 times (~120 refused connections here)
    assert run["refused"] <= 4 + FAST.failures + run["probes"], run
    done_before = {k for k, r in result.results.items() if r.status.value == "done"}
    resumed, asked = await resume_live(tmp_path)
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
