"""A model server killed mid-run: calls to the dead port, with and without the circuit breaker.

    python benchmarks/bench_dead_server.py [--n 500] [--out PATH]

A flat plan of N sub-agents (one model call each, `max_concurrency` 4, 2 retries) runs
against a loopback echo server that is stopped once 30% of the calls have been answered.
Two cases in one invocation: the breaker effectively off (`CircuitSettings(failures=10**9)`:
what every run did before issue 35) and the default breaker. Reported: the sub-agents' end
states, the calls that failed against the dead port (the `model_called` events with an error,
plus the breaker's own probes), the wall-clock, and the run's stop reason; then the default
case is resumed against a live server: every sub-agent done, none that had finished asked
again.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import platform
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks._results import add_out_option, publish  # noqa: E402
from kimmy_swarm.swarm import Plan, Subtask, SubtaskContext, Swarm  # noqa: E402
from kimmy_swarm.swarm.llm import OpenAIChat  # noqa: E402
from kimmy_swarm.swarm.llm.circuit import CircuitSettings  # noqa: E402
from kimmy_swarm.swarm.store import RunStore  # noqa: E402
from tests.support.openai_server import OpenAIServer, echo  # noqa: E402


async def call_model(ctx: SubtaskContext) -> str:
    response = await ctx.model.chat([{"role": "user", "content": ctx.id}])
    return response.content or ""


def _swarm(runs: Path, model: OpenAIChat) -> Swarm:
    swarm = Swarm(runs_dir=runs, model=model, max_concurrency=4, max_retries=2)
    swarm.role("work")(call_model)
    return swarm


async def killed_run(n: int, settings: CircuitSettings, runs: Path) -> dict[str, Any]:
    plan = Plan(goal="dead server", subtasks=[Subtask(id=f"s{i}", role="work") for i in range(n)])
    with OpenAIServer(default=echo()) as live:
        model = OpenAIChat(live.base_url, "m", circuit=settings, timeout_s=5)

        async def kill_at_30_percent() -> None:
            while len(live.chat_requests) < n * 3 // 10:
                await asyncio.sleep(0.01)
            await asyncio.to_thread(live.stop)

        killer = asyncio.create_task(kill_at_30_percent())
        t0 = time.perf_counter()
        result = await _swarm(runs, model).execute(plan, run_id="dead")
        wall = time.perf_counter() - t0
        await killer
        refused, probes = model.circuit.refused, model.circuit.probes
        await model.aclose()
    events = RunStore(runs, create=False).events("dead", types=["model_called"])
    failed_calls = sum(1 for e in events if e.error is not None)  # type: ignore[attr-defined]
    return {"states": Counter(r.status.value for r in result.results.values()),
            "failed_calls": failed_calls, "refused": refused, "probes": probes, "wall_s": wall,
            "stop": result.stop_reason or "—",
            "done": {k for k, r in result.results.items() if r.status.value == "done"}}  # fmt: skip


async def resumed(runs: Path, done_before: set[str]) -> str:
    with OpenAIServer(default=echo()) as back:
        async with OpenAIChat(back.base_url, "m") as model:
            result = await _swarm(runs, model).resume("dead")
        asked = Counter(r.body["messages"][0]["content"] for r in back.chat_requests)
    states = Counter(r.status.value for r in result.results.values())
    again = len(done_before & set(asked))
    return (f"resume: {result.status.value}, {dict(states)}; {len(asked)} asked, "
            f"{again} of the {len(done_before)} finished before asked again")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=500)
    add_out_option(parser, "dead_server.md")
    args = parser.parse_args()
    cases = {"breaker off (before)": CircuitSettings(failures=10**9),
             "breaker on (default)": CircuitSettings()}  # fmt: skip
    rows, note = [], ""
    for name, settings in cases.items():
        with tempfile.TemporaryDirectory(prefix="kimmy-bench-dead-") as tmp:
            got = asyncio.run(killed_run(args.n, settings, Path(tmp)))
            print(name, got["states"], got["refused"], got["probes"], flush=True)
            rows.append((name, got))
            if settings.failures < 10**9:
                note = asyncio.run(resumed(Path(tmp), got["done"]))
    lines = [
        "# A model server killed at 30% of a run (`python benchmarks/bench_dead_server.py`)",
        "",
        f"{args.n} sub-agents, one call each, concurrency 4, 2 retries; one invocation, Python "
        f"{platform.python_version()}, {dt.date.today().isoformat()}, {platform.machine()} with "
        f"{os.cpu_count()} CPU cores. Calls to the dead port: connections refused (counted by "
        "the endpoint's breaker, also when it never opens); failed calls: the sub-agents' "
        "`model_called` events with an error.",
        "",
        "| case | done | failed | cancelled | pending | calls to the dead port | failed calls "
        "| probes | wall (s) | stop reason |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
        *(
            f"| {name} | {g['states']['done']} | {g['states']['failed']} | "
            f"{g['states']['cancelled']} | {g['states']['pending']} | "
            f"{g['refused']:,} | {g['failed_calls']:,} | {g['probes']} | {g['wall_s']:.1f} | "
            f"{g['stop']} |"
            for name, g in rows
        ),
        "",
        f"Then, against a live server, {note}.",
        "",
    ]
    publish("\n".join(lines), args.out)


if __name__ == "__main__":
    main()
