"""What the progress views show and how: the snapshot of a run's numbers and its renderings.

Kept apart from `swarm.progress` so the bookkeeping there stays free of layout. Every
function here is pure: a `StatsSnapshot` in, a rich renderable or a string out. They run
at most a few times a second, never per event.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from kimmy_swarm.swarm.schema import RunStatus, SubtaskStatus

#: The goal is shown on one line, cut to this many characters.
GOAL_CHARS = 80
#: A subtask id in the longest-running list is cut to this many characters.
SUBTASK_ID_CHARS = 40
_STATUS_STYLE = {
    SubtaskStatus.PENDING: "dim",
    SubtaskStatus.RUNNING: "cyan",
    SubtaskStatus.DONE: "green",
    SubtaskStatus.FAILED: "red",
    SubtaskStatus.SKIPPED: "yellow",
    SubtaskStatus.SKIPPED_BUDGET: "yellow",
    SubtaskStatus.CANCELLED: "magenta",
}
_RUN_STYLE = {
    RunStatus.RUNNING: "cyan",
    RunStatus.COMPLETED: "bold green",
    RunStatus.PARTIAL: "bold yellow",
    RunStatus.FAILED: "bold red",
    RunStatus.BUDGET_EXHAUSTED: "bold yellow",
    RunStatus.CANCELLED: "bold magenta",
}


@dataclass(frozen=True, slots=True)
class FailureNote:
    """One failed subtask, as the views show it."""

    subtask_id: str
    role: str
    #: `ErrorType: message` on one line, truncated (see `swarm._progress_stats.FAILURE_TEXT_CHARS`).
    text: str


@dataclass(frozen=True, slots=True)
class InFlightNote:
    """One sub-agent in flight, as the views show it: how long since it first started."""

    subtask_id: str
    role: str
    #: Seconds since its first attempt started (back-off waits between retries included).
    age_s: float


@dataclass(frozen=True, slots=True)
class RoleCounts:
    """Subtasks of one role: its total, in flight, and each way of ending, kept apart.

    `total` is the planned subtasks of the role (from RunStarted) plus those spawned, or the
    ones seen so far where the plan's roles are unknown; `done` and `failed` ran to an end,
    `cancelled` were stopped while running and `skipped` never ran (a failed dependency or
    a spent budget). What is left, `total - running - done - failed - cancelled - skipped`,
    is pending.
    """

    role: str
    total: int
    running: int
    done: int
    failed: int
    cancelled: int
    skipped: int


@dataclass(frozen=True, slots=True)
class StatsSnapshot:
    """Every number a view shows, taken at one instant so a frame is self-consistent."""

    run_id: str
    goal: str
    #: None until RunStarted; RUNNING until RunFinished; then the run's final status.
    status: RunStatus | None
    stop_reason: str | None
    budget_reason: str | None
    elapsed_s: float
    eta_s: float | None
    total: int
    #: Subtasks that ran to an end: done or failed (not cancelled, not skipped).
    finished: int
    #: Subtasks stopped while running (the run was cancelled or aborted).
    cancelled: int
    #: Subtasks that never ran: skipped after a failed dependency or for a spent budget.
    skipped: int
    #: Subtasks in a final status, all kinds together: what the bar and the ETA count.
    settled: int
    #: Subtasks per `SubtaskStatus` value, every status present (zero when none).
    counts: dict[str, int]
    in_flight: int
    backing_off: int
    concurrency_limit: int | None
    spawned: int
    spawn_refused: int
    retries: int
    #: Calls waiting for a person to approve or deny them (`kimmy approvals`).
    awaiting_approval: int
    model_calls: int
    failed_model_calls: int
    tokens: int
    subtasks_per_s: float
    calls_per_s: float
    #: The roles with the most subtasks, largest first.
    roles: tuple[RoleCounts, ...]
    n_roles: int
    failures: tuple[FailureNote, ...]
    #: The sub-agents in flight the longest, oldest first.
    longest_running: tuple[InFlightNote, ...] = ()


def truncate(text: str, limit: int) -> str:
    """`text` on one line, at most `limit` characters (an ellipsis marks a cut)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def fmt_duration(seconds: float | None) -> str:
    """`12.3s`, `4m05s`, `2h03m`; `—` when unknown."""
    if seconds is None:
        return "—"
    if seconds < 60:
        return f"{seconds:.1f}s"
    whole = int(seconds)
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


