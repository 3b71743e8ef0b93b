"""`kimmy swarm "GOAL"`: the orchestrator turns a goal in words into sub-agents it creates.

    kimmy swarm "Review linear attention" --corpus papers/            # offline: a review
    kimmy swarm "Which factors drive GNP?" --data statsmodels:longley # offline: an analysis
    kimmy swarm "Compare the papers' methods" --corpus papers/ --base-url URL --model M
    kimmy swarm "…" --corpus papers/ --tiny                           # in-process tiny model
    kimmy swarm "…" --corpus papers/ --local smollm2                  # real model, in-process
    kimmy swarm "…" --corpus papers/ --local runs/tiny/checkpoint-000200

Writes OUT/answer.md and stores the run (`kimmy show RUN` shows the orchestrator's turns and
the sub-agents it created; `kimmy resume RUN` continues it). Exit codes: 0 completed, 1 the
run ended otherwise (the answer says why), 2 bad input.
"""

from __future__ import annotations

import sys
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
    MaxTokens,
    McpConfigFile,
    ModelName,
    NativeTools,
    OnApprovalTimeout,
    OnTimeout,
    OutDir,
    Probe,
    RunsDir,
    Stream,
    StructuredOutput,
    approval_policy,
    at_least,
    command_group,
)

if TYPE_CHECKING:
    from kimmy_swarm.agents.orchestrator import SolveOutcome
    from kimmy_swarm.swarm.llm.endpoint import ModelEndpoint

app = command_group()


def open_model(
    source: dict[str, Any],
    api_key: str | None = None,
    call_timeout: float | None = None,
    *,
    honours: dict[str, bool | None] | None = None,
    probe: bool = False,
) -> Any:
    """The model a source names (started: a local one runs in this process), or None.

    Sources: {"kind": "offline"}, {"kind": "http", "base_url", "model"}, {"kind": "tiny"},
    {"kind": "local", "path"} (smollm2, a .gguf file or a checkpoint folder); each may say
    `context_tokens` (`--context-tokens`) and `max_tokens` (`--max-answer-tokens`).
    `call_timeout`: `--call-timeout` (None: the client's own limits); `honours` and `probe`:
    what `--structured-output`, `--tools/--no-tools` and `--probe` say of a server.
    """

    kind = source.get("kind")
    if kind == "offline":
        return None
    from kimmy_swarm.cli.options import model_client, stored_base_url

    limits = {
        "context_tokens": source.get("context_tokens"),
        "max_tokens": source.get("max_tokens"),
        "call_timeout": call_timeout,
        "honours": honours,
        "probe": probe,
    }
    if kind == "http":
        url = stored_base_url(source.get("base_url"))
        return model_client(url, source.get("model"), api_key, required=True, **limits)
    local = "tiny" if kind == "tiny" else source["path"]
    return model_client(None, None, None, required=True, local=local, **limits)


def _source(
    base_url: str | None,
    model: str | None,
    local: str | None,
    tiny: bool,
    context_tokens: int | None = None,
    max_tokens: int | None = None,
) -> dict[str, Any]:
    import os

    from kimmy_swarm.cli.options import fail, say_unused_model_flags

    given = sum([bool(base_url or model), local is not None, tiny])
    if given > 1:
        raise fail("give one model: --base-url/--model, --local MODEL or --tiny")
    sizes = {"context_tokens": context_tokens, "max_tokens": max_tokens}
    limits = {k: v for k, v in sizes.items() if v is not None}
    if tiny:
        return {"kind": "tiny", **limits}
    if local is not None:
        return {"kind": "local", "path": local, **limits}
    if base_url or model or os.environ.get("KIMMY_BASE_URL"):
        return {"kind": "http", "base_url": base_url, "model": model, **limits}
    say_unused_model_flags({"--context-tokens": context_tokens, "--max-answer-tokens": max_tokens})
    return {"kind": "offline"}


