"""Progress bookkeeping and sinks: exact counts from scripted events, bounded drawing."""

from __future__ import annotations

import asyncio
import io
import os
import re
import sys
import threading

import pytest
from rich.console import Console

from swarm.events import (
    BudgetExhausted,
    ConcurrencyChanged,
    Event,
    ModelCalled,
    RunFinished,
    RunStarted,
    SpawnRefused,
    SubtaskFinished,
    SubtaskRetrying,
    SubtasksSpawned,
    SubtaskStarted,
    parse_event,
)
from swarm.progress import (
    EventStream,
    JsonLinesSink,
    LineSink,
    LiveView,
    RunStats,
    make_progress,
)
from swarm.schema import ErrorInfo, RunStatus, Subtask, SubtaskResult, SubtaskStatus, Usage

RUN = "run-1"
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self, t: float = 0.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


# --- event builders ---------------------------------------------------------------------


def run_started(n: int = 5, **settings: int | bool) -> RunStarted:
    return RunStarted(run_id=RUN, ts=1.0, goal="write a report", n_subtasks=n, settings=settings)


def started(sid: str, role: str, attempt: int = 1) -> SubtaskStarted:
    return SubtaskStarted(run_id=RUN, ts=1.0, subtask_id=sid, role=role, attempt=attempt)


def finished(
    sid: str,
    role: str,
    status: SubtaskStatus = SubtaskStatus.DONE,
    error: ErrorInfo | None = None,
) -> SubtaskFinished:
    result = SubtaskResult(id=sid, role=role, status=status, error=error, output="ok")
    return SubtaskFinished(run_id=RUN, ts=1.0, result=result)


def failed(sid: str, role: str, message: str = "boom") -> SubtaskFinished:
    return finished(sid, role, SubtaskStatus.FAILED, ErrorInfo(type="ValueError", message=message))


def model_called(sid: str, tokens: int, *, error: bool = False) -> ModelCalled:
    return ModelCalled(
        run_id=RUN,
        ts=1.0,
        subtask_id=sid,
        latency_s=0.25,
        usage=Usage(prompt_tokens=tokens - 1, completion_tokens=1, total_tokens=tokens),
        error=ErrorInfo(type="RateLimited", message="429", retryable=True) if error else None,
    )


def retrying(sid: str, attempt: int = 1) -> SubtaskRetrying:
    err = ErrorInfo(type="Timeout", message="slow", retryable=True)
    return SubtaskRetrying(
        run_id=RUN, ts=1.0, subtask_id=sid, attempt=attempt, error=err, delay_s=1
    )


def spawned(parent: str, *subs: tuple[str, str]) -> SubtasksSpawned:
    children = [Subtask(id=i, role=r, parent=parent, depth=1) for i, r in subs]
    return SubtasksSpawned(run_id=RUN, ts=1.0, parent_id=parent, subtasks=children)


def run_finished(status: RunStatus = RunStatus.COMPLETED, **counts: int) -> RunFinished:
    return RunFinished(run_id=RUN, ts=9.0, status=status, counts=counts)


def feed(sink: RunStats | LiveView | LineSink | JsonLinesSink, events: list[Event]) -> None:
    for ev in events:
        sink.handle(ev)


def scripted_run() -> list[Event]:
    """Five planned subtasks, two spawned, a failure, a retry, three model calls."""
    return [
        run_started(5, max_concurrency=4),
        started("a", "writer"),
        started("b", "writer"),
        started("c", "critic"),
        model_called("a", 10),
        model_called("b", 20, error=True),
        model_called("c", 5),
        finished("a", "writer"),
        failed("b", "writer"),
        retrying("c"),
        spawned("a", ("a.1", "critic"), ("a.2", "judge")),
        SpawnRefused(run_id=RUN, ts=1.0, parent_id="a", error=ErrorInfo(type="Limit", message="x")),
    ]


# --- RunStats ---------------------------------------------------------------------------


def test_stats_count_statuses_roles_calls_and_tokens() -> None:
    stats = RunStats(clock=FakeClock())
    feed(stats, scripted_run())
    assert stats.total == 7 and stats.spawned == 2 and stats.spawn_refused == 1
    assert stats.finished == 2
    assert stats.in_flight == 1 and stats.backing_off == 1  # c keeps its slot in back-off
    assert stats.counts_by_status() == {
        "pending": 4,
        "running": 1,
        "done": 1,
        "failed": 1,
        "skipped": 0,
        "skipped_budget": 0,
        "cancelled": 0,
    }
    assert (stats.model_calls, stats.failed_model_calls, stats.tokens) == (3, 1, 35)
    assert stats.retries == 1
    roles = {r.role: r for r in stats.roles()}
    assert (roles["writer"].total, roles["writer"].done, roles["writer"].failed) == (2, 1, 1)
    assert (roles["critic"].total, roles["critic"].running) == (2, 1)  # c (backing off), a.1
    assert roles["judge"].total == 1
    assert [r.role for r in stats.roles(top=2)] == ["critic", "writer"]  # ties break by name


