"""`kimmy rewards RUN` and `kimmy rollouts TASK`: PARL scores and RL export on the command line.

    kimmy rewards latest                      # the reward breakdown of the newest run
    kimmy rewards 20261202-1955 --json --step 500 --schedule cosine
    kimmy rollouts task.json -k 8 --out rollouts.jsonl [--base-url URL]

A task file is JSON, one of:

    {"pipeline": "review", "corpus": "papers/", "topic": "...", ...ReviewConfig fields}
    {"pipeline": "analysis", "datasets": ["statsmodels:longley"], "questions": ["..."]}
    {"plan": "plan.json" | {"goal": ..., "subtasks": [...]}}   (built-in roles; needs a model)

Relative paths in it are taken relative to the task file's folder. `register(app)` adds both
commands to a typer app; everything heavy (the pipelines, rich) loads when one runs.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import tempfile
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from swarm.errors import UserError

#: Where runs are stored, as for `kimmy run`.
DEFAULT_RUNS_DIR = Path(".kimmy/runs")


class ScheduleKind(StrEnum):
    constant = "constant"
    linear = "linear"
    cosine = "cosine"
    step = "step"


class TaskFileError(UserError):
    """A rollouts task file is missing, not JSON, or not one of the known task shapes."""


def _at_least(low: int) -> Callable[[int | None], int | None]:
    def check(value: int | None) -> int | None:
        if value is not None and value < low:
            raise typer.BadParameter(f"must be an integer ≥ {low}, got {value}")
        return value

    return check


RunsDir = Annotated[
    Path,
    typer.Option(
        "--runs-dir", envvar="KIMMY_RUNS_DIR", help="Where runs are stored.", file_okay=False
    ),
]
Step = Annotated[
    int, typer.Option("--step", callback=_at_least(0), help="Training step the λs are read at.")
]
Kind = Annotated[ScheduleKind, typer.Option("--schedule", help="How λ1 and λ2 anneal to 0.")]
TotalSteps = Annotated[
    int,
    typer.Option("--total-steps", callback=_at_least(1), help="Steps until the λs reach 0."),
]
Width = Annotated[
    int, typer.Option("--width", callback=_at_least(1), help="Sub-agents where r_inst saturates.")
]


BaseUrl = Annotated[
    str | None, typer.Option("--base-url", help="OpenAI-compatible API root [env KIMMY_BASE_URL].")
]
ModelName = Annotated[str | None, typer.Option("--model", help="Model id [env KIMMY_MODEL].")]
ApiKey = Annotated[str | None, typer.Option("--api-key", help="API key [env KIMMY_API_KEY].")]
Artifacts = Annotated[
    Path | None,
    typer.Option(
        "--artifacts", help="Keep each rollout's files here (default: discarded).", file_okay=False
    ),
]


def _score(traj: Any, *, step: int, schedule: ScheduleKind, total_steps: int, width: int) -> Any:
    from rewards.graders import grader_for
    from rewards.parl import Schedule, score

    sched = Schedule(kind=schedule.value, total_steps=total_steps)
    return score(traj, grader_for(traj), step=step, lambda1=sched, lambda2=sched, width=width)


def _load(run: str, runs_dir: Path) -> tuple[Any, Any]:
    """(trajectory, stored plan) of a stored run."""
    from rewards.trajectory import build_trajectory
    from swarm.store import RunStore

    with RunStore(runs_dir, create=False) as store:
        stored = store.load_run(run)
        return build_trajectory(store.events(stored.run_id), plan=stored.plan), stored.plan


def _parts(traj: Any, grader_name: str) -> dict[str, float]:
    """The grader's sub-scores (precision, coverage, …) when it reports them."""
    from rewards.graders import grader_for

    grader = grader_for(traj)
    parts = getattr(grader, "parts", None)
    return dict(parts(traj)) if callable(parts) and grader.name == grader_name else {}


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() and abs(value) > 1 else f"{value:.4f}"


