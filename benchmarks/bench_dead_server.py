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
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks._results import add_out_option, publish  # noqa: E402
from kimmy_swarm.swarm.llm.circuit import CircuitSettings  # noqa: E402
from tests.support.dead_server import killed_run, resume_live  # noqa: E402


def _resumed_note(runs: Path, done_before: set[str]) -> str:
    result, asked = asyncio.run(resume_live(runs))
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
            got["stop"] = got["result"].stop_reason or "—"
            print(name, got["states"], got["refused"], got["probes"], flush=True)
            rows.append((name, got))
            if settings.failures < 10**9:
                done = {k for k, r in got["result"].results.items() if r.status.value == "done"}
                note = _resumed_note(Path(tmp), done)
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
