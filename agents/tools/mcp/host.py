"""`McpHost`: a run's MCP servers, one session each, shared by every sub-agent.

The host runs its own event loop on a background thread: each server has one task there
that owns its connection (the SDK's transports must be entered and left by one task),
starts it, lists its tools and holds it open. Sub-agents' tools are plain functions run on
worker threads (`agents.loop.attempt`), so a call hops onto the host's loop, waits for a
place under the server's `max_in_flight`, and comes back as the tool's text:

- a server that crashed (its connection closed under a call) is started again, with a
  backoff of 0.5 s doubling to 30 s; the call that saw it gets a tool error, and calls
  meanwhile wait for the new session (a tool error after `START_TIMEOUT_S`), never a
  crashed run;
- a call past its `timeout_s` is cancelled on the server and its caller told; three in a
  row and the server is started again (a hung server answers nothing);
- a result marked as an error, or any failure, is a `ToolError` naming the server and the
  tool: the calling sub-agent sees it and may call again.

A tool's result is the text of its content (text parts, the text of embedded resources,
a line for each image or link), or its structured content as JSON when it has no text,
cut at `MAX_RESULT_CHARS`. It is data for the model, given back as the tool's result like
any other tool's; nothing in it is read by the runtime.

    with McpHost(McpConfig.load("mcp.json"), log_dir=out) as host:
        box = host.toolbox()          # git.git_status, time.get_current_time, …
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import shutil
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from kimmy_swarm.agents.toolbox import Tool, ToolBox, ToolError
from kimmy_swarm.agents.tools.mcp.config import HttpServer, McpConfig, McpServer, StdioServer
from kimmy_swarm.swarm.errors import ConfigError

if TYPE_CHECKING:
    from mcp import ClientSession

#: A tool's result is cut here (a page of a repository's log can be megabytes).
MAX_RESULT_CHARS = 20_000
#: How long `start` waits for every server to answer `initialize` and list its tools.
START_TIMEOUT_S = 30.0
#: The first wait before a crashed server is started again, and the longest.
RESTART_DELAY_S = (0.5, 30.0)
#: Calls in a row past their limit after which a server is taken for hung and restarted.
HUNG_AFTER_TIMEOUTS = 3
#: MCP's JSON-RPC error codes the host tells apart.
_CONNECTION_CLOSED = -32000
_REQUEST_TIMEOUT = -32001


class _AnyArguments(BaseModel):
    """An MCP tool's arguments: checked by the server against its own schema."""

    model_config = ConfigDict(extra="allow")


@dataclass
class ServerStats:
    """What one server did in this run."""

    calls: int = 0
    errors: int = 0
    timeouts: int = 0
    restarts: int = 0
    #: Calls in flight now.
    in_flight: int = 0
    #: The most calls that were in flight at once.
    peak_in_flight: int = 0