def test_retried_subtask_is_counted_once() -> None:
    stats = RunStats(clock=FakeClock())
    feed(stats, [run_started(1), started("c", "critic"), retrying("c")])
    assert (stats.in_flight, stats.backing_off, stats.counts_by_status()["running"]) == (1, 1, 1)
    stats.handle(started("c", "critic", 2))
    assert (stats.in_flight, stats.backing_off) == (1, 0)  # the retry is the same subtask
    assert stats.roles()[0].running == 1 and stats.roles()[0].total == 1
    feed(stats, [started("c", "critic", 2), finished("c", "critic"), finished("c", "critic")])
    assert (stats.in_flight, stats.finished, stats.roles()[0].running) == (0, 1, 0)
    assert stats.counts_by_status()["done"] == 1 and stats.counts_by_status()["pending"] == 0


def test_subtask_finished_without_start_leaves_pending() -> None:
    stats = RunStats(clock=FakeClock())
    feed(stats, [run_started(3), finished("x", "writer", SubtaskStatus.SKIPPED)])
    counts = stats.counts_by_status()
    assert (counts["skipped"], counts["pending"], counts["running"]) == (1, 2, 0)
    assert stats.roles()[0].running == 0


def test_stats_attached_mid_run_count_what_they_see() -> None:
    stats = RunStats(clock=FakeClock(5.0))
    feed(stats, [started("a", "writer"), started("b", "writer")])
    assert stats.run_id == RUN and stats.total == 2 and stats.in_flight == 2
    assert stats.status is None and stats.eta_s() is None


def test_eta_uses_the_recent_rate_and_grows_while_stalled() -> None:
    clock = FakeClock()
    stats = RunStats(clock=clock)
    stats.handle(run_started(10))
    assert stats.eta_s() is None  # nothing finished: no rate yet
    for i in range(4):
        clock.t = float(i + 1)
        stats.handle(finished(f"s{i}", "w"))
        if i < 2:
            assert stats.eta_s() is None  # too few finishes to mean anything
    assert stats.eta_s() == pytest.approx(6.0)  # 6 left at 1/s
    clock.t = 7.0
    assert stats.eta_s() == pytest.approx(12.0)  # 3 finishes in the 6 s since the first
    assert stats.elapsed_s() == pytest.approx(7.0)
    snap = stats.snapshot()
    assert snap.subtasks_per_s == pytest.approx(4 / 7)
    clock.t = 8.0
    stats.handle(run_finished(RunStatus.PARTIAL))
    clock.t = 100.0
    assert stats.eta_s() is None and stats.elapsed_s() == pytest.approx(8.0)


def test_eta_is_zero_when_nothing_is_left() -> None:
    clock = FakeClock()
    stats = RunStats(clock=clock)
    feed(stats, [run_started(1), finished("a", "w")])
    assert stats.eta_s() == 0.0


def test_recent_failures_keep_the_last_five_on_one_short_line() -> None:
    stats = RunStats(clock=FakeClock())
    stats.handle(run_started(8))
    for i in range(7):
        stats.handle(failed(f"f{i}", "writer", f"line one\nline two {i} " + "x" * 200))
    stats.handle(finished("f7", "critic", SubtaskStatus.FAILED))  # no error recorded
    notes = list(stats.recent_failures)
    assert [n.subtask_id for n in notes] == ["f3", "f4", "f5", "f6", "f7"]
    assert all(len(n.text) <= 120 and "\n" not in n.text for n in notes)
    assert (
        notes[0].text.startswith("ValueError: line one line two 3 x") and notes[0].text[-1] == "…"
    )
    assert (notes[-1].role, notes[-1].text) == ("critic", "failed (no error recorded)")


def test_concurrency_limit_from_settings_then_events() -> None:
    stats = RunStats(clock=FakeClock())
    stats.handle(run_started(1, max_concurrency=64))
    assert stats.concurrency_limit == 64
    stats.handle(ConcurrencyChanged(run_id=RUN, ts=1, limit=32, previous=64, reason="429s"))
    assert stats.concurrency_limit == 32
    other = RunStats(clock=FakeClock())
    other.handle(run_started(1, max_concurrency=True))  # not a number: ignored
    assert other.concurrency_limit is None


def test_run_finished_counts_are_authoritative() -> None:
    stats = RunStats(clock=FakeClock())
    feed(stats, [run_started(5), started("a", "w"), finished("a", "w")])
    stats.handle(BudgetExhausted(run_id=RUN, ts=1, reason="max_tokens=1000 spent"))
    stats.handle(
        RunFinished(
            run_id=RUN,
            ts=2,
            status=RunStatus.BUDGET_EXHAUSTED,
            stop_reason="budget",
            counts={"done": 1, "skipped_budget": 4},
        )
    )
    assert stats.counts_by_status()["skipped_budget"] == 4
    assert stats.counts_by_status()["pending"] == 0 and stats.finished == 5
    assert stats.status is RunStatus.BUDGET_EXHAUSTED
    assert (stats.budget_reason, stats.stop_reason) == ("max_tokens=1000 spent", "budget")


