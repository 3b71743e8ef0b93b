"""Progress sinks that write or stream: JSON lines, plain lines, make_progress, EventStream."""

from __future__ import annotations

import asyncio
import io
import os
import sys

import pytest
from rich.console import Console

from kimmy_swarm.swarm.events import (
    Event,
    ModelCalled,
    parse_event,
)
from kimmy_swarm.swarm.progress import (
    EventStream,
    JsonLinesSink,
    LineSink,
    LiveView,
    make_progress,
)
from kimmy_swarm.swarm.schema import RunStatus
from tests.support.progress_events import (
    FakeClock,
    failed,
    feed,
    finished,
    model_called,
    run_finished,
    run_started,
    scripted_run,
    started,
)

# --- JsonLinesSink ----------------------------------------------------------------------


class CountingStream(io.StringIO):
    def __init__(self) -> None:
        super().__init__()
        self.flushes = 0

    def flush(self) -> None:
        self.flushes += 1
        super().flush()


def test_json_lines_round_trip() -> None:
    out = io.StringIO()
    events = [*scripted_run(), run_finished(RunStatus.PARTIAL, done=1, failed=1)]
    with JsonLinesSink(out) as sink:
        feed(sink, events)
    lines = out.getvalue().splitlines()
    assert [parse_event(line) for line in lines] == events


def test_json_lines_can_leave_out_model_calls() -> None:
    out = io.StringIO()
    events = scripted_run()
    feed(JsonLinesSink(out, include_model_calls=False), events)
    parsed = [parse_event(line) for line in out.getvalue().splitlines()]
    assert parsed == [e for e in events if not isinstance(e, ModelCalled)]


def test_json_lines_flush_on_run_finished_and_at_most_per_interval() -> None:
    out, clock = CountingStream(), FakeClock()
    sink = JsonLinesSink(out, flush_interval_s=0.5, clock=clock)
    feed(sink, [started(f"s{i}", "w") for i in range(100)])
    assert out.flushes == 0
    clock.t = 0.5
    sink.handle(started("late", "w"))
    assert out.flushes == 1
    sink.handle(run_finished())
    assert out.flushes == 2


class BrokenAfter(io.StringIO):
    """A pipe whose reader goes away after `n` writes."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = n
        self.attempts = 0

    def write(self, s: str) -> int:
        self.attempts += 1
        if self.attempts > self.n:
            raise BrokenPipeError(32, "Broken pipe")
        return super().write(s)


def test_json_lines_stop_writing_on_broken_pipe() -> None:
    out = BrokenAfter(2)
    sink = JsonLinesSink(out)
    feed(sink, scripted_run())  # must not raise
    sink.handle(run_finished())
    sink.close()
    assert sink.broken and out.attempts == 3  # gave up at the first failed write
    assert len(out.getvalue().splitlines()) == 2


def test_broken_stdout_pipe_is_silenced_for_interpreter_exit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    read_fd, write_fd = os.pipe()
    os.close(read_fd)  # the reader (`head`, `jq`) has exited
    stdout = open(write_fd, "w", encoding="utf-8")  # noqa: SIM115 - closed below
    monkeypatch.setattr(sys, "stdout", stdout)
    sink = JsonLinesSink()
    sink.handle(run_finished())  # flushes: hits the dead pipe
    assert sink.broken
    stdout.write("more\n")
    stdout.close()  # Python's exit-time flush: would raise BrokenPipeError without the fix


# --- LineSink ---------------------------------------------------------------------------


def test_line_sink_prints_at_most_every_interval_and_at_the_end() -> None:
    out, clock = io.StringIO(), FakeClock()
    sink = LineSink(out, interval_s=2.0, clock=clock)
    sink.handle(run_started(4, max_concurrency=4))
    for t, ev in [(0.5, started("a", "w")), (1.0, model_called("a", 5)), (1.9, started("b", "w"))]:
        clock.t = t
        sink.handle(ev)
    assert out.getvalue() == ""
    clock.t = 2.0
    sink.handle(finished("a", "w"))
    assert out.getvalue().splitlines() == [
        "[2.0s] 1/4 finished · 0 failed · 1 in flight (limit 4) · 1 calls"
    ]
    for i in range(10_000):  # a burst inside one interval prints nothing more
        clock.t = 2.0 + i * 1e-4
        sink.handle(model_called("b", 1))
    assert sink.lines == 1
    clock.t = 4.5
    sink.handle(failed("b", "w"))
    clock.t = 5.0
    sink.handle(run_finished(RunStatus.PARTIAL))
    sink.close()  # the final line is not repeated
    lines = out.getvalue().splitlines()
    assert len(lines) == 3 and sink.lines == 3
    assert (
        lines[2] == "[5.0s] partial: 2/4 finished · 1 failed · 0 in flight (limit 4) · 10,001 calls"
    )


def test_line_sink_writes_a_last_line_when_the_run_never_finished() -> None:
    out = io.StringIO()
    with LineSink(out, clock=FakeClock()) as sink:
        feed(sink, [run_started(2), started("a", "w")])
    assert out.getvalue() == "[0.0s] 0/2 finished · 0 failed · 1 in flight · 0 calls\n"


# --- make_progress ----------------------------------------------------------------------


def test_make_progress_picks_the_sink_for_the_output() -> None:
    stream = io.StringIO()
    json_sink = make_progress(json=True, stream=stream)
    assert isinstance(json_sink, JsonLinesSink)
    json_sink.handle(run_finished())
    assert parse_event(stream.getvalue()) == run_finished()
    assert isinstance(
        make_progress(
            json=False, console=Console(file=io.StringIO(), force_terminal=True, width=120)
        ),
        LiveView,
    )
    plain = Console(file=io.StringIO(), width=120)  # not a terminal: a log file or CI
    line_sink = make_progress(json=False, console=plain)
    assert isinstance(line_sink, LineSink)
    with line_sink:
        line_sink.handle(run_finished())
    assert "completed: 0/0 finished" in plain.file.getvalue()  # type: ignore[attr-defined]


# --- EventStream ------------------------------------------------------------------------


async def test_event_stream_yields_in_order_and_stops_after_run_finished() -> None:
    stream = EventStream()
    events = [*scripted_run(), run_finished()]
    feed_later = [started("after", "w")]  # emitted after the end: never yielded
    for ev in [*events, *feed_later]:
        stream.handle(ev)
    assert [ev async for ev in stream] == events
    assert [ev async for ev in stream] == []  # stays finished


async def test_event_stream_waits_for_a_live_producer() -> None:
    stream = EventStream()
    events = [*scripted_run(), run_finished()]

    async def produce() -> None:
        for ev in events:
            await asyncio.sleep(0)
            stream.handle(ev)

    async with asyncio.TaskGroup() as tg:
        tg.create_task(produce())
        got = [ev async for ev in stream]
    assert got == events


async def test_event_stream_close_ends_iteration_early() -> None:
    stream = EventStream()
    stream.handle(run_started(1))
    got: list[Event] = []
    first = asyncio.Event()

    async def consume() -> None:
        async for ev in stream:
            got.append(ev)
            first.set()

    async with asyncio.TaskGroup() as tg:
        tg.create_task(consume())
        await first.wait()  # the consumer has the first event and waits for the next
        stream.close()
        stream.handle(started("a", "w"))  # dropped after close
    assert got == [run_started(1)]