def _status_label(s: StatsSnapshot) -> str:
    return s.status.value if s.status is not None else "waiting"


def _limit_text(s: StatsSnapshot) -> str:
    return f" (limit {s.concurrency_limit:,})" if s.concurrency_limit is not None else ""


def _stopped_text(s: StatsSnapshot) -> str:
    """` · 3 cancelled · 2 skipped`, each part only when it is not zero."""
    parts = [(s.cancelled, "cancelled"), (s.skipped, "skipped")]
    return "".join(f" · {n:,} {name}" for n, name in parts if n)


def format_line(s: StatsSnapshot) -> str:
    """One plain progress line for logs, e.g. `[12.3s] 450/1,000 finished · 12 failed · …`."""
    final = s.status is not None and s.status is not RunStatus.RUNNING
    prefix = f"{s.status.value}: " if final and s.status is not None else ""
    return (
        f"[{fmt_duration(s.elapsed_s)}] {prefix}{s.finished:,}/{s.total:,} finished"
        f" · {s.counts[SubtaskStatus.FAILED.value]:,} failed{_stopped_text(s)}"
        f" · {s.in_flight:,} in flight{_limit_text(s)}"
        f" · {s.model_calls:,} calls{_awaiting_text(s)}"
    )


def _awaiting_text(s: StatsSnapshot) -> str:
    """` · 2 calls waiting for approval (kimmy approvals)`, when any wait."""
    n = s.awaiting_approval
    if not n:
        return ""
    return f" · {n:,} call{'s' if n != 1 else ''} waiting for approval (kimmy approvals)"


def _header(s: StatsSnapshot, *, live: bool) -> Text:
    head = Text.assemble(
        ("run ", "bold"),
        (s.run_id or "?", "bold"),
        "  ",
        (_status_label(s), _RUN_STYLE.get(s.status, "") if s.status else "dim"),
        f"  elapsed {fmt_duration(s.elapsed_s)}",
    )
    if live:
        head.append(f" · ETA {fmt_duration(s.eta_s)}")
    if s.goal:
        head.append(f"\ngoal: {truncate(s.goal, GOAL_CHARS)}", style="dim")
    return head


def _progress(s: StatsSnapshot) -> Table:
    """The bar fills with every settled subtask; the text keeps the ways of ending apart."""
    grid = Table.grid(padding=(0, 1))
    pct = 100.0 * s.settled / s.total if s.total else 0.0
    bar = ProgressBar(
        total=max(s.total, 1),
        completed=s.settled,
        width=30,
        complete_style="green",
        finished_style="bold green",
    )
    text = f"{s.finished:,}/{s.total:,} finished{_stopped_text(s)} ({pct:.1f}%)"
    grid.add_row(bar, Text(text))
    return grid


def _status_table(s: StatsSnapshot) -> Table:
    table = Table(title="by status", title_justify="left", show_edge=False, pad_edge=False)
    table.add_column("status")
    table.add_column("count", justify="right")
    for status in SubtaskStatus:
        table.add_row(Text(status.value, _STATUS_STYLE[status]), f"{s.counts[status.value]:,}")
    return table


def _role_table(s: StatsSnapshot) -> Table:
    more = f" (top {len(s.roles)} of {s.n_roles})" if s.n_roles > len(s.roles) else ""
    table = Table(title=f"by role{more}", title_justify="left", show_edge=False, pad_edge=False)
    for name in ("role", "total", "running", "done", "failed", "cancelled", "skipped"):
        table.add_column(name, justify="left" if name == "role" else "right")
    for r in s.roles:
        failed = Text(f"{r.failed:,}", "red" if r.failed else "")
        cancelled = Text(f"{r.cancelled:,}", "magenta" if r.cancelled else "")
        row = (f"{r.total:,}", f"{r.running:,}", f"{r.done:,}", failed, cancelled)
        table.add_row(r.role, *row, f"{r.skipped:,}")
    return table


