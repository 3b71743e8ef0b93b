"""Progress of a run: the sinks that show or stream its events.

The scheduler calls `sink.handle(event)` synchronously for every event, and a run of 10,000
sub-agents emits ~50,000 of them, so `handle` only updates counters in O(1). Drawing happens
elsewhere and at a bounded rate: in rich's refresh thread (`LiveView`), or behind a time
check (`LineSink`). `RunStats` (in `swarm._progress_stats`) is the bookkeeping all views
share; `make_progress` picks the sink that suits the output (live view on a terminal, plain
lines in a log, JSON lines for machines), and `EventStream` hands the events to Python
code as an async iterator.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
from types import TracebackType
from typing import Any, Self, TextIO

from rich.console import Console, RenderableType
from rich.live import Live

from kimmy_swarm.swarm._progress_render import (
    FailureNote,
    InFlightNote,
    RoleCounts,
    StatsSnapshot,
    format_line,
    render_live,
    render_summary,
)
from kimmy_swarm.swarm._progress_stats import Clock, RunStats
from kimmy_swarm.swarm.events import Event, ModelCalled, RunFinished


class ProgressSink:
    """What the scheduler feeds: `handle(event)` for every event, `close()` once at the end.

    Use a sink as a context manager so `close` runs (it draws or flushes the final state)
    even when the run raises.
    """

    def handle(self, event: Event) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Finish output; safe to call more than once."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class _SafeWriter:
    """Writes to a text stream until its reader goes away, then drops the rest.

    `kimmy run --json | head` closes the pipe early; that must not fail a run of thousands
    of sub-agents, so a BrokenPipeError is recorded in `broken` and writing stops.
    """

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.broken = False

    def write(self, text: str, *, flush: bool) -> None:
        if self.broken:
            return
        try:
            self.stream.write(text)
            if flush:
                self.stream.flush()
        except BrokenPipeError:
            self.broken = True
            if self.stream is sys.stdout:
                _silence_stdout()

    def flush(self) -> None:
        self.write("", flush=True)


def _silence_stdout() -> None:
    """Point stdout's fd at devnull after its reader left.

    Python flushes stdout again at exit and would report a second BrokenPipeError; the
    `signal` module docs advise this. A stdout without a real fd has nothing to silence.
    """
    try:
        fd = sys.stdout.fileno()
    except (OSError, ValueError):  # io.UnsupportedOperation: a wrapper with no fd
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


class LiveView(ProgressSink):
    """A live terminal view of a run, redrawn by rich's refresh thread, never per event.

    `handle` only updates `stats` under a lock (the refresh thread reads them while the
    event loop writes). On exit the live frame is cleared and a static summary printed.

    Args:
        console: Where to draw; defaults to stderr so stdout stays free for results.
        refresh_per_second: Redraw rate of the refresh thread.
        auto_refresh: False turns the refresh thread off (tests; callers that `refresh()`).
        top_roles: How many roles the role table shows.
        clock: Time source of the stats (elapsed, rates, ETA).
    """

    def __init__(
        self,
        *,
        console: Console | None = None,
        refresh_per_second: float = 8.0,
        auto_refresh: bool = True,
        top_roles: int = 10,
        clock: Clock = time.monotonic,
    ) -> None:
        self.console = console if console is not None else Console(stderr=True)
        self.stats = RunStats(clock=clock)
        #: Frames drawn so far; lets tests prove that `handle` never draws.
        self.renders = 0
        self._top_roles = top_roles
        self._lock = threading.Lock()
        self._closed = False
        self._live = Live(
            console=self.console,
            get_renderable=self._frame,
            refresh_per_second=refresh_per_second,
            auto_refresh=auto_refresh,
            transient=True,
        )

    def __enter__(self) -> Self:
        self._live.start(refresh=True)
        return self

    def handle(self, event: Event) -> None:
        with self._lock:
            self.stats.handle(event)

    def wants(self, cls: type[Any]) -> bool:
        return self.stats.wants(cls)

    def snapshot(self) -> StatsSnapshot:
        with self._lock:
            return self.stats.snapshot(top_roles=self._top_roles)

    def refresh(self) -> None:
        """Draw a frame now (only needed with `auto_refresh=False`)."""
        self._live.refresh()

    def _frame(self) -> RenderableType:
        self.renders += 1
        return render_live(self.snapshot())

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._live.stop()
        self.console.print(render_summary(self.snapshot()))


class JsonLinesSink(ProgressSink):
    """Each event as one JSON line (`parse_event` reads it back), for pipes and tools.

    Flushes on RunFinished, on close, and otherwise at most every `flush_interval_s`, so a
    reader sees events promptly without a syscall per event.

    Args:
        stream: Text stream to write to; defaults to `sys.stdout` at construction.
        include_model_calls: False leaves out ModelCalled, usually most of a run's events.
        flush_interval_s: Longest time a written line may sit in the stream's buffer.
        clock: Time source of the flush interval.
    """

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        include_model_calls: bool = True,
        flush_interval_s: float = 0.5,
        clock: Clock = time.monotonic,
    ) -> None:
        self._out = _SafeWriter(stream if stream is not None else sys.stdout)
        self.include_model_calls = include_model_calls
        self._flush_interval_s = flush_interval_s
        self._clock = clock
        self._last_flush = clock()

    @property
    def broken(self) -> bool:
        """True once the reader went away; later events are dropped."""
        return self._out.broken

    def handle(self, event: Event) -> None:
        if self._out.broken or (not self.include_model_calls and isinstance(event, ModelCalled)):
            return
        now = self._clock()
        flush = isinstance(event, RunFinished) or now - self._last_flush >= self._flush_interval_s
        if flush:
            self._last_flush = now
        self._out.write(event.model_dump_json() + "\n", flush=flush)

    def close(self) -> None:
        self._out.flush()


class LineSink(ProgressSink):
    """Plain progress lines for logs and CI: one at most every `interval_s`, one at the end.

    Args:
        stream: Text stream to write to; defaults to `sys.stderr` at construction.
        interval_s: Shortest time between two progress lines.
        clock: Time source of the throttle and the stats.
    """

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        interval_s: float = 2.0,
        clock: Clock = time.monotonic,
    ) -> None:
        self.stats = RunStats(clock=clock)
        self._out = _SafeWriter(stream if stream is not None else sys.stderr)
        self._interval_s = interval_s
        self._clock = clock
        self._next_at: float | None = None
        self._final_written = False
        #: Lines written so far.
        self.lines = 0

    def wants(self, cls: type[Any]) -> bool:
        return cls is RunFinished or self.stats.wants(cls)

    def handle(self, event: Event) -> None:
        self.stats.handle(event)
        if isinstance(event, RunFinished):
            self._write_line()
            self._final_written = True
            return
        now = self._clock()
        if self._next_at is None:
            self._next_at = now + self._interval_s
        elif now >= self._next_at:
            self._next_at = now + self._interval_s
            self._write_line()

    def _write_line(self) -> None:
        self.lines += 1
        self._out.write(format_line(self.stats.snapshot(top_roles=0)) + "\n", flush=True)

    def close(self) -> None:
        # A run that stopped without RunFinished (a crash) still gets its last numbers.
        if not self._final_written and self.stats.started_at is not None:
            self._write_line()
            self._final_written = True


class _End:
    """Queue marker: `close()` was called."""


class EventStream(ProgressSink):
    """A run's events as an async iterator: `async for ev in stream: ...`.

    Iteration ends after RunFinished has been yielded, or at once when `close()` is
    called. `handle` uses `put_nowait` on an unbounded queue so the scheduler never waits
    on a slow consumer; call it from the event loop's thread (asyncio queues are not
    thread-safe). A consumer that stops early should `close()` so later events are dropped.
    """

    def __init__(self) -> None:
        self._queue: asyncio.Queue[Event | _End] = asyncio.Queue()
        self._closed = False
        self._done = False

    def handle(self, event: Event) -> None:
        if not self._closed:
            self._queue.put_nowait(event)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._queue.put_nowait(_End())  # wakes a consumer blocked in __anext__

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Event:
        if self._done or self._closed:
            raise StopAsyncIteration
        item = await self._queue.get()
        if isinstance(item, _End) or self._closed:
            self._done = True
            raise StopAsyncIteration
        if isinstance(item, RunFinished):
            self._done = True
        return item


def make_progress(
    *, json: bool, console: Console | None = None, stream: TextIO | None = None
) -> ProgressSink:
    """The sink that suits the output: JSON lines, a live view on a terminal, else lines.

    Args:
        json: Write events as JSON lines to `stream` (default stdout).
        console: Console for the live view; defaults to one on stderr.
        stream: Where JSON lines or plain lines go; plain lines default to the console's file.
    """
    if json:
        return JsonLinesSink(stream)
    console = console if console is not None else Console(stderr=True)
    if console.is_terminal and not console.is_dumb_terminal:
        return LiveView(console=console)
    return LineSink(stream if stream is not None else console.file)


__all__ = [
    "EventStream",
    "FailureNote",
    "InFlightNote",
    "JsonLinesSink",
    "LineSink",
    "LiveView",
    "ProgressSink",
    "RoleCounts",
    "RunStats",
    "StatsSnapshot",
    "make_progress",
]
