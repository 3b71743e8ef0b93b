"""`kimmy rewards RUN` and `kimmy rollouts TASK`: PARL scores and RL export on the command line.

    kimmy rewards latest                      # the reward breakdown of the newest run
    kimmy rewards 20261202-1955 --json --step 500 --schedule cosine
    kimmy rollouts task.json -k 8 --out rollouts.jsonl [--base-url URL]

A run is scored by the grader of the pipeline that made it (`agents.graders.score_stored_run`).
Task files: `kimmy.tasks`. Everything heavy (the pipelines, rich) loads when a command runs.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kimmy_swarm.cli.options import (
    DEFAULT_RUNS_DIR,
    GROUP_HELP,
    ApiKey,
    BaseUrl,
    CallTimeout,
    ContextTokens,
    Local,
    ModelName,
    RunArg,
    RunsDir,
    at_least,
    command_group,
    fail,
)

if TYPE_CHECKING:
    from kimmy_swarm.agents.graders import StoredRunScore
    from kimmy_swarm.rewards.export import RolloutRecord

app = command_group()


class ScheduleKind(StrEnum):
    constant = "constant"
    linear = "linear"
    cosine = "cosine"
    step = "step"


Step = Annotated[
    int, typer.Option("--step", callback=at_least(0), help="Training step the λs are read at.")
]
Kind = Annotated[ScheduleKind, typer.Option("--schedule", help="How λ1 and λ2 anneal to 0.")]
TotalSteps = Annotated[
    int,
    typer.Option("--total-steps", callback=at_least(1), help="Steps until the λs reach 0."),
]
Width = Annotated[
    int, typer.Option("--width", callback=at_least(1), help="Sub-agents where r_inst saturates.")
]
Artifacts = Annotated[
    Path | None,
    typer.Option(
        "--artifacts", help="Keep each rollout's files here (default: discarded).", file_okay=False
    ),
]


def _scored(
    run: str, runs_dir: Path, *, step: int, schedule: ScheduleKind, total_steps: int, width: int
) -> StoredRunScore:
    """A stored run scored by its pipeline's grader, the λs annealed by `schedule`."""
    from kimmy_swarm.agents.graders import score_stored_run
    from kimmy_swarm.rewards.parl import Schedule

    sched = Schedule(kind=schedule.value, total_steps=total_steps)
    return score_stored_run(run, runs_dir, step=step, schedule=sched, width=width)


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() and abs(value) > 1 else f"{value:.4f}"


@app.command("rewards")
def rewards_cmd(
    run: RunArg,
    runs_dir: RunsDir = DEFAULT_RUNS_DIR,
    json_out: Annotated[bool, typer.Option("--json", help="One JSON object on stdout.")] = False,
    step: Step = 0,
    schedule: Kind = ScheduleKind.linear,
    total_steps: TotalSteps = 1000,
    width: Width = 64,
) -> None:
    """The PARL reward of a stored run: r_inst, r_comp, r_result, λs, total, critical steps."""
    import json

    scored = _scored(
        run, runs_dir, step=step, schedule=schedule, total_steps=total_steps, width=width
    )
    traj, b = scored.trajectory, scored.breakdown
    payload = {"run_id": traj.run_id, **b.to_dict(), "grader_parts": scored.parts}
    if json_out:
        print(json.dumps(payload))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"PARL reward of run {traj.run_id} ({traj.status})")
    table.add_column("term")
    table.add_column("value", justify="right")
    table.add_column("note")
    c = b.critical
    for term, value, note in [
        ("r_inst", f"{b.r_inst:.4f}", f"sub-agents started, saturating at {width}"),
        ("r_comp", f"{b.r_comp:.4f}", "share finished with a used, non-empty output"),
        ("r_result", f"{b.r_result:.4f}", f"grader {b.grader}"),
        *[(f"  {k}", _num(v), "") for k, v in payload["grader_parts"].items()],
        ("λ1", f"{b.lambda1:.4f}", f"{schedule.value}, step {step} of {total_steps}"),
        ("λ2", f"{b.lambda2:.4f}", f"{schedule.value}, step {step} of {total_steps}"),
        ("total", f"{b.total:.4f}", "λ1·r_inst + λ2·r_comp + r_result"),
        ("critical steps", str(c.steps), f"serial {c.serial_steps}"),
        (
            "speed-up",
            f"{c.speedup:.2f}×",
            f"critical path {c.wall_s:.2f} s of {c.serial_wall_s:.2f} s (sub-agents' time summed)",
        ),
        ("wall time", _wall(traj.started_at, traj.finished_at), "run started → finished"),
    ]:
        table.add_row(term, value, note)
    Console().print(table)


