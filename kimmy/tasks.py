"""Task files of `kimmy rollouts`: what one rollout runs.

A task file is JSON, one of:

    {"pipeline": "review", "corpus": "papers/", "topic": "...", ...ReviewConfig fields}
    {"pipeline": "analysis", "datasets": ["statsmodels:longley"], "questions": ["..."]}
    {"plan": "plan.json" | {"goal": ..., "subtasks": [...]}}   (built-in roles; needs a model)

Relative paths in it are taken relative to the task file's folder. The pipelines load when a
runner is built for them.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kimmy_swarm.swarm.errors import UserError

if TYPE_CHECKING:
    from kimmy_swarm.swarm.llm import ChatModel

__all__ = ["Runner", "TaskFileError", "read_task", "task_runner"]

#: Runs one rollout: `(model or None, runs_dir, out folder) -> run id`.
Runner = Callable[["ChatModel | None", Path, Path], str]

#: Config fields the command sets itself (out, model, runs_dir): a task may not hold them.
_SET_BY_COMMAND = {"out", "model", "runs_dir"}


class TaskFileError(UserError):
    """A rollouts task file is missing, not JSON, or not one of the known task shapes."""


def read_task(path: Path) -> dict[str, Any]:
    """The task file's JSON object.

    Raises:
        TaskFileError: the file is missing or not a JSON object.
    """
    if path.is_dir():
        raise TaskFileError(
            f"task file {str(path)!r} is a folder; expected a JSON file (an object with "
            "'pipeline' (review | analysis) or 'plan')"
        )
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


def _review_runner(task: dict[str, Any], base: Path) -> Runner:
    from kimmy_swarm.agents.review import ReviewConfig, run_review

    options = _fields(ReviewConfig, task, "review")
    if "corpus" not in options:
        raise TaskFileError("a review task needs 'corpus' (a folder or a .bib/.jsonl/.json file)")
    options["corpus"] = base / Path(options["corpus"]).expanduser()
    options.setdefault("topic", "")
    ReviewConfig(**options, out=base)  # checks the fields before anything runs

    def run(model: ChatModel | None, runs_dir: Path, out: Path) -> str:
        return run_review(ReviewConfig(**options, out=out, model=model, runs_dir=runs_dir)).run_id

    return run


def _analysis_runner(task: dict[str, Any], base: Path) -> Runner:
    from kimmy_swarm.agents.analysis import AnalysisConfig, run_analysis

    options = _fields(AnalysisConfig, task, "analysis")
    if "datasets" not in options:
        raise TaskFileError("an analysis task needs 'datasets' (e.g. ['statsmodels:longley'])")
    options["root"] = base / Path(options.get("root") or ".").expanduser()
    AnalysisConfig(**options, out=base)  # checks the fields before anything runs

    def run(model: ChatModel | None, runs_dir: Path, out: Path) -> str:
        config = AnalysisConfig(**options, out=out, model=model, runs_dir=runs_dir)
        return run_analysis(config).run_id

    return run


def _plan_runner(task: dict[str, Any], base: Path) -> Runner:
    from kimmy_swarm.swarm.planfile import load_plan, parse_plan

    unknown = sorted(set(task) - {"plan", "max_concurrency"})
    if unknown:
        raise TaskFileError(
            f"unknown key(s) {unknown} in a plan task; allowed: max_concurrency, plan"
        )
    spec = task["plan"]
    plan = parse_plan(spec) if isinstance(spec, dict) else load_plan(base / Path(str(spec)))
    concurrency = int(task.get("max_concurrency", 64))

    def run(model: ChatModel | None, runs_dir: Path, out: Path) -> str:
        if model is None:
            raise UserError(
                "a plan task runs the built-in roles, which need a model: pass --base-url "
                "(and --model) or set KIMMY_BASE_URL"
            )
        from kimmy_swarm.agents import builtin_roles, install
        from kimmy_swarm.swarm import RunConfig, Swarm
        from kimmy_swarm.swarm.llm import redact_url

        config = RunConfig(max_concurrency=concurrency)
        with Swarm(config=config, model=model, runs_dir=runs_dir) as swarm:
            install(swarm, builtin_roles(), policy="model")
            url = getattr(model, "base_url", None)
            swarm.settings = {"base_url": url and redact_url(url), "model": model.name}
            return swarm.run_sync(plan).run_id

    return run


def task_runner(task: dict[str, Any], base: Path) -> Runner:
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
