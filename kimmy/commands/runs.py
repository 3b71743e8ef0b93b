"""`kimmy run`, `kimmy resume`, `kimmy runs`, `kimmy show`, `kimmy validate`: plan files run by
the built-in roles of `agents` (each a `SubAgent` under the model policy), and stored runs.

`kimmy run` builds one `RunConfig` from its flags; `kimmy resume` continues with the
`RunConfig` the run was stored with, changed only by the flags given. Exit codes: 0 the run
completed; 1 it finished with failed or skipped subtasks (or a spent budget); 2 bad input;
130 interrupted by Ctrl-C (SIGINT), 143 stopped by SIGTERM: in both cases everything finished
so far is stored, and `kimmy resume RUN` continues.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from kimmy_swarm.cli.options import (
    DEFAULT_RUNS_DIR,
    ApiKey,
    ApprovalTimeout,
    ApproveSpawnsOver,
    ApproveTools,
    BaseUrl,
    CallTimeout,
    ContextTokens,
    Json,
    Local,
    MaxConcurrency,
    MaxSubagents,
    McpConfigFile,
    ModelName,
    OnApprovalTimeout,
    OnTimeout,
    ResumeOutDir,
    RunArg,
    RunsDir,
    Stream,
    approval_policy,
    at_least,
    command_group,
    stored_base_url,
)

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from kimmy_swarm.agents.tools.mcp import McpHost
    from kimmy_swarm.swarm import EventSink, Plan, RunConfig, Swarm
    from kimmy_swarm.swarm.schema import RunResult
    from kimmy_swarm.swarm.store import StoredRun

app = command_group()

RunId = RunArg


def _positive(value: float | None) -> float | None:
    if value is not None and not (0 < value < float("inf")):
        raise typer.BadParameter(f"must be a positive number of seconds, got {value}")
    return value


def _swarm(config: RunConfig, runs_dir: Path | None) -> Swarm:
    """A swarm of the built-in roles; its model is attached once the server answered."""
    from kimmy_swarm.agents import builtin_roles, install
    from kimmy_swarm.swarm import Swarm

    swarm = Swarm(config=config, runs_dir=runs_dir)
    install(swarm, builtin_roles(), policy="model")
    return swarm


def _mcp_tools(swarm: Swarm, path: Path | None, runs_dir: Path | None) -> McpHost | None:
    """The MCP servers of `--mcp-config`, started; subtasks whose `role_spec` names their
    tools (`server.tool`) get sub-agents made from it. None without the flag."""
    if path is None:
        return None
    from kimmy_swarm.agents.orchestrator import spec_role_factory
    from kimmy_swarm.agents.tools.mcp import McpHost
    from kimmy_swarm.agents.tools.mcp.config import as_mcp_config

    config = as_mcp_config(path)
    assert config is not None
    host = McpHost(config, log_dir=(runs_dir or Path(".")) / "mcp-logs").start()
    swarm.set_role_factory(spec_role_factory(host.toolbox(), policy="model"))
    return host


def _checked_plan(path: Path, swarm: Swarm) -> Plan:
    """The plan file, parsed and checked against the swarm's roles and output schemas: the
    one check `kimmy run` and `kimmy validate` share, so `validate` passes what `run` runs.

    Raises:
        ConfigError: the file is missing or unreadable.
        PlanValidationError: not JSON, a repeated key, too deep, not a plan, not a DAG,
            unknown roles or schemas (`swarm.planfile.parse_plan`, `Swarm.check`).
    """
    from kimmy_swarm.swarm.planfile import load_plan

    plan = load_plan(path)
    swarm.check(plan)
    return plan


def _attach(
    swarm: Swarm,
    base_url: str | None,
    model: str | None,
    api_key: str | None,
    context_tokens: int | None,
    local: str | None = None,
    call_timeout: float | None = None,
) -> None:
    from kimmy_swarm.cli.options import model_client
    from kimmy_swarm.swarm.llm import redact_url

    client = model_client(
        base_url,
        model,
        api_key,
        required=True,
        pool=swarm.config.max_concurrency,
        context_tokens=context_tokens,
        local=local,
        call_timeout=call_timeout,
    )
    swarm.model = client
    # stored and printed: credentials in the URL are masked (the client keeps the real one)
    swarm.settings = {"base_url": redact_url(client.base_url), "model": client.name}
    if local is not None:  # its in-process server is gone by `kimmy resume`: start it again
        swarm.settings["local"] = local
    if context_tokens is not None:  # `kimmy resume` reuses it
        swarm.settings["context_tokens"] = context_tokens


def _execute(
    swarm: Swarm, work: Callable[[Sequence[EventSink]], RunResult], json_lines: bool, workflow: str
) -> RunResult:
    """`work(sinks)` the way every command runs its work (`kimmy.command_work.run_work`:
    the progress view, spans, Ctrl-C / SIGTERM), then the swarm closed."""
    from kimmy_swarm.cli.command_work import run_work

    try:
        return run_work(work, swarm.model, json_lines, workflow=workflow)
    finally:
        swarm.close()


def _finish(result: RunResult, json_lines: bool, runs_dir: Path | None) -> None:
    from kimmy_swarm.cli.show import print_run_summary
    from kimmy_swarm.swarm.schema import RunStatus

    if not json_lines:
        print_run_summary(result, runs_dir)
    if result.status is not RunStatus.COMPLETED:
        raise typer.Exit(1)


class FailurePolicyName(StrEnum):
    """`--failure-policy`: the values of `swarm.FailurePolicy`, spelt out so that this module
    loads without the runtime (a test pins that they agree)."""

    FAIL_FAST = "fail_fast"
    SKIP_DEPENDENTS = "skip_dependents"
    CONTINUE = "continue"


@app.command("run")
def run(
    plan: Annotated[Path, typer.Argument(help="Plan file (JSON: goal, subtasks).")],
    base_url: BaseUrl = None,
    model: ModelName = None,
    api_key: ApiKey = None,
    context_tokens: ContextTokens = None,
    call_timeout: CallTimeout = None,
    local: Local = None,
    max_concurrency: MaxConcurrency = 64,
    rate_limit: Annotated[
        str | None, typer.Option("--rate-limit", help="Model calls per period: 600/m, 10/s.")
    ] = None,
    timeout: Annotated[
        float, typer.Option("--timeout", callback=_positive, help="Seconds per subtask attempt.")
    ] = 600.0,
    retries: Annotated[
        int, typer.Option("--retries", callback=at_least(0), help="Retries per subtask.")
    ] = 2,
    failure_policy: Annotated[
        FailurePolicyName,
        typer.Option("--failure-policy", help="What a failure does to the rest."),
    ] = FailurePolicyName.SKIP_DEPENDENTS,
    max_subagents: MaxSubagents = None,
    max_tokens: Annotated[
        int | None,
        typer.Option(
            "--token-budget",
            "--max-tokens",
            callback=at_least(1),
            help="Tokens the whole run may spend, all calls together; then it stops, "
            "resumable (--max-tokens: the old name, deprecated).",
        ),
    ] = None,
    deadline: Annotated[
        float | None,
        typer.Option(
            "--deadline",
            callback=_positive,
            help="Seconds the whole run may take; then it stops, resumable.",
        ),
    ] = None,
    max_depth: Annotated[
        int,
        typer.Option(
            "--max-depth", callback=at_least(0), help="Most levels of spawned sub-agents."
        ),
    ] = 3,
    adaptive: Annotated[bool, typer.Option(help="Back off when the server is overloaded.")] = True,
    seed: Annotated[
        int | None, typer.Option("--seed", help="Seeds the retry jitter (reproducible delays).")
    ] = None,
    runs_dir: RunsDir = DEFAULT_RUNS_DIR,
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
    ray_hosts: Annotated[
        int | None,
        typer.Option(
            "--ray-hosts", callback=at_least(1), help="Ray host actors (default: one per node)."
        ),
    ] = None,
    transcripts: Annotated[
        str | None,
        typer.Option(
            "--transcripts",
            help="What the store keeps of each sub-agent's conversation: full (messages, "
            "answers, tool arguments and results) or off (sizes only, for sensitive runs). "
            "Default: $KIMMY_TRANSCRIPTS, else full.",
        ),
    ] = None,
    approve_tools: ApproveTools = None,
    approve_spawns_over: ApproveSpawnsOver = None,
    approval_timeout: ApprovalTimeout = None,
    on_approval_timeout: OnApprovalTimeout = OnTimeout.deny,
    stream: Stream = False,
    mcp_config: McpConfigFile = None,
) -> None:
    """Run a plan: one sub-agent per subtask, dependencies first (a subtask whose
    `role_spec` names tools of --mcp-config's servers gets them)."""
    from kimmy_swarm.swarm import FailurePolicy, RateLimit, RunConfig
    from kimmy_swarm.swarm.transcript_capture import TranscriptCapture

    config = RunConfig(
        max_concurrency=max_concurrency,
        timeout_s=timeout,
        max_retries=retries,
        failure_policy=FailurePolicy(failure_policy.value),
        rate_limit=RateLimit.parse(rate_limit) if rate_limit is not None else None,
        max_subagents=max_subagents,
        max_total_tokens=max_tokens,
        deadline_s=deadline,
        max_depth=max_depth,
        adaptive=adaptive,
        seed=seed,
        executor=executor,
        ray_address=ray_address,
        ray_hosts=ray_hosts,
        transcripts=(
            TranscriptCapture.parse(transcripts)
            if transcripts is not None
            else TranscriptCapture.from_env()
        ),
        approvals=approval_policy(
            approve_tools, approve_spawns_over, approval_timeout, on_approval_timeout
        ),
        stream=stream,
    )
    where = runs_dir if store else None
    swarm = _swarm(config, where)
    host = _mcp_tools(swarm, mcp_config, where)
    try:
        parsed = _checked_plan(plan, swarm)  # a bad plan fails before the server is asked
        _attach(swarm, base_url, model, api_key, context_tokens, local, call_timeout)
        result = _execute(
            swarm, lambda sinks: swarm.run_sync(parsed, sinks=sinks), json_lines, "kimmy run"
        )
    finally:
        if host is not None:
            host.close()
    _finish(result, json_lines, where)


@app.command("resume")
def resume(
    run_id: RunId,
    base_url: BaseUrl = None,
    model: ModelName = None,
    api_key: ApiKey = None,
    context_tokens: ContextTokens = None,
    call_timeout: CallTimeout = None,
    local: Local = None,
    max_concurrency: MaxConcurrency = None,
    runs_dir: RunsDir = DEFAULT_RUNS_DIR,
    mcp_config: McpConfigFile = None,
    out: ResumeOutDir = None,
    json_lines: Json = False,
) -> None:
    """Continue a stored run: finished subtasks are reused, the rest runs."""
    from kimmy_swarm.agents.pipeline_record import record_kind, stored_settings
    from kimmy_swarm.swarm import RunConfig
    from kimmy_swarm.swarm.store import RunStore

    if local is not None and (base_url or model):
        from kimmy_swarm.cli.options import fail

        raise fail("give one model: --base-url/--model or --local MODEL")
    with RunStore(runs_dir, create=False) as store:
        stored = store.load_run(run_id)
    kind = record_kind(stored.settings)
    if kind == "solve" or "solve" in stored.settings:  # `kimmy swarm`: its orchestrator goes on
        from kimmy_swarm.cli.commands.solve import resume_swarm

        with _files_folder(stored, out):
            resume_swarm(stored.run_id, runs_dir, stored.settings, json_lines, api_key,
                         call_timeout, mcp_config=mcp_config, out=out, local=local)  # fmt: skip
        return
    if kind is not None:  # a `kimmy review` / `kimmy analyze` run
        from kimmy_swarm.cli.commands.pipelines import resume_pipeline_run

        with _files_folder(stored, out):
            resume_pipeline_run(
                stored.run_id, runs_dir, stored.settings, json_lines, base_url=base_url,
                model=model, api_key=api_key, context_tokens=context_tokens,
                max_concurrency=max_concurrency, call_timeout=call_timeout,
                mcp_config=mcp_config, out=out, local=local,
            )  # fmt: skip
        folder = stored_settings(stored.settings).get("out")
        if kind == "analysis" and isinstance(folder, str):  # a demo's analysis: its review next
            from kimmy_swarm.cli.demo_watch import finish_demo

            finish_demo(Path(folder), runs_dir, json_lines)
        return
    if out is not None:
        from kimmy_swarm.cli.options import fail

        raise fail(
            f"--out {out}: run {stored.run_id} is a plan run (kimmy run), which stores its "
            "outputs and writes no files; drop --out (kimmy show RUN --output ID prints one)"
        )
    given: dict[str, Any] = {"max_concurrency": max_concurrency}
    config = RunConfig.from_settings(stored.settings).replace(
        **{k: v for k, v in given.items() if v is not None}
    )
    swarm = _swarm(config, runs_dir)
    settings = stored.settings
    remote = base_url or model
    local = local or (None if remote else settings.get("local"))
    host = _mcp_tools(swarm, mcp_config, runs_dir)
    try:
        _attach(
            swarm,
            None if local else base_url or stored_base_url(settings.get("base_url")),
            None if local else model or settings.get("model"),
            api_key,
            context_tokens or settings.get("context_tokens"),
            local,
            call_timeout,
        )
        result = _execute(
            swarm,
            lambda sinks: swarm.resume_sync(stored.run_id, sinks=sinks),
            json_lines,
            "kimmy resume",
        )
    finally:
        if host is not None:
            host.close()
    _finish(result, json_lines, runs_dir)


def _files_folder(stored: StoredRun, out: Path | None) -> AbstractContextManager[object]:
    """The folder a resumed run writes its files into, held while it runs
    (`kimmy.out_dir.hold_out`): `--out`, else the one stored with the run."""
    from contextlib import nullcontext

    from kimmy_swarm.agents.pipeline_record import stored_settings
    from kimmy_swarm.cli.out_dir import hold_out

    if out is not None:
        return hold_out(out)
    folder = stored_settings(stored.settings).get("out")
    if not isinstance(folder, str):  # stored by an earlier version: its resume says so
        return nullcontext()
    return hold_out(
        Path(folder),
        f"run {stored.run_id}'s --out",
        hint="write its files elsewhere with --out DIR",
    )


@app.command("runs")
def runs_cmd(
    runs_dir: RunsDir = DEFAULT_RUNS_DIR,
    limit: Annotated[
        int, typer.Option("--limit", callback=at_least(1), help="Newest N runs.")
    ] = 20,
    json_lines: Json = False,
) -> None:
    """List stored runs, newest first."""
    from kimmy_swarm.cli.show import show_runs

    show_runs(runs_dir, limit=limit, json_lines=json_lines)


@app.command("show")
def show(
    run_id: RunId,
    runs_dir: RunsDir = DEFAULT_RUNS_DIR,
    events: Annotated[bool, typer.Option("--events", help="Print the event log.")] = False,
    output: Annotated[
        str | None, typer.Option("--output", help="Print one subtask's output.")
    ] = None,
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent",
            help="Print one sub-agent's conversation (every attempt: messages, answers, tool "
            "calls and results, invalid answers and repair turns).",
        ),
    ] = None,
    follow: Annotated[
        bool,
        typer.Option(
            "--follow",
            help="With --agent: go on printing the conversation as it happens, and the "
            "answer its model is writing (runs started with --stream), until it ends.",
        ),
    ] = False,
    json_lines: Json = False,
) -> None:
    """Show a stored run: status, counts by status and role, usage, failures."""
    if follow:
        if agent is None:
            raise typer.BadParameter("--follow follows one sub-agent: give --agent ID")
        from kimmy_swarm.cli.follow_transcript import follow_transcript

        follow_transcript(runs_dir, run_id, agent)
        return
    if agent is not None:
        from kimmy_swarm.cli.show_transcript import show_transcript

        show_transcript(runs_dir, run_id, agent, json_lines=json_lines)
        return
    from kimmy_swarm.cli.show import show_run

    show_run(runs_dir, run_id, events=events, output=output, json_lines=json_lines)


@app.command("validate")
def validate(plan: Annotated[Path, typer.Argument(help="Plan file (JSON).")]) -> None:
    """Check a plan file as `kimmy run` would (built-in roles and schemas); print its shape."""
    from kimmy_swarm.swarm import RunConfig
    from kimmy_swarm.swarm.dag import build_graph, critical_path, topological_generations

    graph = build_graph(_checked_plan(plan, _swarm(RunConfig(), None)).subtasks)
    gens = topological_generations(graph)
    print(
        f"{plan}: valid; {graph.number_of_nodes()} subtasks, {graph.number_of_edges()} "
        f"dependencies, {len(gens)} stages, widest stage {max(len(g) for g in gens)}, "
        f"critical path {len(critical_path(graph))} subtasks"
    )