def rewards_cmd(
    run: Annotated[str, typer.Argument(help="Run id, unique prefix, or 'latest'.")],
    runs_dir: RunsDir = DEFAULT_RUNS_DIR,
    json_out: Annotated[bool, typer.Option("--json", help="One JSON object on stdout.")] = False,
    step: Step = 0,
    schedule: Kind = ScheduleKind.linear,
    total_steps: TotalSteps = 1000,
    width: Width = 64,
) -> None:
    """The PARL reward of a stored run: r_inst, r_comp, r_result, λs, total, critical steps."""
    traj, _ = _load(run, runs_dir)
    b = _score(traj, step=step, schedule=schedule, total_steps=total_steps, width=width)
    payload = {"run_id": traj.run_id, **b.to_dict(), "grader_parts": _parts(traj, b.grader)}
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
        ("speed-up", f"{c.speedup:.2f}×", f"wall {c.wall_s:.2f} s of {c.serial_wall_s:.2f} s"),
    ]:
        table.add_row(term, value, note)
    Console().print(table)


# --- tasks -------------------------------------------------------------------------------

#: Keys a task may hold per shape (besides the one naming the shape); config fields the
#: command sets itself (out, model, runs_dir) are not among them.
_SET_BY_COMMAND = {"out", "model", "runs_dir"}


def read_task(path: Path) -> dict[str, Any]:
    """The task file's JSON object.

    Raises:
        TaskFileError: the file is missing or not a JSON object.
    """
    if not path.is_file():
        raise TaskFileError(f"task file {str(path)!r} does not exist (expected a JSON file)")
    try:
        task = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise TaskFileError(f"task file {str(path)!r} is not JSON: {exc}") from None
    if not isinstance(task, dict):
        raise TaskFileError(
            f"task file {str(path)!r} holds a {type(task).__name__}; expected an object with "
            "'pipeline' (review | analysis) or 'plan'"
        )
    return task


def _fields(config_cls: type, task: dict[str, Any], shape: str) -> dict[str, Any]:
    allowed = {f.name for f in dataclasses.fields(config_cls)} - _SET_BY_COMMAND
    options = {k: v for k, v in task.items() if k != "pipeline"}
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise TaskFileError(
            f"unknown key(s) {unknown} in a {shape} task; allowed: {', '.join(sorted(allowed))}"
        )
    return options


def _review_runner(task: dict[str, Any], base: Path) -> Callable[..., str]:
    from agents.review import ReviewConfig, run_review

    options = _fields(ReviewConfig, task, "review")
    if "corpus" not in options:
        raise TaskFileError("a review task needs 'corpus' (a folder or a .bib/.jsonl/.json file)")
    options["corpus"] = base / Path(options["corpus"]).expanduser()
    options.setdefault("topic", "")

    def run(model: Any, runs_dir: Path, out: Path) -> str:
        return run_review(ReviewConfig(**options, out=out, model=model, runs_dir=runs_dir)).run_id

    return run


def _analysis_runner(task: dict[str, Any], base: Path) -> Callable[..., str]:
    from agents.analysis import AnalysisConfig, run_analysis

    options = _fields(AnalysisConfig, task, "analysis")
    if "datasets" not in options:
        raise TaskFileError("an analysis task needs 'datasets' (e.g. ['statsmodels:longley'])")
    options["root"] = base / Path(options.get("root") or ".").expanduser()
    AnalysisConfig(**options, out=base)  # checks the fields before anything runs

    def run(model: Any, runs_dir: Path, out: Path) -> str:
        config = AnalysisConfig(**options, out=out, model=model, runs_dir=runs_dir)
        return run_analysis(config).run_id

    return run


