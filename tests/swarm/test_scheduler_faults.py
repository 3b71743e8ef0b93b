"""Faults inside sub-agents and inside the runtime's own bookkeeping."""

from __future__ import annotations

import asyncio

import pytest

from kimmy_swarm.swarm import Plan, Subtask, SubtaskContext, Swarm
from kimmy_swarm.swarm import subtask_runner as attempt_mod
from kimmy_swarm.swarm.llm import OpenAIChat
from tests.support.openai_server import OpenAIServer, malformed, reply
from tests.support.scheduling import make_plan, make_swarm


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


async def test_truncated_and_garbled_2xx_bodies_are_retried_to_success() -> None:
    """Before, a 200 whose body was cut short or not a completion failed its subtask at
    once, whatever `max_retries` said."""

    async def call_model(ctx: SubtaskContext) -> str:
        response = await ctx.model.chat([{"role": "user", "content": ctx.id}])
        return response.content or ""

    bad = [
        malformed(b'{"id": "x", "choices": [{"message": {"content": "cut sho'),  # truncated
        malformed(b"<html>502 Bad Gateway</html>"),  # a proxy's page, labelled JSON
        malformed(b'{"id": "x", "choices": []}'),
        malformed(b""),
    ]
    with OpenAIServer(bad, default=reply("fine")) as srv:
        async with OpenAIChat(srv.base_url, "m") as model:
            swarm = make_swarm(roles={"work": call_model}, model=model, max_concurrency=1,
                               max_retries=4)  # fmt: skip
            result = await swarm.execute(make_plan(*((f"s{i}", []) for i in range(3))))
        served = len(srv.chat_requests)
    assert result.ok, {k: r.error for k, r in result.results.items()}
    assert result.outputs == {"s0": "fine", "s1": "fine", "s2": "fine"}
    assert result.results["s0"].attempts == 5 and served == 4 + 3
