"""Progress bookkeeping and sinks: exact counts from scripted events, bounded drawing."""

from __future__ import annotations

import io
import re
import threading

import pytest
from rich.console import Console

from kimmy_swarm.swarm.events import (
    BudgetExhausted,
    ConcurrencyChanged,
    Event,
    RunFinished,
)
from kimmy_swarm.swarm.progress import (
    LiveView,
    RunStats,
)
from kimmy_swarm.swarm.schema import RunStatus, SubtaskStatus
from tests.support.progress_events import (
    _ANSI,
    RUN,
    FakeClock,
    failed,
    feed,
    finished,
    model_called,
    retrying,
    run_finished,
    run_started,
    scripted_run,
    spawned,
    started,
)

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
    assert stats.counts_by_status()["pending"] == 0 and stats.settled == 5
    assert (stats.finished, stats.skipped) == (1, 4)  # skipped ones did not finish
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
