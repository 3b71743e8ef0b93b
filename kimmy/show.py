"""What `kimmy runs`, `kimmy show` and the end of `kimmy run` / `kimmy resume` print."""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from pathlib import Path

from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

from kimmy_swarm.swarm.schema import RunResult, RunStatus, SubtaskResult, SubtaskStatus, Usage
from kimmy_swarm.swarm.store import DB_NAME, RunStore

_STYLE = {
    RunStatus.COMPLETED: "green",
    RunStatus.PARTIAL: "yellow",
    RunStatus.BUDGET_EXHAUSTED: "yellow",
    RunStatus.FAILED: "red",
    RunStatus.CANCELLED: "magenta",
    RunStatus.RUNNING: "cyan",
}


def _when(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts)) if ts else "-"


def _usage_line(usage: Usage) -> str:
    return (
        f"{usage.model_calls:,} model calls, {usage.total_tokens:,} tokens "
        f"({usage.prompt_tokens:,} prompt + {usage.completion_tokens:,} completion)"
    )


def _failures(results: list[SubtaskResult], limit: int = 10) -> list[str]:
    bad = [r for r in results if r.status is SubtaskStatus.FAILED and r.error is not None]
    lines = [f"{r.id} ({r.role}): {r.error.type}: {r.error.message}"[:200] for r in bad[:limit]]
    if len(bad) > limit:
        lines.append(f"… and {len(bad) - limit} more failures")
    return lines


def _fallbacks(results: list[SubtaskResult], limit: int = 10) -> list[str]:
    """Sub-agents whose model failed, done by their role's offline procedure instead."""
    from kimmy_swarm.agents.fallback import fallbacks

    fell = fallbacks({r.id: r.output for r in results})
    if not fell:
        return []
    lines = [f"{len(fell)} of {len(results)} sub-agents to the offline procedure"]
    lines += [f"{sid}: {why}"[:200] for sid, why in list(fell.items())[:limit]]
    if len(fell) > limit:
        lines.append(f"… and {len(fell) - limit} more")
    return lines


def _report(console: Console, result: RunResult) -> None:
    style = _STYLE.get(result.status, "white")
    results = list(result.results.values())
    counts = Counter(r.status.value for r in results)
    console.print(f"run [bold]{result.run_id}[/]: [{style}]{result.status.value}[/]")
    if result.goal:
        console.print(f"goal: {result.goal}")
    if result.stop_reason:
        console.print(f"stopped: {result.stop_reason}")
    console.print(
        "subtasks: "
        + ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
        + f" (of {len(results)})"
    )
    roles = Counter(r.role for r in results)
    done = Counter(r.role for r in results if r.status is SubtaskStatus.DONE)
    console.print(
        "roles: " + ", ".join(f"{role} {done[role]}/{n}" for role, n in roles.most_common(10))
    )
    console.print(f"usage: {_usage_line(result.usage)}")
    if result.wall_s is not None:  # the figure `kimmy swarm` and `kimmy rewards` print
        console.print(f"wall time: {result.wall_s:.2f} s")
    for line in _failures(results):
        console.print(f"[red]failed[/] {line}", markup=True, highlight=False)
    for line in _fallbacks(results):
        console.print(f"[yellow]fell back[/] {line}", markup=True, highlight=False)


def print_run_summary(result: RunResult, runs_dir: Path | None) -> None:
    """The closing report of `kimmy run` / `kimmy resume`."""
    console = Console()
    _report(console, result)
    if runs_dir is not None:
        console.print(f"stored in {runs_dir}: `kimmy show {result.run_id}`")
        if result.status is not RunStatus.COMPLETED:
            console.print(f"continue with `kimmy resume {result.run_id}`")