def _endpoint_of(source: dict[str, Any]) -> ModelEndpoint:
    """How the run reached its model, stored with it (`tiny` is the local source `tiny`)."""
    from kimmy_swarm.swarm.llm.endpoint import ModelEndpoint

    kind = source["kind"]
    limits = {
        "context_tokens": source.get("context_tokens"),
        "max_tokens": source.get("max_tokens"),
    }
    if kind == "http":
        return ModelEndpoint(
            kind="http", base_url=source["base_url"], model=source["model"], **limits
        )
    if kind in ("tiny", "local"):
        local = "tiny" if kind == "tiny" else source["path"]
        return ModelEndpoint(kind="local", local=local, **limits)
    return ModelEndpoint()


def _source_of(endpoint: ModelEndpoint) -> dict[str, Any]:
    """The model source `open_model` opens for a stored endpoint (a model object given from
    Python is not stored: such a run goes on offline)."""
    sizes = {"context_tokens": endpoint.context_tokens, "max_tokens": endpoint.max_tokens}
    context = {k: v for k, v in sizes.items() if v is not None}
    if endpoint.kind == "http":
        return {"kind": "http", "base_url": endpoint.base_url, "model": endpoint.model, **context}
    if endpoint.kind == "local" and endpoint.local == "tiny":
        return {"kind": "tiny", **context}
    if endpoint.kind == "local" and endpoint.local is not None:
        return {"kind": "local", "path": endpoint.local, **context}
    return {"kind": "offline"}


def _say(text: str, json_lines: bool) -> None:
    print(text, file=sys.stderr if json_lines else sys.stdout)


def print_solve(outcome: SolveOutcome, json_lines: bool, *, stored: bool) -> None:
    """The closing lines of a `kimmy swarm` run: the sub-agents as `kimmy show` counts them
    (the orchestrator included) and the run's wall time (`RunResult.wall_s`)."""
    from kimmy_swarm.cli.summaries import solve_notes

    _say(
        f"swarm: {outcome.subagents + 1} sub-agents ({outcome.subagents} + the orchestrator) "
        f"in {outcome.turns} orchestrator turns, {len(outcome.agents)} created at run time, "
        f"{outcome.duration_s:.2f} s wall time (status {outcome.status})",
        json_lines,
    )
    for note in solve_notes(outcome):
        _say(f"  {note}", json_lines)
    for name, prompt in list(outcome.agents.items())[:8]:
        _say(f"  created {name}: {' '.join(prompt.split())[:100]}", json_lines)
    for problem in outcome.problems[:5]:
        _say(f"  problem: {problem}", json_lines)
    for name, path in outcome.paths.items():
        _say(f"  {name:<15} {path}", json_lines)
    where = f": kimmy show {outcome.run_id}" if stored else " (not stored)"
    _say(f"  run {outcome.run_id}{where}", json_lines)


def run_with_progress(
    work: Any, model: Any, json_lines: bool, stored: bool, *, workflow: str
) -> None:
    """Run `work(sinks)` (`kimmy.command_work.run_work`; `workflow` names its spans), print,
    set the exit."""
    from kimmy_swarm.cli.command_work import run_work

    outcome = run_work(work, model, json_lines, workflow=workflow)
    print_solve(outcome, json_lines, stored=stored)
    if outcome.status != "completed":
        raise typer.Exit(1)