def _wall(started_at: float | None, finished_at: float | None) -> str:
    """The run's wall time as `kimmy show` and `kimmy swarm` print it (`RunResult.wall_s`)."""
    from kimmy_swarm.swarm.schema import wall_time_s

    wall = wall_time_s(started_at, finished_at)
    return "—" if wall is None else f"{wall:.2f} s"


def _print_group(records: list[RolloutRecord], out: Path, *, offline: bool) -> None:
    import math

    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{len(records)} rollouts, group {records[0].group} → {out}")
    for name in ("#", "run", "sub-agents", "r_inst", "r_comp", "r_result", "total", "advantage"):
        table.add_column(name, justify="left" if name == "run" else "right", no_wrap=True)
    for r in records:
        w = r.reward
        table.add_row(
            str(r.index),
            r.run_id,
            str(len(r.spawns)),
            f"{w['r_inst']:.4f}",
            f"{w['r_comp']:.4f}",
            f"{w['r_result']:.4f}",
            f"{w['total']:.4f}",
            f"{r.advantage:+.4f}",
        )
    Console(width=max(100, Console().width)).print(table)
    described = sum(r.reconstructed for r in records)
    if described:
        print(
            f"{described} of {len(records)} records hold reconstructed messages (spawns made "
            "without a recorded model turn, described as JSON, or an opening the transcript "
            "did not keep whole; `reconstructed: true`): train on the others"
        )
    totals = [r.reward["total"] for r in records]
    if all(math.isclose(t, totals[0], abs_tol=1e-12) for t in totals):
        why = (
            "offline, the pipeline is deterministic; roll out with a sampling model "
            "(--base-url / --model) for a learning signal"
            if offline
            else "the model's rollouts scored alike; sample more diversely (temperature) or "
            "raise -k for a learning signal"
        )
        print(
            f"all {len(records)} rollouts scored the same (total {totals[0]:.4f}), so every "
            f"advantage is 0: {why}"
        )


@app.command("rollouts")
def rollouts_cmd(
    task_file: Annotated[Path, typer.Argument(help="Task file (JSON): a pipeline or a plan.")],
    k: Annotated[int, typer.Option("-k", callback=at_least(1), help=GROUP_HELP)] = 8,
    out: Annotated[
        Path,
        typer.Option(
            "--jsonl",
            "--out",
            help="The JSONL file the rollouts are written to (--out: the old name, deprecated; "
            "every other --out is a folder).",
        ),
    ] = Path("rollouts.jsonl"),
    base_url: BaseUrl = None,
    model: ModelName = None,
    api_key: ApiKey = None,
    local: Local = None,
    context_tokens: ContextTokens = None,
    call_timeout: CallTimeout = None,
    runs_dir: RunsDir = DEFAULT_RUNS_DIR,
    artifacts: Artifacts = None,
    step: Step = 0,
    schedule: Kind = ScheduleKind.linear,
    total_steps: TotalSteps = 1000,
    width: Width = 64,
) -> None:
    """Run K rollouts of a task (each a stored run), score them, write GRPO-ready JSONL."""
    import asyncio
    import tempfile

    from kimmy_swarm.cli.options import model_client
    from kimmy_swarm.cli.tasks import read_task, task_runner
    from kimmy_swarm.rewards.export import build_group, write_rollouts
    from kimmy_swarm.swarm.runtime import new_run_id

    if out.is_dir():  # found before the rollouts run, not when their records are written
        raise fail(
            f"--jsonl {out} is a folder; it names the JSONL file written, "
            f"e.g. --jsonl {out / 'rollouts.jsonl'}"
        )
    task = read_task(task_file)
    runner = task_runner(task, task_file.resolve().parent)
    client = model_client(
        base_url, model, api_key, required=False, local=local,
        context_tokens=context_tokens, call_timeout=call_timeout,
    )  # fmt: skip
    trajs, plans, breakdowns = [], [], []
    try:
        with tempfile.TemporaryDirectory(prefix="kimmy-rollouts-") as tmp:
            files = artifacts if artifacts is not None else Path(tmp)
            for i in range(k):
                run_id = runner(client, runs_dir, files / f"rollout-{i}")
                scored = _scored(run_id, runs_dir, step=step, schedule=schedule,
                                 total_steps=total_steps, width=width)  # fmt: skip
                traj, plan, b = scored.trajectory, scored.plan, scored.breakdown
                print(f"rollout {i + 1}/{k}: run {run_id} ({traj.status}), total {b.total:.4f}")
                trajs.append(traj)
                plans.append(plan)
                breakdowns.append(b)
    finally:
        if client is not None:
            asyncio.run(client.aclose())
    records = build_group(trajs, breakdowns, task=task, group=new_run_id(), plans=plans)
    write_rollouts(out, records)
    _print_group(records, out, offline=client is None)
