"""`kimmy`: the command line — run, resume, list and show swarm runs; the pipelines
(`review`, `analyze`, `demo`) are registered from `agents.cli`.

Exit codes: 0 the run completed; 1 it finished with failed or skipped subtasks (or a spent
budget); 2 bad input (one line on stderr naming the bad value and what is allowed);
130 interrupted (everything finished so far is stored: `kimmy resume RUN` continues).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from swarm._cli_show import print_run_summary, show_run, show_runs
from swarm.errors import ModelError, SwarmError, UserError
from swarm.schema import RunResult, RunStatus
from swarm.steps import FailurePolicy

app = typer.Typer(
    name="kimmy",
    help="Kimmy Swarm: run DAGs of sub-agents against a model server, durably.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

DEFAULT_RUNS_DIR = ".kimmy/runs"

# click's UsageError (typer ≥ 0.29 vendors click; older typer uses click itself): the base of
# every bad-flag / bad-argument error, found through the public `typer.BadParameter`.
_UsageError: type[Exception] = typer.BadParameter.__mro__[1]


def _at_least(low: int) -> Any:
    """A flag check whose message names the bad value and what is allowed."""

    def check(value: int | None) -> int | None:
        if value is not None and value < low:
            raise typer.BadParameter(f"must be an integer ≥ {low}, got {value}")
        return value

    return check


def _positive(value: float | None) -> float | None:
    if value is not None and not (0 < value < float("inf")):
        raise typer.BadParameter(f"must be a positive number of seconds, got {value}")
    return value


RunsDir = Annotated[
    Path,
    typer.Option(
        "--runs-dir",
        envvar="KIMMY_RUNS_DIR",
        help="Where runs are stored (SQLite).",
        file_okay=False,
    ),
]
Json = Annotated[bool, typer.Option("--json", help="JSON lines on stdout instead of a view.")]
BaseUrl = Annotated[
    str | None,
    typer.Option("--base-url", help="OpenAI-compatible API root [env KIMMY_BASE_URL]."),
]
ModelName = Annotated[str | None, typer.Option("--model", help="Model id [env KIMMY_MODEL].")]
ApiKey = Annotated[str | None, typer.Option("--api-key", help="API key [env KIMMY_API_KEY].")]
Concurrency = Annotated[
    int | None,
    typer.Option("--max-concurrency", callback=_at_least(1), help="Most sub-agents in flight."),
]


def _limits(**values: Any) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


def _model(base_url: str | None, model: str | None, api_key: str | None, pool: int) -> Any:
    from swarm.llm import OpenAIChat

    client = OpenAIChat.from_env(
        base_url=base_url, model=model, api_key=api_key, max_connections=pool
    )
    asyncio.run(client.check())  # preflight: one clear line if the server is unreachable
    return client


def _swarm(runs_dir: Path | None, options: dict[str, Any]) -> Any:
    """A swarm of the built-in roles; its model is attached once the server answered."""
    from swarm.runtime import Swarm
    from swarm.workers import builtin_workers

    return Swarm(roles=builtin_workers(), runs_dir=runs_dir, **options)


def _attach(swarm: Any, base_url: str | None, model: str | None, api_key: str | None) -> None:
    client = _model(base_url, model, api_key, swarm.config.max_concurrency)
    swarm.model = client
    swarm.settings = {"base_url": client.base_url, "model": client.name}


def _execute(swarm: Any, work: Any, json_lines: bool) -> RunResult:
    """Run `work(sinks)` with the progress view; Ctrl-C / SIGTERM cancel it cleanly."""
    from swarm.progress import make_progress

    box: list[RunResult] = []

    async def main() -> None:
        task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        if task is not None:
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(signal.SIGTERM, task.cancel)
        with make_progress(json=json_lines) as sink:
            try:
                box.append(await work([sink]))
            finally:
                await swarm.model.aclose()
                swarm.close()

    asyncio.run(main())  # the result is not the main task's: see Swarm.run_sync
    return box[0]


def _finish(result: RunResult, json_lines: bool, runs_dir: Path | None) -> None:
    if not json_lines:
        print_run_summary(result, runs_dir)
    if result.status is not RunStatus.COMPLETED:
        raise typer.Exit(1)


@app.command()
def run(
    plan: Annotated[Path, typer.Argument(help="Plan file (JSON: goal, subtasks).")],
    base_url: BaseUrl = None,
    model: ModelName = None,
    api_key: ApiKey = None,
    max_concurrency: Annotated[
        int,
        typer.Option("--max-concurrency", callback=_at_least(1), help="Most sub-agents in flight."),
    ] = 64,
    rate_limit: Annotated[
        str | None, typer.Option("--rate-limit", help="Model calls per period: 600/m, 10/s.")
    ] = None,
    timeout: Annotated[
        float, typer.Option("--timeout", callback=_positive, help="Seconds per subtask attempt.")
    ] = 600.0,
    retries: Annotated[
        int, typer.Option("--retries", callback=_at_least(0), help="Retries per subtask.")
    ] = 2,
    failure_policy: Annotated[
        FailurePolicy, typer.Option("--failure-policy", help="What a failure does to the rest.")
    ] = FailurePolicy.SKIP_DEPENDENTS,
    max_subagents: Annotated[
        int | None, typer.Option("--max-subagents", callback=_at_least(1))
    ] = None,
    max_tokens: Annotated[int | None, typer.Option("--max-tokens", callback=_at_least(1))] = None,
    deadline: Annotated[float | None, typer.Option("--deadline", callback=_positive)] = None,
    max_depth: Annotated[int, typer.Option("--max-depth", callback=_at_least(0))] = 3,
    adaptive: Annotated[bool, typer.Option(help="Back off when the server is overloaded.")] = True,
    runs_dir: RunsDir = Path(DEFAULT_RUNS_DIR),
    store: Annotated[bool, typer.Option(help="Store the run durably (resumable).")] = True,
    json_lines: Json = False,
    executor: Annotated[
        str,
        typer.Option(
            "--executor",
            help="Where sub-agents run: local, or ray (needs `pip install 'kimmy-swarm[ray]'`).",
        ),
    ] = "local",
    ray_address: Annotated[
        str | None,
        typer.Option("--ray-address", help="Ray cluster to join: auto, HOST:PORT, ray://…"),
    ] = None,
) -> None:
    """Run a plan: one sub-agent per subtask, dependencies first."""
    from swarm.planfile import load_plan

    parsed = load_plan(plan)
    swarm = _swarm(
        runs_dir if store else None,
        _limits(
            max_concurrency=max_concurrency,
            rate_limit=rate_limit,
            timeout_s=timeout,
            max_retries=retries,
            failure_policy=failure_policy.value,
            max_subagents=max_subagents,
            max_total_tokens=max_tokens,
            deadline_s=deadline,
            max_depth=max_depth,
            adaptive=adaptive,
            executor=executor,
            ray_address=ray_address,
        ),
    )
    swarm.check(parsed)  # a bad plan fails before the server is even asked
    _attach(swarm, base_url, model, api_key)
    result = _execute(swarm, lambda sinks: swarm.execute(parsed, sinks=sinks), json_lines)
    _finish(result, json_lines, runs_dir if store else None)


@app.command()
def resume(
    run_id: Annotated[str, typer.Argument(help="Run id, unique prefix, or 'latest'.")],
    base_url: BaseUrl = None,
    model: ModelName = None,
    api_key: ApiKey = None,
    max_concurrency: Concurrency = None,
    runs_dir: RunsDir = Path(DEFAULT_RUNS_DIR),
    json_lines: Json = False,
) -> None:
    """Continue a stored run: finished subtasks are reused, the rest runs."""
    from swarm.store import RunStore

    with RunStore(runs_dir, create=False) as store:
        stored = store.load_run(run_id)
    settings = stored.settings
    concurrency = max_concurrency or int(settings.get("max_concurrency", 64))
    options = {
        k: settings[k]
        for k in (
            "timeout_s", "max_retries", "failure_policy", "max_depth", "adaptive",
            "executor", "ray_address", "ray_hosts",
        )
        if settings.get(k) is not None
    }
    budget = settings.get("budget") or {}
    swarm = _swarm(
        runs_dir,
        {
            **options,
            "max_concurrency": concurrency,
            "max_subagents": budget.get("max_subagents"),
            "max_total_tokens": budget.get("max_total_tokens"),
            "deadline_s": budget.get("deadline_s"),
        },
    )
    _attach(swarm, base_url or settings.get("base_url"), model or settings.get("model"), api_key)
    result = _execute(swarm, lambda sinks: swarm.resume(stored.run_id, sinks=sinks), json_lines)
    _finish(result, json_lines, runs_dir)


@app.command("runs")
def runs_cmd(
    runs_dir: RunsDir = Path(DEFAULT_RUNS_DIR),
    limit: Annotated[
        int, typer.Option("--limit", callback=_at_least(1), help="Newest N runs.")
    ] = 20,
    json_lines: Json = False,
) -> None:
    """List stored runs, newest first."""
    show_runs(runs_dir, limit=limit, json_lines=json_lines)


@app.command()
def show(
    run_id: Annotated[str, typer.Argument(help="Run id, unique prefix, or 'latest'.")],
    runs_dir: RunsDir = Path(DEFAULT_RUNS_DIR),
    events: Annotated[bool, typer.Option("--events", help="Print the event log.")] = False,
    output: Annotated[
        str | None, typer.Option("--output", help="Print one subtask's output.")
    ] = None,
    json_lines: Json = False,
) -> None:
    """Show a stored run: status, counts by status and role, usage, failures."""
    show_run(runs_dir, run_id, events=events, output=output, json_lines=json_lines)


@app.command()
def validate(plan: Annotated[Path, typer.Argument(help="Plan file (JSON).")]) -> None:
    """Check a plan file against the built-in roles; print its shape."""
    from swarm.dag import critical_path, topological_generations, validate_plan
    from swarm.planfile import load_plan
    from swarm.workers import BUILTIN_ROLES

    graph = validate_plan(load_plan(plan), roles=BUILTIN_ROLES)
    gens = topological_generations(graph)
    print(
        f"{plan}: valid; {graph.number_of_nodes()} subtasks, {graph.number_of_edges()} "
        f"dependencies, {len(gens)} stages, widest stage {max(len(g) for g in gens)}, "
        f"critical path {len(critical_path(graph))} subtasks"
    )


def _register_pipelines() -> None:
    """`kimmy review / analyze / demo` live with the agents, `kimmy rewards / rollouts` with
    the rewards, `kimmy train lm` and `kimmy serve` with the model (their heavy imports load
    on use)."""
    from agents.cli import register
    from model.serve.cli import register as register_serve
    from model.train.cli import register as register_train
    from rewards.cli import register as register_rewards

    register(app)
    register_rewards(app)
    register_train(app)
    register_serve(app)


_register_pipelines()


def _raw_value(argv: list[str], exc: Exception) -> str | None:
    """The text the user gave for the flag a usage error is about, if any."""
    opts = getattr(getattr(exc, "param", None), "opts", None) or []
    for i, arg in enumerate(argv):
        for opt in opts:
            if arg == opt and i + 1 < len(argv):
                return argv[i + 1]
            if arg.startswith(opt + "="):
                return arg[len(opt) + 1 :]
    return None


_INTERRUPTED = "kimmy: interrupted; finished work is stored: `kimmy resume latest` continues"


def _fail(message: str, code: int = 2) -> int:
    print(f"kimmy: error: {message}", file=sys.stderr)
    return code


def main(argv: list[str] | None = None) -> int:
    """Entry point of `kimmy`: one line per user error, no tracebacks, set exit codes."""
    try:
        code = app(args=argv, prog_name="kimmy", standalone_mode=False)
    except _UsageError as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":
            with contextlib.suppress(BrokenPipeError):
                print(exc.format_message())  # type: ignore[attr-defined]
            return 0
        message = exc.format_message().replace("\n", " ")  # type: ignore[attr-defined]
        value = _raw_value(sys.argv[1:] if argv is None else argv, exc)
        if value is not None and repr(value) not in message and f" {value}" not in message:
            message += f" (got {value!r})"
        return _fail(message)
    except (KeyboardInterrupt, typer.Abort):  # click turns Ctrl-C into Abort
        print(_INTERRUPTED, file=sys.stderr)
        return 130
    except typer.Exit as exc:
        return exc.exit_code
    except (UserError, ModelError) as exc:
        return _fail(str(exc))
    except SwarmError as exc:
        return _fail(f"{type(exc).__name__}: {exc}", 1)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    if code == 130:  # typer turns Ctrl-C into exit code 130 itself
        print(_INTERRUPTED, file=sys.stderr)
    return code if isinstance(code, int) else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
