"""What the progress view shows: per-role totals from the plan, the ways a subtask ends kept
apart, the longest-running sub-agents with their ages, and a frame that fits 80 columns."""

from __future__ import annotations

import io
import re

from rich.console import Console

from kimmy_swarm.swarm._progress_render import format_line, render_live, render_summary
from kimmy_swarm.swarm.progress import LiveView, RoleCounts, RunStats
from kimmy_swarm.swarm.schema import RunStatus, SubtaskStatus
from tests.support.progress_events import (
    FakeClock,
    failed,
    feed,
    finished,
    retrying,
    run_finished,
    run_started,
    spawned,
    started,
)


def _render(renderable: object, width: int = 80) -> str:
    console = Console(width=width, file=io.StringIO(), record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def _row(text: str, role: str) -> list[str]:
    """The cells of `role`'s row in the role table."""
    line = next(ln for ln in text.splitlines() if re.match(rf"\W*{role}\s", ln))
    return [cell for cell in re.split(r"[\s│┃]+", line) if cell]


def _roles(stats: RunStats) -> dict[str, RoleCounts]:
    return {r.role: r for r in stats.roles()}


# --- per-role totals --------------------------------------------------------------------


def test_role_totals_come_from_the_plan_plus_spawned_subtasks() -> None:
    stats = RunStats(clock=FakeClock())
    feed(
        stats,
        [
            run_started(4, roles={"researcher": 3, "writer": 1}),
            started("r0", "researcher"),
            spawned("r0", ("r0.1", "researcher"), ("r0.2", "critic")),
            started("r0.1", "researcher"),
            started("r1", "researcher"),
        ],
    )
    roles = _roles(stats)
    # 3 planned + 1 spawned researchers, of which 3 started; the writer has not started
    assert (roles["researcher"].total, roles["researcher"].running) == (4, 3)
    assert (roles["writer"].total, roles["writer"].running) == (1, 0)
    assert roles["critic"].total == 1 and stats.total == 6
    text = _render(render_live(stats.snapshot()))
    assert _row(text, "writer")[:3] == ["writer", "1", "0"]
    assert _row(text, "researcher")[:3] == ["researcher", "4", "3"]


def test_role_totals_without_the_plan_count_the_subtasks_seen() -> None:
    stats = RunStats(clock=FakeClock())  # an old event stream: RunStarted has no roles
    feed(stats, [run_started(3), started("a", "writer"), started("b", "writer")])
    feed(stats, [spawned("a", ("a.1", "writer"))])
    assert _roles(stats)["writer"].total == 3 and stats.total == 4


# --- cancelled and skipped apart from finished -------------------------------------------


def _ended_run() -> RunStats:
    stats = RunStats(clock=FakeClock())
    feed(
        stats,
        [
            run_started(6, roles={"writer": 6}),
            *(started(s, "writer") for s in "abc"),
            finished("a", "writer"),
            failed("b", "writer"),
            finished("c", "writer", SubtaskStatus.CANCELLED),
            finished("d", "writer", SubtaskStatus.SKIPPED),
            finished("e", "writer", SubtaskStatus.SKIPPED_BUDGET),
        ],
    )
    return stats


def test_cancelled_and_skipped_are_counted_apart_from_finished() -> None:
    stats = _ended_run()
    assert (stats.finished, stats.cancelled, stats.skipped, stats.settled) == (2, 1, 2, 5)
    writer = _roles(stats)["writer"]
    assert (writer.done, writer.failed, writer.cancelled, writer.skipped) == (1, 1, 1, 2)
    assert stats.eta_s() is None  # one left; cancelled and skipped ones are not waited for
    snap = stats.snapshot()
    text = _render(render_live(snap))
    assert "2/6 finished · 1 cancelled · 2 skipped (83.3%)" in text
    assert _row(text, "writer") == ["writer", "6", "0", "1", "1", "1", "2"]
    assert "2/6 finished · 1 failed · 1 cancelled · 2 skipped · 0 in flight" in format_line(snap)


def test_run_finished_counts_keep_cancelled_apart() -> None:
    stats = _ended_run()
    stats.handle(run_finished(RunStatus.CANCELLED, done=1, failed=1, cancelled=4))
    assert (stats.finished, stats.cancelled, stats.skipped, stats.settled) == (2, 4, 0, 6)
    assert "2/6 finished · 4 cancelled (100.0%)" in _render(render_summary(stats.snapshot()))


# --- the longest-running sub-agents ------------------------------------------------------


def test_the_five_oldest_in_flight_are_listed_with_their_ages() -> None:
    clock = FakeClock()
    stats = RunStats(clock=clock)
    stats.handle(run_started(7, roles={"writer": 4, "critic": 3}))
    for i in range(7):
        clock.t = float(i)
        stats.handle(started(f"s{i}", "critic" if i % 2 else "writer"))
    clock.t = 7.0
    feed(stats, [finished("s1", "critic"), retrying("s0"), started("s0", "writer", 2)])
    clock.t = 245.0
    notes = stats.longest_running()
    # s0's age runs from its first attempt: the retry keeps its slot
    assert [(n.subtask_id, n.age_s) for n in notes] == [
        ("s0", 245.0),
        ("s2", 243.0),
        ("s3", 242.0),
        ("s4", 241.0),
        ("s5", 240.0),
    ]
    text = _render(render_live(stats.snapshot()))
    assert "running longest (5 of 6 in flight)" in text
    assert re.search(r"4m05s\s+s0 \(writer\)", text)
    assert re.search(r"4m00s\s+s5 \(critic\)", text) and "s6 (" not in text
    clock.t = 250.0
    feed(stats, [finished(f"s{i}", "critic" if i % 2 else "writer") for i in (0, 2, 3, 4, 5, 6)])
    stats.handle(run_finished(RunStatus.COMPLETED))
    assert "running longest" not in _render(render_summary(stats.snapshot()))


def test_ages_under_a_minute_show_tenths() -> None:
    clock = FakeClock()
    stats = RunStats(clock=clock)
    feed(stats, [run_started(1), started("only", "writer")])
    clock.t = 12.34
    assert re.search(r"12\.3s\s+only \(writer\)", _render(render_live(stats.snapshot())))


# --- layout -----------------------------------------------------------------------------


def test_the_live_frame_fits_80_columns_and_uses_a_wide_one() -> None:
    clock = FakeClock()
    view = LiveView(console=Console(file=io.StringIO()), auto_refresh=False, clock=clock)
    role = "frontend_engineer"
    feed(view, [run_started(10_000, roles={role: 10_000}, max_concurrency=256)])
    feed(view, [started(f"{role}-{i:05d}-with-a-long-id" * 2, role) for i in range(8)])
    clock.t = 3_000.0
    snap = view.snapshot()
    narrow = _render(render_live(snap), width=80)
    assert max(len(line) for line in narrow.splitlines()) <= 80
    heads = ["role", "total", "running", "done", "failed", "cancelled", "skipped"]
    assert _row(narrow, "role") == heads
    assert _row(narrow, role) == [role, "10,000", "8", "0", "0", "0", "0"]
    assert "50m00s" in narrow and "…" in narrow  # long ids are cut, their age shown
    wide = _render(render_live(snap), width=140)
    assert any("by status" in ln and "by role" in ln for ln in wide.splitlines())
