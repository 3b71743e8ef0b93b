"""The test MCP server (`tests/support/mcp_test_server.py`) run as a process over HTTP."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from tests.support.ports import free_port, wait_for_port

SERVER = Path(__file__).with_name("mcp_test_server.py")


@contextlib.contextmanager
def serving_http(state: Path) -> Iterator[str]:
    """The test server over streamable HTTP on a free loopback port, its state in `state`;
    yields the URL of its `/mcp` and stops it after."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), str(state), "http", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_for_port(port)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(10)


__all__ = ["SERVER", "serving_http"]
