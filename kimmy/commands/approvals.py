"""`kimmy approvals` / `approve` / `deny`: answer the calls a run's sub-agents wait on.

    kimmy approvals                          # every call waiting, in every stored run
    kimmy approvals RUN --all                # one run's calls, answered ones too
    kimmy approve RUN a3                     # run it as asked
    kimmy approve RUN a3 --args '{"path": "/tmp/x"}'   # run it with edited arguments
    kimmy deny RUN a3 --reason "not on production data"

The answer is written to the run store; the run that waits (in another process, or
stopped and resumed later) reads it there (`swarm.approvals`). Exit codes: 0 answered or
listed, 2 bad input (no such run or call, answered already, --args not a JSON object).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kimmy_swarm.cli.options import DEFAULT_RUNS_DIR, Json, RunArg, RunsDir, command_group

if TYPE_CHECKING:
    from kimmy_swarm.swarm import Approval
    from kimmy_swarm.swarm.store import RunStore

app = command_group()

CallId = Annotated[
    str, typer.Argument(metavar="CALL", help="The call's id, as `kimmy approvals` lists it (a1).")
]
#: Characters of a call's arguments shown on its line.
ARGS_CHARS = 80


def _store(runs_dir: Path) -> RunStore:
    from kimmy_swarm.swarm.store import RunStore

    return RunStore(runs_dir, create=False)


def _line(a: Approval, width: int) -> str:
    args = json.dumps(a.arguments, ensure_ascii=False)
    if len(args) > ARGS_CHARS:
        args = args[: ARGS_CHARS - 1] + "…"
    status = a.status if a.decision is None else f"{a.status} ({a.decision.by})"
    return f"{a.run_id:<{width}}  {a.call_id:<5} {status:<20} {a.subtask_id} → {a.tool} {args}"


@app.command("approvals")
def approvals_cmd(
    run: Annotated[
        str | None,
        typer.Argument(metavar="RUN", help="One run (id, prefix or 'latest'); default: all runs."),
    ] = None,
    all_calls: Annotated[
        bool, typer.Option("--all", help="Answered calls too, with who answered.")
    ] = False,
    runs_dir: RunsDir = DEFAULT_RUNS_DIR,
    json_lines: Json = False,
) -> None:
    """List the calls sub-agents wait on (a person approves, edits or denies each)."""
    from kimmy_swarm.swarm.store import DB_NAME

    if run is None and not (runs_dir / DB_NAME).is_file():
        if not json_lines:
            print(f"no calls waiting: no runs in {runs_dir}")
        return
    with _store(runs_dir) as store:
        run_id = store.resolve(run) if run is not None else None
        found = store.approvals(run_id, pending=not all_calls)  # one query for every run
    if json_lines:
        for a in found:
            print(json.dumps(a.as_json()))
        return
    if not found:
        where = f"run {run_id}" if run_id is not None else str(runs_dir)
        print(f"no calls {'asked' if all_calls else 'waiting'} in {where}")
        return
    width = max(len(a.run_id) for a in found)
    print(f"{'run':<{width}}  {'call':<5} {'status':<20} sub-agent → tool arguments")
    for a in found:
        print(_line(a, width))
    if any(a.pending for a in found):
        print("answer: kimmy approve RUN CALL [--args JSON] | kimmy deny RUN CALL --reason TEXT")


@app.command("approve")
def approve_cmd(
    run: RunArg,
    call: CallId,
    args: Annotated[
        str | None,
        typer.Option("--args", help="Run the call with these arguments instead (a JSON object)."),
    ] = None,
    reason: Annotated[str | None, typer.Option("--reason", help="Why (kept with the run).")] = None,
    runs_dir: RunsDir = DEFAULT_RUNS_DIR,
) -> None:
    """Approve a waiting call, as asked or with edited arguments."""
    from kimmy_swarm.swarm import Decision
    from kimmy_swarm.swarm.approval_records import parse_arguments

    edited = parse_arguments(args) if args is not None else None
    with _store(runs_dir) as store:
        answered = store.decide(run, call, Decision("approve", edited, reason, by="cli"))
    how = " with edited arguments" if edited is not None else ""
    print(f"approved {answered.call_id} ({answered.tool}) of run {answered.run_id}{how}")


@app.command("deny")
def deny_cmd(
    run: RunArg,
    call: CallId,
    reason: Annotated[
        str, typer.Option("--reason", help="Why: the sub-agent's model is told this.")
    ],
    runs_dir: RunsDir = DEFAULT_RUNS_DIR,
) -> None:
    """Deny a waiting call; its sub-agent is told the reason and goes on without it."""
    from kimmy_swarm.swarm import Decision

    if not reason.strip():
        raise typer.BadParameter("give a reason: the sub-agent's model is told it")
    with _store(runs_dir) as store:
        answered = store.decide(run, call, Decision("deny", None, reason, by="cli"))
    print(f"denied {answered.call_id} ({answered.tool}) of run {answered.run_id}: {reason}")


__all__ = ["app"]
