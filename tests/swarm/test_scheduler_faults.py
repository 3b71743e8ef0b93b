"""Faults inside sub-agents and inside the runtime's own bookkeeping."""

from __future__ import annotations

import asyncio

import pytest

import swarm.subtask_runner as attempt_mod
from swarm import Plan, Subtask, SubtaskContext, Swarm


async def test_timeout_masked_as_another_error_is_still_a_timeout() -> None:
    swarm = Swarm(max_retries=0, timeout_s=0.05)

    @swarm.role("w")
    async def masking(ctx: SubtaskContext) -> None:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            raise RuntimeError("interrupted while waiting") from None

    result = await swarm.execute(Plan(subtasks=[Subtask(id="a", role="w")]))
    err = result.results["a"].error
    assert err is not None and err.type == "SubtaskTimeoutError", err


async def test_a_bug_in_the_bookkeeping_stops_the_run_instead_of_hanging(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = attempt_mod._result

    def broken(st, *args, **kwargs):  # type: ignore[no-untyped-def]
        if st.id == "b":
            raise ZeroDivisionError("bookkeeping bug")
        return real(st, *args, **kwargs)

    monkeypatch.setattr(attempt_mod, "_result", broken)
    swarm = Swarm()

    @swarm.role("w")
    async def work(ctx: SubtaskContext) -> int:
        return 1

    plan = Plan(subtasks=[Subtask(id=k, role="w") for k in "abc"])
    with pytest.raises(ZeroDivisionError, match="bookkeeping bug"):
        async with asyncio.timeout(5):
            await swarm.execute(plan)