def _plan_runner(task: dict[str, Any], base: Path) -> Callable[..., str]:
    from swarm.planfile import load_plan, parse_plan
    from swarm.runtime import Swarm
    from swarm.workers import builtin_workers

    unknown = sorted(set(task) - {"plan", "max_concurrency"})
    if unknown:
        raise TaskFileError(
            f"unknown key(s) {unknown} in a plan task; allowed: max_concurrency, plan"
        )
    spec = task["plan"]
    plan = parse_plan(spec) if isinstance(spec, dict) else load_plan(base / Path(str(spec)))
    concurrency = int(task.get("max_concurrency", 64))

    def run(model: Any, runs_dir: Path, out: Path) -> str:
        if model is None:
            raise UserError(
                "a plan task runs the built-in roles, which need a model: pass --base-url "
                "(and --model) or set KIMMY_BASE_URL"
            )
        with Swarm(
            model=model, roles=builtin_workers(), runs_dir=runs_dir, max_concurrency=concurrency
        ) as swarm:
            swarm.settings = {"base_url": getattr(model, "base_url", None), "model": model.name}
            return swarm.run_sync(plan).run_id

    return run


def task_runner(task: dict[str, Any], base: Path) -> Callable[..., str]:
    """A function `(model, runs_dir, out) -> run_id` that runs one rollout of the task.

    Raises:
        TaskFileError: the task is of no known shape or has unknown keys.
    """
    if "plan" in task and "pipeline" not in task:
        return _plan_runner(task, base)
    pipeline = task.get("pipeline")
    if pipeline == "review":
        return _review_runner(task, base)
    if pipeline == "analysis":
        return _analysis_runner(task, base)
    raise TaskFileError(
        f"unknown task: 'pipeline' is {pipeline!r}; use 'review' or 'analysis', or give "
        "'plan' (a plan file or object) instead"
    )


# --- rollouts ----------------------------------------------------------------------------


def _print_group(records: list[Any], out: Path, *, offline: bool) -> None:
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


def rollouts_cmd(
    task_file: Annotated[Path, typer.Argument(help="Task file (JSON): a pipeline or a plan.")],
    k: Annotated[int, typer.Option("-k", callback=_at_least(1), help="Rollouts in the group.")] = 8,
    out: Annotated[Path, typer.Option("--out", help="The JSONL file written.")] = Path(
        "rollouts.jsonl"
    ),
    base_url: BaseUrl = None,
    model: ModelName = None,
    api_key: ApiKey = None,
    runs_dir: RunsDir = DEFAULT_RUNS_DIR,
    artifacts: Artifacts = None,
    step: Step = 0,
    schedule: Kind = ScheduleKind.linear,
    total_steps: TotalSteps = 1000,
    width: Width = 64,
) -> None:
    """Run K rollouts of a task (each a stored run), score them, write GRPO-ready JSONL."""
    from rewards.export import build_group, write_rollouts
    from swarm.runtime import new_run_id

    task = read_task(task_file)
    runner = task_runner(task, task_file.resolve().parent)
    from agents.cli import model_from_options

    client = model_from_options(base_url, model, api_key)
    trajs, plans, breakdowns = [], [], []
    try:
        with tempfile.TemporaryDirectory(prefix="kimmy-rollouts-") as tmp:
            files = artifacts if artifacts is not None else Path(tmp)
            for i in range(k):
                run_id = runner(client, runs_dir, files / f"rollout-{i}")
                traj, plan = _load(run_id, runs_dir)
                b = _score(traj, step=step, schedule=schedule, total_steps=total_steps, width=width)
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


def register(app: typer.Typer) -> None:
    """Add `rewards` and `rollouts` to the `kimmy` app."""
    app.command("rewards")(rewards_cmd)
    app.command("rollouts")(rollouts_cmd)


__all__ = [
    "DEFAULT_RUNS_DIR",
    "ScheduleKind",
    "TaskFileError",
    "read_task",
    "register",
    "rewards_cmd",
    "rollouts_cmd",
    "task_runner",
]
