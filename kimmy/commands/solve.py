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
    Json,
    Local,
    McpConfigFile,
    ModelName,
    OnApprovalTimeout,
    OnTimeout,
    RunsDir,
    Stream,
    approval_policy,
    at_least,
    command_group,
)

if TYPE_CHECKING:
    from kimmy_swarm.agents.orchestrator import SolveOutcome
    from kimmy_swarm.swarm.llm.endpoint import ModelEndpoint

app = command_group()


def open_model(
    source: dict[str, Any], api_key: str | None = None, call_timeout: float | None = None
) -> Any:
    """The model a source names (started: a local one runs in this process), or None.

    Sources: {"kind": "offline"}, {"kind": "http", "base_url", "model"}, {"kind": "tiny"},
    {"kind": "local", "path"} (smollm2, a .gguf file or a checkpoint folder).
    `call_timeout`: `--call-timeout` (None: the client's own limits).
    """

    kind = source.get("kind")
    if kind == "offline":
        return None
    from kimmy_swarm.cli.options import model_client, stored_base_url

    if kind == "http":
        url = stored_base_url(source.get("base_url"))
        return model_client(
            url, source.get("model"), api_key, required=True, call_timeout=call_timeout
        )
    local = "tiny" if kind == "tiny" else source["path"]
    return model_client(None, None, None, required=True, local=local, call_timeout=call_timeout)


def _source(
    base_url: str | None, model: str | None, local: str | None, tiny: bool
) -> dict[str, Any]:
    import os

    from kimmy_swarm.cli.options import fail

    given = sum([bool(base_url or model), local is not None, tiny])
    if given > 1:
        raise fail("give one model: --base-url/--model, --local MODEL or --tiny")
    if tiny:
        return {"kind": "tiny"}
    if local is not None:
        return {"kind": "local", "path": local}
    if base_url or model or os.environ.get("KIMMY_BASE_URL"):
        return {"kind": "http", "base_url": base_url, "model": model}
    return {"kind": "offline"}


def _endpoint_of(source: dict[str, Any]) -> ModelEndpoint:
    """How the run reached its model, stored with it (`tiny` is the local source `tiny`)."""
    from kimmy_swarm.swarm.llm.endpoint import ModelEndpoint

    kind = source["kind"]
    if kind == "http":
        return ModelEndpoint(kind="http", base_url=source["base_url"], model=source["model"])
    if kind in ("tiny", "local"):
        return ModelEndpoint(kind="local", local="tiny" if kind == "tiny" else source["path"])
    return ModelEndpoint()


def _source_of(endpoint: ModelEndpoint) -> dict[str, Any]:
    """The model source `open_model` opens for a stored endpoint (a model object given from
    Python is not stored: such a run goes on offline)."""
    if endpoint.kind == "http":
        return {"kind": "http", "base_url": endpoint.base_url, "model": endpoint.model}
    if endpoint.kind == "local" and endpoint.local == "tiny":
        return {"kind": "tiny"}
    if endpoint.kind == "local" and endpoint.local is not None:
        return {"kind": "local", "path": endpoint.local}
    return {"kind": "offline"}


def _say(text: str, json_lines: bool) -> None:
    print(text, file=sys.stderr if json_lines else sys.stdout)


def print_solve(outcome: SolveOutcome, json_lines: bool, *, stored: bool) -> None:
    """The closing lines of a `kimmy swarm` run."""
    _say(
        f"swarm: {outcome.subagents} sub-agents in {outcome.turns} orchestrator turns, "
        f"{len(outcome.agents)} created at run time, {outcome.duration_s:.1f} s "
        f"(status {outcome.status})",
        json_lines,
    )
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
    out: Annotated[
        Path, typer.Option("--out", help="Output folder (answer.md).", file_okay=False)
    ] = Path("swarm-out"),
    max_subagents: Annotated[
        int, typer.Option("--max-subagents", callback=at_least(1), help="Most sub-agents.")
    ] = 1000,
    max_concurrency: Annotated[
        int,
        typer.Option("--max-concurrency", callback=at_least(1), help="Most sub-agents in flight."),
    ] = 64,
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

    source = _source(base_url, model, local, tiny)
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
    client = open_model(source, api_key, call_timeout)
    if source["kind"] == "http" and client is not None:
        from kimmy_swarm.swarm.llm import redact_url

        # stored with the run: credentials in the URL masked (the client keeps the real one)
        source = {"kind": "http", "base_url": redact_url(client.base_url), "model": client.name}
    config = SolveConfig(**{**vars(config), "model": client})
    run_with_progress(
        lambda sinks: run_solve(config, sinks=sinks, endpoint=_endpoint_of(source)),
        client,
        json_lines,
        store,
        workflow="kimmy swarm",
    )


def resume_swarm(run_id: str, runs_dir: Path, settings: dict[str, Any], json_lines: bool,
                 api_key: str | None, call_timeout: float | None = None,
                 mcp_config: Path | None = None) -> None:  # fmt: skip
    """`kimmy resume` of a `kimmy swarm` run: the same model, the conversation restored."""
    from kimmy_swarm.agents.orchestrator import SolveSettings, resume_solve
    from kimmy_swarm.agents.pipeline_record import parse_record
    from kimmy_swarm.swarm.llm.endpoint import ModelEndpoint

    record = parse_record(settings, SolveSettings)  # None: stored by an earlier version
    client = open_model(_source_of(record.endpoint if record else ModelEndpoint()), api_key,
                        call_timeout)  # fmt: skip
    run_with_progress(
        lambda sinks: resume_solve(
            run_id, runs_dir=runs_dir, model=client, sinks=sinks, mcp=mcp_config
        ),
        client,
        json_lines,
        True,
        workflow="kimmy resume",
    )