def show_runs(runs_dir: Path, *, limit: int, json_lines: bool) -> None:
    """`kimmy runs`: the stored runs, newest first, as a table or as JSON lines.

    Run ids are what users copy into `kimmy show` / `kimmy resume`, so they are never
    wrapped or cut, whatever the terminal's width: the goal column gives way (one line,
    cut with "…"), and where fewer than `min_goal` characters of it would fit, the created
    column goes too.
    """
    if not (runs_dir / DB_NAME).is_file():
        if not json_lines:
            print(f"no runs in {runs_dir}")
        return
    with RunStore(runs_dir, create=False) as store:
        runs = store.list_runs(limit)
    if json_lines:
        for r in runs:
            row = {k: getattr(r, k) for k in r.__dataclass_fields__}
            print(json.dumps({**row, "status": r.status.value}))
        return
    if not runs:
        print(f"no runs in {runs_dir}")
        return
    min_goal, max_goal = 10, 60
    rows = [
        (
            r.run_id,
            _when(r.created_at),
            "interrupted" if r.interrupted else r.status.value,
            f"{r.n_done}/{r.n_subtasks}",
            " ".join(r.goal.split()),
            _STYLE.get(r.status, "white"),
        )
        for r in runs
    ]
    heads = ["run", "created", "status", "done"]
    # Each column: its widest cell plus one space of padding either side, then a border.
    widths = [max(len(h), *(cell_len(row[i]) for row in rows)) + 3 for i, h in enumerate(heads)]
    console = Console()
    room = console.width - sum(widths) - 4  # the goal's padding and borders
    with_created = room >= min_goal
    if not with_created:
        heads.remove("created")
        room += widths[1]
    table = Table(*heads)
    for column in table.columns:
        column.no_wrap = True
    # Narrower still than the run column: the line is cut at the right, never the id.
    table.columns[0].min_width = widths[0] - 3
    if room > 0:
        table.add_column("goal", no_wrap=True, overflow="ellipsis", max_width=min(room, max_goal))
    for run_id, created, state, done, goal, style in rows:
        cells = [run_id, *([created] if with_created else []), f"[{style}]{state}[/]", done]
        table.add_row(*cells, *([Text(goal, overflow="ellipsis", no_wrap=True)] * (room > 0)))
    console.print(table)


def _stored_result(store: RunStore, run_id: str) -> RunResult:
    stored = store.load_run(run_id)
    results = dict(stored.results)
    for st in stored.plan.subtasks:
        results.setdefault(st.id, SubtaskResult(id=st.id, role=st.role, status="pending"))
    usage = Usage.total(r.usage for r in results.values())
    started_at, finished_at = _run_span(store, stored.run_id)
    if started_at is None:  # no run_started event: when the run was stored
        started_at = stored.created_at
    if finished_at is None:  # never finished (stopped hard): its last sub-agent's end
        ends = [r.timings.finished_at for r in results.values() if r.timings.finished_at]
        finished_at = max(ends, default=None)
    return RunResult(
        run_id=stored.run_id,
        goal=stored.plan.goal,
        status=stored.status,
        stop_reason=stored.stop_reason,
        results=results,
        usage=usage,
        started_at=started_at,
        finished_at=finished_at,
    )


def _run_span(store: RunStore, run_id: str) -> tuple[float | None, float | None]:
    """The run's first `run_started` and last `run_finished` instants: the ends of its wall
    time (`RunResult.wall_s`), as `kimmy rewards` reads them too."""
    started = next(
        (e.ts for e in store.events_mentioning(run_id, '"run_started"') if e.type == "run_started"),
        None,
    )
    ends = [e.ts for e in store.events_mentioning(run_id, '"run_finished"')
            if e.type == "run_finished"]  # fmt: skip
    return started, max(ends, default=None)


def show_run(
    runs_dir: Path, run_id: str, *, events: bool, output: str | None, json_lines: bool
) -> None:
    from kimmy_swarm.swarm.errors import UserError

    with RunStore(runs_dir, create=False) as store:
        if events:
            for event in store.events(run_id):
                sys.stdout.write(event.model_dump_json() + "\n")
            return
        result = _stored_result(store, run_id)
        stored = store.load_run(result.run_id)
    if output is not None:
        if output not in result.results:
            raise UserError(f"run {result.run_id} has no subtask {output!r}")
        value = result.results[output].output
        print(value if isinstance(value, str) else json.dumps(value, indent=2))
        return
    if json_lines:
        print(result.model_dump_json())
        return
    from kimmy_swarm.cli.show_turns import print_turns

    console = Console()
    _report(console, result)
    print_turns(console, stored.turns, stored.plan.subtasks, result.results)


__all__ = ["print_run_summary", "show_run", "show_runs"]