@app.command("swarm")
def swarm_cmd(
    goal: Annotated[str, typer.Argument(help="What the swarm should do, in words.")],
    corpus: Annotated[
        Path | None,
        typer.Option("--corpus", help="Folder of .md/.txt/.pdf, or a .bib/.jsonl/.json file."),
    ] = None,
    data: Annotated[
        list[str] | None,
        typer.Option("--data", help="A CSV/Parquet file or bundled dataset (repeatable)."),
    ] = None,
    out: OutDir = Path("swarm-out"),
    max_subagents: MaxSubagents = 1000,
    max_concurrency: MaxConcurrency = 64,
    max_turns: Annotated[
        int, typer.Option("--max-turns", callback=at_least(1), help="Most orchestrator turns.")
    ] = 50,
    year: Annotated[
        int | None, typer.Option("--year", help="Year for corpus records that give none.")
    ] = None,
    base_url: BaseUrl = None,
    model: ModelName = None,
    api_key: ApiKey = None,
    call_timeout: CallTimeout = None,
    context_tokens: ContextTokens = None,
    max_tokens: MaxTokens = None,
    structured_output: StructuredOutput = None,
    tools: NativeTools = None,
    probe: Probe = False,  # opt-in here: a swarm run never probed before the flag existed
    local: Local = None,
    tiny: Annotated[
        bool, typer.Option("--tiny", help="An in-process tiny random model (wiring checks).")
    ] = False,
    runs_dir: RunsDir = DEFAULT_RUNS_DIR,
    store: Annotated[bool, typer.Option(help="Store the run durably (resumable).")] = True,
    mcp_config: McpConfigFile = None,
    approve_tools: ApproveTools = None,
    approve_spawns_over: ApproveSpawnsOver = None,
    approval_timeout: ApprovalTimeout = None,
    on_approval_timeout: OnApprovalTimeout = OnTimeout.deny,
    stream: Stream = False,
    json_lines: Json = False,
) -> None:
    """A goal in words: the orchestrator creates sub-agents, runs them in parallel, answers."""
    from kimmy_swarm.agents.orchestrator import SolveConfig, run_solve
    from kimmy_swarm.cli.out_dir import check_out, hold_out

    source = _source(base_url, model, local, tiny, context_tokens, max_tokens)
    config = SolveConfig(
        goal=goal, out=out, corpus=corpus, datasets=tuple(data or ()),
        runs_dir=runs_dir if store else None, max_subagents=max_subagents,
        max_concurrency=max_concurrency, max_turns=max_turns,
        defaults={"year": year} if year is not None else None, mcp=mcp_config,
        approvals=approval_policy(
            approve_tools, approve_spawns_over, approval_timeout, on_approval_timeout
        ),
        stream=stream,
    )  # fmt: skip
    if source["kind"] == "offline" and config.corpus is None and not config.datasets:
        from kimmy_swarm.agents.orchestrator import offline_rules
        from kimmy_swarm.agents.pipeline import RunResources

        offline_rules(config.goal, RunResources())  # one clear line, nothing loaded
    check_out(out)
    honours = {"structured_output": structured_output, "tools": tools}
    client = open_model(source, api_key, call_timeout, honours=honours, probe=probe)
    if source["kind"] == "http" and client is not None:
        from kimmy_swarm.swarm.llm import redact_url

        # stored with the run: credentials in the URL masked (the client keeps the real one)
        source = {**source, "base_url": redact_url(client.base_url), "model": client.name}
    config = SolveConfig(**{**vars(config), "model": client})
    with hold_out(out):
        run_with_progress(
            lambda sinks: run_solve(config, sinks=sinks, endpoint=_endpoint_of(source)),
            client,
            json_lines,
            store,
            workflow="kimmy swarm",
        )


def resume_swarm(run_id: str, runs_dir: Path, settings: dict[str, Any], json_lines: bool,
                 api_key: str | None, call_timeout: float | None = None,
                 mcp_config: Path | None = None, out: Path | None = None,
                 local: str | None = None) -> None:  # fmt: skip
    """`kimmy resume` of a `kimmy swarm` run: the same model (or `local`, given again), the
    conversation restored (its files written into `out` when given, else the run's own
    folder)."""
    from kimmy_swarm.agents.orchestrator import SolveSettings, resume_solve
    from kimmy_swarm.agents.pipeline_record import parse_record
    from kimmy_swarm.swarm.llm.endpoint import ModelEndpoint

    record = parse_record(settings, SolveSettings)  # None: stored by an earlier version
    source = _source_of(record.endpoint if record else ModelEndpoint())
    if local is not None:
        sizes = (source.get("context_tokens"), source.get("max_tokens"))
        source = _source(None, None, local, False, *sizes)
    client = open_model(source, api_key, call_timeout)
    run_with_progress(
        lambda sinks: resume_solve(
            run_id, runs_dir=runs_dir, model=client, sinks=sinks, mcp=mcp_config, out=out
        ),
        client,
        json_lines,
        True,
        workflow="kimmy resume",
    )
