"""How late `kimmy run` exits when its OpenTelemetry collector is down or hangs.

    python benchmarks/bench_otel_exit.py [--sizes 5,3000] [--out PATH]

For each plan size (a flat plan of N researchers, answered by a loopback echo server), the
command is run as a user runs it — a process of its own, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`
set — against four collectors: none (export off), a working one (an in-process OTLP/HTTP
collector), a down one (a closed port: connection refused) and a hanging one (accepts the
connection, never answers). Reported: the process's wall-clock from start to exit, and the
delay against export off in the same invocation. The setting says a run's end waits at most
5 s for spans (`otlp_sink(timeout_s=5)`); issue 35 measured 2.9 s → 28.2 s (down) and
42.2 s (hanging) for a small run, 7.8 s → 51.9 s for 3,000 sub-agents.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks._results import add_out_option, publish  # noqa: E402
from tests.support.openai_server import OpenAIServer, echo  # noqa: E402
from tests.support.otlp_collector import HangingCollector, OtlpCollector  # noqa: E402


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1/traces"  # nothing listens there now


def run_once(plan: Path, base_url: str, runs: Path, endpoint: str | None) -> tuple[float, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["PYTHONPATH"] = str(ROOT)
    if endpoint is not None:
        env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = endpoint
    command = [sys.executable, "-m", "kimmy_swarm.cli", "run", str(plan), "--base-url", base_url,
               "--model", "m", "--runs-dir", str(runs), "--json"]  # fmt: skip
    t0 = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=ROOT, timeout=600)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"kimmy run failed ({done.returncode}): {done.stderr[-2000:]}")
    warnings = [line for line in done.stderr.splitlines() if line.strip()]
    return wall, " / ".join(warnings)[:300]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="5,3000")
    add_out_option(parser, "otel_exit.md")
    args = parser.parse_args()
    sizes = [int(n) for n in args.sizes.split(",") if n]
    rows = []
    with tempfile.TemporaryDirectory(prefix="kimmy-bench-otel-") as tmp_name, OpenAIServer(
        default=echo()
    ) as model, OtlpCollector() as collector:  # fmt: skip
        tmp = Path(tmp_name)
        hanging = HangingCollector()
        try:
            for n in sizes:
                plan = tmp / f"plan_{n}.json"
                subtasks = [{"id": f"r{i}", "role": "researcher", "instructions": f"topic {i}"}
                            for i in range(n)]  # fmt: skip
                plan.write_text(json.dumps({"goal": "otel exit", "subtasks": subtasks}))
                cases = {
                    "export off": None,
                    "collector up": collector.traces_url,
                    "collector down": closed_port_url(),
                    "collector hanging": hanging.url,
                }
                base = None
                for name, endpoint in cases.items():
                    wall, said = run_once(plan, model.base_url, tmp / f"runs_{n}_{len(rows)}",
                                          endpoint)  # fmt: skip
                    base = wall if base is None else base
                    rows.append((n, name, wall, wall - base, said))
                    print(f"{n:>5} {name:<18} {wall:6.1f} s (+{wall - base:.1f} s) {said}",
                          flush=True)  # fmt: skip
        finally:
            hanging.close()
    lines = [
        "# `kimmy run` exit with the OpenTelemetry collector down or hanging "
        "(`python benchmarks/bench_otel_exit.py`)",
        "",
        f"One invocation, Python {platform.python_version()}, {dt.date.today().isoformat()}, "
        f"{platform.machine()} with {os.cpu_count()} CPU cores; a flat plan of N researchers "
        "against a loopback echo server; the bound is `otlp_sink(timeout_s=5)`.",
        "",
        "| sub-agents | collector | wall-clock (s) | delay vs export off (s) | stderr |",
        "|---:|---|---:|---:|---|",
        *(
            f"| {n} | {name} | {wall:.1f} | {delay:+.1f} | {said or '—'} |"
            for n, name, wall, delay, said in rows
        ),
        "",
    ]
    publish("\n".join(lines), args.out)


if __name__ == "__main__":
    main()