# --- LiveView ---------------------------------------------------------------------------


def _console() -> Console:
    return Console(file=io.StringIO(), force_terminal=True, width=120)


def _text(console: Console) -> str:
    out = console.file
    assert isinstance(out, io.StringIO)
    return _ANSI.sub("", out.getvalue())


def test_live_view_draws_numbers_roles_failures_and_summary() -> None:
    console = _console()
    with LiveView(console=console, auto_refresh=False, clock=FakeClock()) as view:
        feed(view, scripted_run())
        view.refresh()
        live = _text(console)
        assert "run run-1" in live and "goal: write a report" in live and "ETA" in live
        assert "2/7 finished" in live and "in flight 1 / limit 4 (1 backing off)" in live
        assert "writer" in live and "critic" in live and "judge" in live
        assert "model calls 3 (1 failed) · tokens 35" in live
        assert "b (writer) ValueError: boom" in live
        view.handle(run_finished(RunStatus.PARTIAL))
    raw = console.file.getvalue()  # type: ignore[attr-defined]
    summary = _ANSI.sub("", raw.rsplit("run summary", 1)[1])
    assert "partial" in summary and "2/7 finished" in summary and "ETA" not in summary
    assert re.search(r"\x1b\[[0-9;]*31m[^\x1b]*ValueError: boom", raw)  # failures in red


def test_live_view_role_table_shows_the_ten_largest_roles() -> None:
    console = _console()
    with LiveView(console=console, auto_refresh=False) as view:
        view.handle(run_started(100))
        for k in range(12):  # role rK has K+1 subtasks
            feed(view, [started(f"r{k}-{i}", f"r{k}") for i in range(k + 1)])
    summary = _text(console).rsplit("run summary", 1)[1]
    assert "by role (top 10 of 12)" in summary
    assert "r11 " in summary and "r2 " in summary
    assert "r1 " not in summary and "r0 " not in summary


def test_live_view_prints_the_summary_when_the_run_raises() -> None:
    console = _console()
    with pytest.raises(RuntimeError), LiveView(console=console, auto_refresh=False) as view:
        view.handle(run_started(3))
        raise RuntimeError("scheduler crashed")
    assert "run summary" in _text(console)


def _big_run(n: int) -> list[Event]:
    """A run of `n` subtasks: five events each (~50,000 for n=10,000)."""
    events: list[Event] = [run_started(n, max_concurrency=256)]
    for i in range(n):
        sid, role = f"s{i}", f"role{i % 7}"
        events += [started(sid, role), model_called(sid, 3), model_called(sid, 4)]
        events.append(failed(sid, role) if i % 100 == 0 else finished(sid, role))
        events.append(model_called(sid, 1))
    return [*events, run_finished(RunStatus.PARTIAL)]


def test_live_view_handle_never_draws_or_writes() -> None:
    """A view that drew per event would cost milliseconds each and stall 10,000 sub-agents."""
    console = _console()
    events = _big_run(10_000)
    assert len(events) >= 50_000
    with LiveView(console=console, auto_refresh=False, clock=FakeClock()) as view:
        renders, written = view.renders, len(console.file.getvalue())  # type: ignore[attr-defined]
        feed(view, events)
        assert view.renders == renders
        assert len(console.file.getvalue()) == written  # type: ignore[attr-defined]
    stats = view.stats
    assert (stats.finished, stats.in_flight, stats.model_calls) == (10_000, 0, 30_000)
    assert stats.counts_by_status()["failed"] == 100 and stats.tokens == 80_000


def test_live_view_frames_drawn_while_events_arrive_do_not_crash() -> None:
    """rich's refresh thread reads the stats while the event loop writes them."""
    view = LiveView(console=_console(), auto_refresh=False)
    errors: list[BaseException] = []
    stop = threading.Event()

    def draw() -> None:
        try:
            while not stop.is_set():
                view._frame()
        except BaseException as exc:  # noqa: BLE001 - reported by the assert below
            errors.append(exc)

    drawer = threading.Thread(target=draw)
    drawer.start()
    try:
        view.handle(run_started(20_000))
        for i in range(2_000):  # new roles and new failures keep resizing what a frame reads
            view.handle(spawned("root", (f"n{i}", f"role{i}")))
            view.handle(failed(f"n{i}", f"role{i}"))
    finally:
        stop.set()
        drawer.join()
    assert errors == []
    assert view.stats.finished == 2_000


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
    assert isinstance(make_progress(json=False, console=_console()), LiveView)
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
