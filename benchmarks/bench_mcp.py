"""The cost of a tool call to an MCP server against a native tool, as a sub-agent makes it.

    python benchmarks/bench_mcp.py [--calls 500] [--out PATH]

Both tools add two integers and are called the way a sub-agent's loop calls a tool: the
model's arguments as JSON text through the `ToolBox` (`Tool.__call__`). The native one is a
Python function; the MCP one is `add` of the SDK-written server the tests use
(`tests/support/mcp_test_server.py`), over stdio and over streamable HTTP on loopback, one
session per run (`McpHost`). Reported: the median and 95th percentile of one call, one
after another, and the wall-clock of 200 calls from 64 threads on a session capped at 8 in
flight (the issue's sharing case). All in one run; the per-call overhead is the MCP
median minus the native one.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks._results import add_out_option, publish  # noqa: E402
from kimmy_swarm.agents.toolbox import make_tool  # noqa: E402
from kimmy_swarm.agents.tools.mcp import McpConfig, McpHost  # noqa: E402
from tests.support.mcp_processes import serving_http  # noqa: E402

SERVER = ROOT / "tests" / "support" / "mcp_test_server.py"


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def timed(call: Callable[[], object], n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        call()
        out.append(time.perf_counter() - t0)
    return out


def shared(call: Callable[[int], object], n: int = 200, threads: int = 64) -> float:
    t0 = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(call, range(n)))
    return time.perf_counter() - t0


def row(name: str, seconds: list[float], native: float, wall: float | None) -> str:
    median = statistics.median(seconds)
    p95 = statistics.quantiles(seconds, n=20)[-1]
    over = "" if name == "native" else f"{(median - native) * 1e3:.2f}"
    shared_wall = f"{wall:.2f}" if wall is not None else ""
    return f"| {name} | {median * 1e3:.3f} | {p95 * 1e3:.3f} | {over} | {shared_wall} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=500)
    add_out_option(parser, "mcp.md")
    args = parser.parse_args()
    arguments = '{"a": 20, "b": 22}'
    native_tool = make_tool(add)
    native = timed(lambda: native_tool(arguments), args.calls)
    native_median = statistics.median(native)
    rows = [row("native", native, native_median, shared(lambda i: native_tool(arguments)))]
    with tempfile.TemporaryDirectory(prefix="kimmy-bench-mcp-") as tmp:
        entry = {"command": sys.executable, "args": [str(SERVER), tmp], "max_in_flight": 8}
        with McpHost(McpConfig.from_json({"mcpServers": {"t": entry}})) as host:
            tool = host.toolbox()["t.add"]
            tool(arguments)  # the first call warms the session
            over_stdio = timed(lambda: tool(arguments), args.calls)
            wall = shared(lambda i: tool(arguments))
        rows.append(row("MCP, stdio", over_stdio, native_median, wall))
        with serving_http(Path(tmp)) as url:
            web = {"h": {"url": url, "max_in_flight": 8}}
            with McpHost(McpConfig.from_json({"mcpServers": web})) as host:
                tool = host.toolbox()["h.add"]
                tool(arguments)
                over_http = timed(lambda: tool(arguments), args.calls)
                wall = shared(lambda i: tool(arguments))
            rows.append(row("MCP, streamable HTTP", over_http, native_median, wall))
    page = "\n".join([
        "# MCP tool calls vs a native tool (`python benchmarks/bench_mcp.py`)",
        "",
        f"`add(20, 22)` through the `ToolBox` as a sub-agent calls a tool; {args.calls} calls "
        "one after another (median, 95th percentile), and 200 calls from 64 threads on one "
        f"session capped at 8 in flight. One run, Python {platform.python_version()}, "
        f"{dt.date.today().isoformat()}, {platform.machine()} with {os.cpu_count()} CPU cores; "
        "the server is `tests/support/mcp_test_server.py` (the official SDK).",
        "",
        "| tool | median (ms) | p95 (ms) | overhead vs native (ms) | 200 shared calls (s) |",
        "|---|---:|---:|---:|---:|",
        *rows,
        "",
    ])  # fmt: skip
    publish(page, args.out)


if __name__ == "__main__":
    main()
