"""`benchmarks/bench_mcp.py` runs end to end and writes its table: a native tool and an MCP
server's tool over stdio and streamable HTTP, each answered (the timings are not asserted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the MCP client needs the `mcp` extra")


def test_the_mcp_benchmark_writes_its_table(tmp_path: Path) -> None:
    out = tmp_path / "mcp.md"
    done = subprocess.run(
        [sys.executable, "benchmarks/bench_mcp.py", "--calls", "20", "--out", str(out)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [line for line in out.read_text().splitlines() if line.startswith("| ")][1:]
    names = [r.split(" | ")[0].lstrip("| ") for r in rows]
    assert names == ["native", "MCP, stdio", "MCP, streamable HTTP"]
    for r in rows:
        cells = [c.strip() for c in r.strip("|").split("|")]
        assert float(cells[1]) > 0 and float(cells[4]) > 0
