"""Adaptive admission under faults: 5,000 sub-agents against a loopback server that fails.

    python benchmarks/bench_faults.py [--n 5000] [--overloaded-n 2000] [--runs 2] [--json]
                                      [--out PATH]

Two cases, each run with adaptive admission (the default) and with `--no-adaptive`
(`RunConfig(adaptive=False)`), alternating, `--runs` times each, in one invocation:

1. **Mixed faults** (`--fault-rate`, 15%): every request independently gets, in equal
   shares, a 500, a 429 with `Retry-After: 1`, a hang three times past the client's
   timeout, or a truncated 200 body; the rest answer after `--latency` seconds. Goal:
   100% of sub-agents finish, 0 lost, 0 duplicated (every subtask got exactly one good
   answer from the server, and its output is that answer), and adaptive no slower than
   `--no-adaptive` (≤ 1.1×).
2. **Truly overloaded** (`--capacity`, 16 requests at once): a request that finds more in
   flight is refused with 429 + `Retry-After: 1`. Adaptive admission should protect it:
   far fewer refused requests for the same work, in no more time.

The server is `tests.support.openai_server` (threads, HTTP/1.1 keep-alive) in a process of
its own, so it does not compete with the swarm for the GIL. The sub-agents are the swarm's
real path: `OpenAIChat` over HTTP, the metered client, retries with backoff.
Prints the page; `--out benchmarks/results/faults.md` writes the committed one; `--json` also
prints the figures as one object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import platform
import random
import statistics
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `tests.support` (the server), also in the server's process
    sys.path.insert(0, str(ROOT))

from benchmarks._results import add_out_option, publish  # noqa: E402

TIMEOUT_S = 1.0  # the client's per-call timeout; a hang lasts 3x this
FAULTS = ("500", "429", "hang", "truncated")


# --- the server (runs in its own process) ------------------------------------------------


@dataclass
class _Faults:
    """The behaviour of every chat request: a fault or, after `latency_s`, the echo of the
    subtask id. Counts what it answered (thread-safe: requests run in server threads)."""

    rate: float
    latency_s: float
    capacity: int | None
    seed: int
    rng: random.Random = field(init=False)
    lock: threading.Lock = field(default_factory=threading.Lock)
    good: Counter[str] = field(default_factory=Counter)
    kinds: Counter[str] = field(default_factory=Counter)
    peak: int = 0

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def __call__(self, request: Any) -> Any:
        from tests.support.openai_server import Reply, malformed, reply, status

        sid = request.body["messages"][-1]["content"]
        with self.lock:
            self.peak = max(self.peak, request.in_flight)
            if self.capacity is not None and request.in_flight > self.capacity:
                self.kinds["refused"] += 1
                kind = "refused"
            else:
                u = self.rng.random()
                kind = FAULTS[int(u / self.rate * 4)] if u < self.rate else "good"
                self.kinds[kind] += 1
                if kind == "good":
                    self.good[sid] += 1
        if kind in ("refused", "429"):
            return status(429, headers={"Retry-After": "1"})(request)
        if kind == "500":
            return status(500)(request)
        if kind == "hang":  # answered, but long after the client gave up
            return Reply(status=200, body=b"{}", delay_s=3 * TIMEOUT_S)
        if kind == "truncated":
            return malformed(b'{"id": "x", "object": "chat.completion", "choices": [{"mess')(
                request
            )
        answer = reply(sid)(request)
        return Reply(status=answer.status, body=answer.body, delay_s=self.latency_s)


def _serve(conn: Any) -> None:
    """The server process: (re)configure, report, stop — commands over `conn`."""
    from tests.support.openai_server import OpenAIServer

    faults = _Faults(0.0, 0.0, None, 0)
    with OpenAIServer(default=lambda request: faults(request)) as srv:
        conn.send(srv.base_url)
        while True:
            cmd, arg = conn.recv()
            if cmd == "configure":
                faults = _Faults(**arg)
                conn.send(None)
            elif cmd == "report":
                with faults.lock:
                    conn.send(
                        {
                            "good": dict(faults.good),
                            "kinds": dict(faults.kinds),
                            "peak": faults.peak,
                        }
                    )
            else:
                break


# --- the swarm (this process) --------------------------------------------------------------


class _Limits:
    """An event sink: the time-weighted mean of the admission limit, and how often it moved."""

    def __init__(self, start: int) -> None:
        self.limit, self.since, self.weighted, self.changes = start, time.perf_counter(), 0.0, 0
        self.began = self.since

    def handle(self, event: Any) -> None:
        if event.type == "concurrency_changed":
            now = time.perf_counter()
            self.weighted += self.limit * (now - self.since)
            self.limit, self.since, self.changes = event.limit, now, self.changes + 1

    def mean(self) -> float:
        now = time.perf_counter()
        total = now - self.began
        return (self.weighted + self.limit * (now - self.since)) / total if total else self.limit


async def _call_model(ctx: Any) -> str:
    response = await ctx.model.chat([{"role": "user", "content": ctx.id}])
    return response.content or ""


def _run_swarm(base_url: str, n: int, *, adaptive: bool, concurrency: int) -> dict[str, Any]:
    from kimmy_swarm.swarm import Plan, RunConfig, Subtask, Swarm
    from kimmy_swarm.swarm.llm import OpenAIChat

    async def main() -> dict[str, Any]:
        limits = _Limits(concurrency)
        async with OpenAIChat(base_url, "m", timeout_s=TIMEOUT_S, max_connections=512) as model:
            config = RunConfig(max_concurrency=concurrency, max_retries=12, adaptive=adaptive)
            swarm = Swarm(config=config, model=model, seed=0)
            swarm.role("work")(_call_model)
            plan = Plan(
                goal="faults", subtasks=[Subtask(id=f"s{i}", role="work") for i in range(n)]
            )
            t0 = time.perf_counter()
            result = await swarm.execute(plan, sinks=[limits])
            elapsed = time.perf_counter() - t0
        attempts = sum(r.attempts for r in result.results.values())
        return {
            "seconds": elapsed,
            "counts": result.counts(),
            "outputs_right": sum(result.outputs.get(f"s{i}") == f"s{i}" for i in range(n)),
            "attempts": attempts,
            "mean_limit": limits.mean(),
            "limit_changes": limits.changes,
        }

    return asyncio.run(main())


def _case(
    conn: Any, base_url: str, n: int, runs: int, concurrency: int, server: dict[str, Any]
) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {"adaptive": [], "fixed": []}
    for run in range(runs):
        for mode in ("fixed", "adaptive") if run % 2 else ("adaptive", "fixed"):
            conn.send(("configure", {**server, "seed": 1000 * run + (mode == "adaptive")}))
            conn.recv()
            got = _run_swarm(base_url, n, adaptive=mode == "adaptive", concurrency=concurrency)
            conn.send(("report", None))
            report = conn.recv()
            good = report.pop("good")  # per subtask id: counted here, not kept
            got["lost"] = n - sum(1 for i in range(n) if good.get(f"s{i}", 0) >= 1)
            got["duplicated"] = sum(1 for c in good.values() if c > 1)
            got["server"] = report
            out[mode].append(got)
            print(
                f"  {mode:8s} run {run + 1}: {got['seconds']:6.1f} s, done "
                f"{got['counts'].get('done', 0)}/{n}, lost {got['lost']}, duplicated "
                f"{got['duplicated']}, mean limit {got['mean_limit']:.1f}, "
                f"server answered {dict(sorted(report['kinds'].items()))}",
                file=sys.stderr,
                flush=True,
            )
    return out


def _median(rows: list[dict[str, Any]], key: str) -> float:
    return statistics.median(r[key] for r in rows)


def _summary(case: dict[str, list[dict[str, Any]]], n: int) -> dict[str, Any]:
    a, f = case["adaptive"], case["fixed"]

    def refused(rows: list[dict[str, Any]]) -> float:
        return statistics.median(
            r["server"]["kinds"].get("refused", 0) + r["server"]["kinds"].get("429", 0)
            for r in rows
        )

    return {
        "adaptive_s": _median(a, "seconds"),
        "fixed_s": _median(f, "seconds"),
        "ratio": _median(a, "seconds") / _median(f, "seconds"),
        "all_done": all(r["counts"].get("done", 0) == n and r["outputs_right"] == n for r in a + f),
        "lost": max(r["lost"] for r in a + f),
        "duplicated": max(r["duplicated"] for r in a + f),
        "adaptive_mean_limit": _median(a, "mean_limit"),
        "fixed_mean_limit": _median(f, "mean_limit"),
        "adaptive_429": refused(a),
        "fixed_429": refused(f),
        "adaptive_peak": max(r["server"]["peak"] for r in a),
        "fixed_peak": max(r["server"]["peak"] for r in f),
        "runs": case,
    }


def _table(name: str, s: dict[str, Any], n: int) -> list[str]:
    return [
        f"### {name} ({n:,} sub-agents)",
        "",
        "| | adaptive | `--no-adaptive` |",
        "|---|---:|---:|",
        f"| wall time, median (s) | {s['adaptive_s']:.1f} | {s['fixed_s']:.1f} |",
        f"| adaptive / no-adaptive | **{s['ratio']:.2f}×** | |",
        f"| mean admission limit | {s['adaptive_mean_limit']:.1f} | {s['fixed_mean_limit']:.1f} |",
        f"| 429s the server answered, median | {s['adaptive_429']:,.0f} | {s['fixed_429']:,.0f} |",
        f"| most requests in flight at the server | {s['adaptive_peak']} | {s['fixed_peak']} |",
        f"| all finished, right outputs | {s['all_done']} | |",
        f"| lost / duplicated (worst run) | {s['lost']} / {s['duplicated']} | |",
        "",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=5000, help="sub-agents, mixed-faults case")
    parser.add_argument("--overloaded-n", type=int, default=2000, help="sub-agents, case 2")
    parser.add_argument("--runs", type=int, default=2, help="runs of each mode per case")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.1, help="seconds per good answer")
    parser.add_argument("--fault-rate", type=float, default=0.15)
    parser.add_argument("--capacity", type=int, default=16)
    add_out_option(parser, "faults.md")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    ctx = mp.get_context("spawn")
    conn, child = ctx.Pipe()
    server = ctx.Process(target=_serve, args=(child,), daemon=True)
    server.start()
    base_url = conn.recv()
    try:
        print(f"mixed faults ({args.fault_rate:.0%}), {args.n} sub-agents:", file=sys.stderr)
        mixed = _case(
            conn,
            base_url,
            args.n,
            args.runs,
            args.concurrency,
            {"rate": args.fault_rate, "latency_s": args.latency, "capacity": None},
        )
        print(
            f"overloaded (capacity {args.capacity}), {args.overloaded_n} sub-agents:",
            file=sys.stderr,
        )
        over = _case(
            conn,
            base_url,
            args.overloaded_n,
            args.runs,
            args.concurrency,
            {"rate": 0.0, "latency_s": args.latency, "capacity": args.capacity},
        )
    finally:
        conn.send(("stop", None))
        server.join(10)
    figures = {"mixed": _summary(mixed, args.n), "overloaded": _summary(over, args.overloaded_n)}
    lines = [
        "## Adaptive admission under faults (`benchmarks/bench_faults.py`)",
        "",
        f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} CPUs, "
        f"`{' '.join(sys.argv[1:]) or '(defaults)'}`; max concurrency {args.concurrency}, "
        f"{args.latency * 1000:.0f} ms per good answer, client timeout {TIMEOUT_S:g} s, "
        f"{args.runs} runs of each mode per case (median).",
        "",
        *_table(
            f"Mixed faults: {args.fault_rate:.0%} of requests (500, 429 + Retry-After, "
            "hang, truncated body)",
            figures["mixed"],
            args.n,
        ),
        *_table(
            f"Truly overloaded: more than {args.capacity} in flight get 429 + Retry-After",
            figures["overloaded"],
            args.overloaded_n,
        ),
    ]
    publish("\n".join(lines), args.out)
    if args.json:
        print(json.dumps(figures, default=str))


if __name__ == "__main__":
    main()