class _SideBySide:
    """Renderables in one row where the width allows, else one under the other.

    The role table got wider with its cancelled and skipped columns; on an 80-column
    terminal it goes under the status table instead of squeezing both into wrapped cells.
    """

    def __init__(self, *parts: RenderableType, gap: int = 4) -> None:
        self.parts = parts
        self.gap = gap

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        widths = [Measurement.get(console, options, p).maximum for p in self.parts]
        if sum(widths) + self.gap * (len(widths) - 1) <= options.max_width:
            grid = Table.grid(padding=(0, self.gap))
            grid.add_row(*self.parts)
            yield grid
        else:
            yield from self.parts


def _activity(s: StatsSnapshot) -> Text:
    text = Text(f"in flight {s.in_flight:,}")
    text.append(f" / limit {s.concurrency_limit:,}" if s.concurrency_limit is not None else "")
    text.append(f" ({s.backing_off:,} backing off) · retries {s.retries:,}")
    text.append(f" · spawned {s.spawned:,}")
    if s.spawn_refused:
        text.append(f" ({s.spawn_refused:,} refused)", "yellow")
    failed = f" ({s.failed_model_calls:,} failed)" if s.failed_model_calls else ""
    text.append(f"\nmodel calls {s.model_calls:,}{failed} · tokens {s.tokens:,}")
    text.append(f" · {s.subtasks_per_s:,.1f} subtasks/s · {s.calls_per_s:,.1f} calls/s")
    if s.awaiting_approval:
        text.append(f"\n{_awaiting_text(s).removeprefix(' · ')}", "bold magenta")
    if s.budget_reason:
        text.append(f"\nbudget exhausted: {s.budget_reason}", "bold yellow")
    if s.stop_reason and s.stop_reason != s.budget_reason:
        text.append(f"\nstopped: {s.stop_reason}", "yellow")
    return text


def _longest_running(s: StatsSnapshot) -> Text:
    text = Text(f"running longest ({len(s.longest_running)} of {s.in_flight:,} in flight)", "bold")
    for note in s.longest_running:
        sid = truncate(note.subtask_id, SUBTASK_ID_CHARS)
        text.append(f"\n  {fmt_duration(note.age_s):>7}  {sid} ({note.role})", "cyan")
    return text


def _failures(s: StatsSnapshot) -> Text:
    text = Text(f"recent failures ({len(s.failures)} shown)", "bold red")
    for f in s.failures:
        text.append(f"\n  {f.subtask_id} ({f.role}) {f.text}", "red")
    return text


def _body(s: StatsSnapshot, *, live: bool) -> list[RenderableType]:
    tables = _SideBySide(_status_table(s), _role_table(s))
    parts: list[RenderableType] = [_header(s, live=live), _progress(s), tables, _activity(s)]
    if s.longest_running:
        parts.append(_longest_running(s))
    if s.failures:
        parts.append(_failures(s))
    return parts


def render_live(s: StatsSnapshot) -> RenderableType:
    """The live frame: header with ETA, bar, tables, throughput, oldest in flight, failures."""
    return Group(*_body(s, live=True))


def render_summary(s: StatsSnapshot) -> RenderableType:
    """The static summary printed once the run is over (no ETA: nothing is left to wait for)."""
    return Group(Text("─" * 3 + " run summary " + "─" * 3, "bold"), *_body(s, live=False))


__all__ = [
    "FailureNote",
    "InFlightNote",
    "RoleCounts",
    "StatsSnapshot",
    "fmt_duration",
    "format_line",
    "render_live",
    "render_summary",
    "truncate",
]