@dataclass
class _Link:
    """One server's connection, owned by one task on the host's loop."""

    name: str
    spec: McpServer
    errlog: IO[str]
    tools: list[Any] = field(default_factory=list)
    stats: ServerStats = field(default_factory=ServerStats)
    session: ClientSession | None = None
    failure: str | None = None
    timeouts_in_a_row: int = 0
    closing: bool = False

    def __post_init__(self) -> None:
        self.ready = asyncio.Event()
        self.lost = asyncio.Event()
        self.tried = asyncio.Event()  # set after the first start ended either way
        self.gate = asyncio.Semaphore(self.spec.max_in_flight)

    @contextlib.asynccontextmanager
    async def _streams(self) -> AsyncIterator[Any]:
        if isinstance(self.spec, StdioServer):
            from mcp import StdioServerParameters, stdio_client

            params = StdioServerParameters(
                command=self.spec.command, args=self.spec.args, env=self.spec.env or None,
                cwd=self.spec.cwd,
            )  # fmt: skip
            async with stdio_client(params, errlog=self.errlog) as streams:
                yield streams
        else:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            assert isinstance(self.spec, HttpServer)
            async with (
                httpx2.AsyncClient(headers=self.spec.headers, timeout=None) as client,
                streamable_http_client(self.spec.url, http_client=client) as streams,
            ):
                yield streams

    async def hold(self) -> None:
        """Start the server, list its tools, keep the session open; start it again (after a
        backoff) whenever a call found it gone, until the host closes."""
        from mcp import ClientSession

        delay = RESTART_DELAY_S[0]
        while not self.closing:
            try:
                async with self._streams() as (read, write), ClientSession(read, write) as session:
                    await session.initialize()
                    self.tools = await _all_tools(session)
                    self.session, self.failure, self.timeouts_in_a_row = session, None, 0
                    self.ready.set()
                    self.tried.set()
                    delay = RESTART_DELAY_S[0]
                    await self.lost.wait()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001  (a server's failure is told, not raised)
                self.failure = _describe(exc)
            finally:
                self.session = None
                self.ready.clear()
                self.lost.clear()
                self.tried.set()
            if self.closing:
                return
            await asyncio.sleep(delay)
            delay = min(delay * 2, RESTART_DELAY_S[1])
            self.stats.restarts += 1

    def _drop(self) -> None:
        """Take the session for gone: calls from now on wait for the next start."""
        self.ready.clear()
        self.session = None
        self.lost.set()

    async def call(self, tool: str, arguments: Mapping[str, Any]) -> str:
        """The text of one call's result.

        Raises:
            ToolError: the server is down past the call's limit, the call timed out, the
                connection closed under it, or the result is an error.
        """
        from mcp import MCPError

        limit = self.spec.timeout_s
        async with self.gate:
            if not self.ready.is_set():
                try:
                    await asyncio.wait_for(self.ready.wait(), max(limit, START_TIMEOUT_S))
                except TimeoutError:
                    raise ToolError(
                        f"MCP server {self.name!r} is not running ({self.failure or 'starting'}); "
                        f"it is being started again: call later"
                    ) from None
            session = self.session
            assert session is not None
            self.stats.calls += 1
            self.stats.in_flight += 1
            self.stats.peak_in_flight = max(self.stats.peak_in_flight, self.stats.in_flight)
            try:
                result = await session.call_tool(tool, dict(arguments), read_timeout_seconds=limit)
            except MCPError as exc:
                self.stats.errors += 1
                if exc.code == _REQUEST_TIMEOUT:
                    self.stats.timeouts += 1
                    self.timeouts_in_a_row += 1
                    if self.timeouts_in_a_row >= HUNG_AFTER_TIMEOUTS:
                        self._drop()
                    raise ToolError(
                        f"{self.name}.{tool}: no answer within {limit:g} s (the call was cancelled)"
                    ) from None
                if exc.code == _CONNECTION_CLOSED:
                    self._drop()
                    raise ToolError(
                        f"{self.name}.{tool}: the MCP server {self.name!r} closed the connection "
                        "(it is being started again; call later)"
                    ) from None
                raise ToolError(f"{self.name}.{tool}: {exc.error.message}") from None
            except Exception as exc:  # noqa: BLE001  (a broken transport: start it again)
                self.stats.errors += 1
                self._drop()
                raise ToolError(
                    f"{self.name}.{tool}: the MCP server {self.name!r} failed ({_describe(exc)}); "
                    "it is being started again: call later"
                ) from None
            finally:
                self.stats.in_flight -= 1
            self.timeouts_in_a_row = 0
        text = result_text(result)
        if result.is_error:
            self.stats.errors += 1
            raise ToolError(f"{self.name}.{tool}: {text or 'the tool failed'}")
        return text


class McpHost:
    """The MCP servers of one run, started by `start` (or `with`), closed by `close`.

    Args:
        config: the servers.
        log_dir: where each server's stderr goes (`mcp-NAME.log`); default a temporary
            folder removed at `close`.
        start_timeout_s: how long `start` waits for every server.
    """

    def __init__(
        self,
        config: McpConfig,
        *,
        log_dir: Path | None = None,
        start_timeout_s: float = START_TIMEOUT_S,
    ) -> None:
        self.config = config
        self._own_logs = log_dir is None
        self.log_dir = Path(tempfile.mkdtemp(prefix="kimmy-mcp-")) if log_dir is None else log_dir
        self.start_timeout_s = start_timeout_s
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._links: dict[str, _Link] = {}
        self._holders: list[asyncio.Task[None]] = []
        self._logs: list[IO[str]] = []
        self._calls: set[concurrent.futures.Future[str]] = set()

    # --- life -----------------------------------------------------------------------------

    def start(self) -> McpHost:
        """Start every server and list its tools (once; later calls do nothing).

        Raises:
            ConfigError: a server did not start within `start_timeout_s` (its name, why,
                and the end of its stderr); a config as a run stored it, without its
                secrets (`McpConfig.not_stored`).
        """
        if self._thread is not None:
            return self
        missing = self.config.not_stored()
        if missing:
            raise ConfigError(
                "the MCP servers' env and header values are not stored with a run (they "
                f"hold API keys): {'; '.join(missing)}; give the MCP config again "
                "(kimmy resume RUN --mcp-config FILE)"
            )
        self.log_dir.mkdir(parents=True, exist_ok=True)
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._thread = threading.Thread(target=loop.run_forever, name="kimmy-mcp", daemon=True)
        self._thread.start()
        try:
            asyncio.run_coroutine_threadsafe(self._start(), loop).result(self.start_timeout_s + 5)
        except Exception:
            self.close()
            raise
        return self

    async def _start(self) -> None:
        for name, spec in self.config.servers.items():
            errlog = (self.log_dir / f"mcp-{name}.log").open("a", encoding="utf-8")
            self._logs.append(errlog)
            link = _Link(name, spec, errlog)
            self._links[name] = link
            self._holders.append(asyncio.create_task(link.hold(), name=f"mcp-{name}"))
        deadline = time.monotonic() + self.start_timeout_s
        for name, link in self._links.items():
            try:
                await asyncio.wait_for(link.tried.wait(), max(0.0, deadline - time.monotonic()))
            except TimeoutError:
                link.failure = f"no answer within {self.start_timeout_s:g} s"
            if not link.ready.is_set():
                raise ConfigError(
                    f"MCP server {name!r} did not start: {link.failure}"
                    + _log_tail(self.log_dir / f"mcp-{name}.log")
                )

    def close(self) -> None:
        """Stop every server (each is told to exit; the SDK kills one that does not)."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        self._loop = self._thread = None
        for call in list(self._calls):  # a caller waiting on a call is told, not left hanging
            call.cancel()

        async def stop() -> None:
            for link in self._links.values():
                link.closing = True
                link.lost.set()
            for task in self._holders:
                task.cancel()
            await asyncio.gather(*self._holders, return_exceptions=True)

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(stop(), loop).result(15)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(15)
        if not thread.is_alive():
            loop.close()
        for log in self._logs:
            log.close()
        if self._own_logs:
            shutil.rmtree(self.log_dir, ignore_errors=True)

    def __enter__(self) -> McpHost:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- use ------------------------------------------------------------------------------

    @property
    def servers(self) -> list[str]:
        return list(self._links)

    def stats(self, server: str) -> ServerStats:
        """What `server` did so far."""
        return self._links[server].stats

    def call(self, server: str, tool: str, arguments: Mapping[str, Any] | None = None) -> str:
        """Call `tool` of `server` from any thread but the host's; its result's text.

        Raises:
            ToolError: any failure of the call (says which and why).
        """
        loop = self._loop
        link = self._links.get(server)
        if loop is None or link is None:
            raise ToolError(f"MCP server {server!r} is not running in this run")
        future = asyncio.run_coroutine_threadsafe(link.call(tool, arguments or {}), loop)
        self._calls.add(future)
        try:
            return future.result()
        except ToolError:
            raise
        except concurrent.futures.CancelledError:
            raise ToolError(f"{server}.{tool}: the run's MCP servers were closed") from None
        except Exception as exc:  # noqa: BLE001  (the host closed under the call)
            raise ToolError(f"{server}.{tool}: {_describe(exc)}") from None
        finally:
            self._calls.discard(future)

    def toolbox(self) -> ToolBox:
        """Every server's tools, named `server.tool`, with the server's own JSON schemas."""
        box = ToolBox()
        for name, link in self._links.items():
            for listed in link.tools:
                box.add(self._tool(name, listed))
        return box

    def _tool(self, server: str, listed: Any) -> Tool:
        tool_name = str(listed.name)

        def call(**arguments: Any) -> str:
            return self.call(server, tool_name, arguments)

        schema = dict(listed.input_schema or {"type": "object", "properties": {}})
        text = listed.description or getattr(listed, "title", None) or tool_name
        return Tool(f"{server}.{tool_name}", " ".join(str(text).split()), _AnyArguments,
                    call, schema=schema)  # fmt: skip


async def _all_tools(session: ClientSession) -> list[Any]:
    """Every tool a server lists, page after page (a large server paginates)."""
    from mcp import types

    tools: list[Any] = []
    cursor: str | None = None
    while True:
        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        tools += page.tools
        cursor = page.next_cursor
        if not cursor:
            return tools


def result_text(result: Any) -> str:
    """The text a model is given for an MCP tool's result (see the module's docstring)."""
    parts: list[str] = []
    for item in result.content or ():
        kind = getattr(item, "type", "")
        if kind == "text":
            parts.append(item.text)
        elif kind == "resource":
            inner = item.resource
            parts.append(getattr(inner, "text", None) or f"[resource {inner.uri}]")
        elif kind == "resource_link":
            parts.append(f"[resource {item.uri}]")
        elif kind in ("image", "audio"):
            parts.append(f"[{kind} {item.mime_type}]")
    text = "\n".join(parts)
    if not text and result.structured_content is not None:
        text = json.dumps(result.structured_content, ensure_ascii=False, default=str)
    if len(text) > MAX_RESULT_CHARS:
        text = f"{text[:MAX_RESULT_CHARS]}… ({len(text) - MAX_RESULT_CHARS:,} more characters)"
    return text


def _describe(exc: BaseException) -> str:
    """One line for an exception, an exception group's first leaf."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    message = getattr(getattr(exc, "error", None), "message", None) or str(exc)
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _log_tail(path: Path, lines: int = 5) -> str:
    try:
        tail = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-lines:]
    except OSError:
        return ""
    return ("; its stderr ended: " + " | ".join(tail)) if tail else ""


__all__ = ["MAX_RESULT_CHARS", "McpHost", "ServerStats", "result_text"]
