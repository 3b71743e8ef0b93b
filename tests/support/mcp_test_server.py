"""An MCP server written with the official SDK, for the client's tests: run as a program.

    python tests/support/mcp_test_server.py [STATE_DIR]            # stdio
    python tests/support/mcp_test_server.py STATE_DIR http PORT    # streamable HTTP

`tests.support.mcp_processes.serving_http(state)` runs it over HTTP for a test.

Tools: `add`, `echo_slow` (answers after a pause, counting how many calls were in it at
once), `fail` (a tool error), `hang` (never answers), `crash_once` (the process exits in the
middle of its first call, once per STATE_DIR), `big` (a long text), `starts` (how many times
this server was started with STATE_DIR).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

STATE = Path(sys.argv[1]) if len(sys.argv) > 1 else None
server = MCPServer("kimmy-test", version="1.0")
_now = {"in": 0, "peak": 0}


def _bump(name: str) -> int:
    if STATE is None:
        return 0
    path = STATE / name
    count = int(path.read_text()) + 1 if path.exists() else 1
    path.write_text(str(count))
    return count


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
async def echo_slow(text: str, seconds: float = 0.02) -> str:
    """Answer `text` after `seconds`; the answer ends with the most calls in flight at once."""
    _now["in"] += 1
    _now["peak"] = max(_now["peak"], _now["in"])
    try:
        await anyio.sleep(seconds)
    finally:
        _now["in"] -= 1
    return f"{text} (peak {_now['peak']})"


@server.tool()
def fail(reason: str) -> str:
    """Always fails, saying `reason`."""
    raise ToolError(reason)


@server.tool()
async def hang() -> str:
    """Never answers."""
    await anyio.sleep_forever()
    return "never"


@server.tool()
def crash_once() -> str:
    """The process exits in the middle of the first call (per state folder); then 'alive'."""
    if _bump("crash_once") == 1:
        os._exit(3)
    return "alive"


@server.tool()
def big(chars: int) -> str:
    """A text of `chars` characters."""
    return "x" * chars


@server.tool()
def starts() -> int:
    """How many times this server was started with its state folder."""
    return int((STATE / "starts").read_text()) if STATE is not None else 0


if __name__ == "__main__":
    _bump("starts")
    if len(sys.argv) > 3 and sys.argv[2] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[3]))
    else:
        server.run()
