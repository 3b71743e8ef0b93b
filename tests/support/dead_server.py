"""A model server killed mid-run, as the circuit breaker's test and benchmark stage it: a
flat plan of N sub-agents (one model call each, concurrency 4, 2 retries) against a loopback
echo server stopped once 30% of the calls were answered; then a resume against a live one."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path
from typing import Any

from kimmy_swarm.swarm import Plan, Subtask, SubtaskContext, Swarm
from kimmy_swarm.swarm.llm import OpenAIChat
from kimmy_swarm.swarm.llm.circuit import CircuitSettings
from kimmy_swarm.swarm.schema import RunResult
from kimmy_swarm.swarm.store import RunStore
from tests.support.openai_server import OpenAIServer, echo


async def call_model(ctx: SubtaskContext) -> str:
    response = await ctx.model.chat([{"role": "user", "content": ctx.id}])
    return response.content or ""


def work_swarm(runs: Path, model: OpenAIChat) -> Swarm:
    swarm = Swarm(runs_dir=runs, model=model, max_concurrency=4, max_retries=2)
    swarm.role("work")(call_model)
    return swarm


async def killed_run(n: int, settings: CircuitSettings, runs: Path) -> dict[str, Any]:
    """Run `n` sub-agents as run "dead", the server killed at 30%. Returns the result, the
    sub-agents' end states, the connections the dead port refused (the breaker counts them
    even when it never opens), its probes, the failed `model_called` events, the wall-clock
    and the server's URL."""
    plan = Plan(goal="dead server", subtasks=[Subtask(id=f"s{i}", role="work") for i in range(n)])
    with OpenAIServer(default=echo()) as live:
        model = OpenAIChat(live.base_url, "m", circuit=settings, timeout_s=5)

        async def kill_at_30_percent() -> None:
            while len(live.chat_requests) < n * 3 // 10:
                await asyncio.sleep(0.01)
            await asyncio.to_thread(live.stop)

        killer = asyncio.create_task(kill_at_30_percent())
        t0 = time.perf_counter()
        result = await work_swarm(runs, model).execute(plan, run_id="dead")
        wall = time.perf_counter() - t0
        await killer
        await model.aclose()
    events = RunStore(runs, create=False).events("dead", types=["model_called"])
    return {
        "result": result, "states": Counter(r.status.value for r in result.results.values()),
        "refused": model.circuit.refused, "probes": model.circuit.probes,
        "failed_calls": sum(1 for e in events if e.error is not None),  # type: ignore[attr-defined]
        "wall_s": wall, "url": live.base_url,
    }  # fmt: skip


async def resume_live(runs: Path) -> tuple[RunResult, Counter[str]]:
    """Resume run "dead" against a live server: its result, and how often each sub-agent's
    call reached the server."""
    with OpenAIServer(default=echo()) as back:
        async with OpenAIChat(back.base_url, "m") as model:
            result = await work_swarm(runs, model).resume("dead")
        asked = Counter(r.body["messages"][0]["content"] for r in back.chat_requests)
    return result, asked


__all__ = ["call_model", "killed_run", "resume_live", "work_swarm"]
