"""`kimmy review`, `kimmy analyze` and `kimmy demo`: the two pipelines on the command line.

Offline by default (the roles' procedures); with `--base-url` / `--model` or
`KIMMY_BASE_URL` the same pipelines run the model policy against that server. A stored run
records its settings and how its model was reached (never the API key; the URL without
credentials): `kimmy resume RUN` continues it (`resume_pipeline_run`). Heavy
libraries load only when one runs. Exit codes as for `kimmy run`: 0 everything finished,
1 partial (the files say what is missing), 2 bad input.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Protocol, TypeVar

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
    from kimmy_swarm.agents.pipeline_record import PipelineRecord
    from kimmy_swarm.swarm import EventSink
    from kimmy_swarm.swarm.llm import LocalModel, ModelEndpoint, OpenAIChat

app = command_group()

Store = Annotated[bool, typer.Option(help="Store the run (events, results) durably.")]
Fallback = Annotated[
    bool,
    typer.Option(
        help="With a model: a sub-agent whose model fails its task (invalid answer after the "
        "repair turn, step limit) falls back to its role's offline procedure, marked in the "
        "outputs. --no-fallback: it fails instead (strict model mode)."
    ),
]

Briefs = Annotated[
    bool,
    typer.Option(
        help="With a model: each sub-agent is given what its task needs, gathered with its "
        "role's tools, and answers under a JSON schema made for that task (what a small "
        "local model needs to pass the checks). --no-briefs: the model calls the tools itself."
    ),
]


class PipelineOutcome(Protocol):
    """What `_run_pipeline` reads of a pipeline's outcome."""

    @property
    def status(self) -> str: ...

    @property
    def problems(self) -> list[str]: ...


OutcomeT = TypeVar("OutcomeT", bound=PipelineOutcome)
_Shown = TypeVar("_Shown", bound=PipelineOutcome, contravariant=True)


class Summary(Protocol[_Shown]):
    """`print_review` / `print_analysis`: the closing lines of a pipeline run."""

    def __call__(self, outcome: _Shown, json_lines: bool = ..., *, stored: bool = ...) -> None: ...


def _quiet_readers() -> None:
    """pypdf and bibtexparser log each malformed file; the summary lists them once instead."""
    import logging

    for name in ("pypdf", "bibtexparser"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


def _client(
    base_url: str | None,
    model: str | None,
    api_key: str | None,
    context_tokens: int | None,
    local: str | None,
    max_tokens: int | None,
    call_timeout: float | None,
    honours: dict[str, bool | None],
    probe: bool,
    json_lines: bool,
    pool: int = 64,
) -> OpenAIChat | LocalModel | None:
    """The model the flags name, probed for what it honours (offline: None); `pool`: its
    connections (the run's concurrency)."""
    from kimmy_swarm.cli.options import model_client

    return model_client(
        base_url, model, api_key, required=False, context_tokens=context_tokens, local=local,
        call_timeout=call_timeout, max_tokens=max_tokens, honours=honours, probe=probe,
        json_lines=json_lines, pool=pool,
    )  # fmt: skip


def _endpoint(
    client: OpenAIChat | LocalModel | None,
    local: str | None,
    context_tokens: int | None,
    max_tokens: int | None,
) -> ModelEndpoint:
    """How the run reached its model, stored with it (no API key; the URL redacted)."""
    from kimmy_swarm.swarm.llm import ModelEndpoint

    if client is None:
        return ModelEndpoint()
    limits = {
        "context_tokens": context_tokens,
        "max_tokens": max_tokens,
        "capabilities": client.capabilities,
    }
    if local is not None:  # its in-process server is gone by `kimmy resume`: start it again
        return ModelEndpoint(kind="local", local=local, **limits)
    return ModelEndpoint(kind="http", base_url=client.base_url, model=client.name, **limits)


def _run_pipeline(
    work: Callable[[Sequence[EventSink]], OutcomeT],
    client: OpenAIChat | LocalModel | None,
    show: Summary[OutcomeT],
    json_lines: bool,
    *,
    stored: bool,
    workflow: str,
) -> None:
    """Run `work(sinks)` (`kimmy.command_work.run_work`; `workflow` names its spans), print
    the summary; exit 1 when anything is missing from the result."""
    from kimmy_swarm.cli.command_work import run_work

    outcome = run_work(work, client, json_lines, workflow=workflow, stored=stored)
    show(outcome, json_lines, stored=stored)
    if outcome.status != "completed" or outcome.problems:
        raise typer.Exit(1)


@app.command("review")
def review(
    corpus: Annotated[
        Path, typer.Argument(help="Folder of .md/.txt/.pdf, or a .bib/.jsonl/.json file.")
    ],
    topic: Annotated[str, typer.Option("--topic", help="What the review is about.")] = "",
    out: OutDir = Path("review"),
    max_papers: Annotated[
        int, typer.Option("--max-papers", callback=at_least(1), help="Most papers reviewed.")
    ] = 200,
    themes: Annotated[
        int | None, typer.Option("--themes", callback=at_least(1), help="Number of themes.")
    ] = None,
    researcher: Annotated[
        str,
        typer.Option(
            "--researcher", help="Role reading each paper: researcher | physics_researcher."
        ),
    ] = "researcher",
    year: Annotated[
        int | None, typer.Option("--year", help="Year for records that give none.")
    ] = None,
    base_url: BaseUrl = None,
    model: ModelName = None,
    api_key: ApiKey = None,
    context_tokens: ContextTokens = None,
    max_tokens: MaxTokens = None,
    call_timeout: CallTimeout = None,
    local: Local = None,
    structured_output: StructuredOutput = None,
    tools: NativeTools = None,
    probe: Probe = True,
    runs_dir: RunsDir = DEFAULT_RUNS_DIR,
    store: Store = True,
    fallback: Fallback = True,
    briefs: Briefs = True,
    mcp_config: McpConfigFile = None,
    approve_tools: ApproveTools = None,
    approve_spawns_over: ApproveSpawnsOver = None,
    approval_timeout: ApprovalTimeout = None,
    on_approval_timeout: OnApprovalTimeout = OnTimeout.deny,
    stream: Stream = False,
    max_concurrency: MaxConcurrency = 64,
    json_lines: Json = False,
) -> None:
    """Literature review of a corpus: review.md, references.bib, report.html, claims.jsonl."""
    _quiet_readers()
    from kimmy_swarm.agents.review import ReviewConfig, run_review
    from kimmy_swarm.cli.out_dir import check_out, hold_out
    from kimmy_swarm.cli.summaries import print_review

    options = {
        "corpus": corpus,
        "topic": topic,
        "out": out,
        "runs_dir": runs_dir if store else None,
        "max_papers": max_papers,
        "themes": themes,
        "researcher": researcher,
        "defaults": {"year": year} if year is not None else None,
        "fallback": fallback,
        "briefs": briefs,
        "mcp": mcp_config,
        "approvals": approval_policy(
            approve_tools, approve_spawns_over, approval_timeout, on_approval_timeout
        ),
        "stream": stream,
        "max_concurrency": max_concurrency,
    }
    ReviewConfig(**options)  # a bad option fails before a model server is asked
    check_out(out)  # and a bad --out
    honours = {"structured_output": structured_output, "tools": tools}
    client = _client(base_url, model, api_key, context_tokens, local, max_tokens, call_timeout,
                     honours, probe, json_lines, pool=max_concurrency)  # fmt: skip
    config = ReviewConfig(**options, model=client)
    endpoint = _endpoint(client, local, context_tokens, max_tokens)
    with hold_out(out):
        _run_pipeline(
            lambda sinks: run_review(config, sinks=sinks, endpoint=endpoint),
            client, print_review, json_lines, stored=store, workflow="kimmy review",
        )  # fmt: skip


@app.command("analyze")
def analyze(
    datasets: Annotated[
        list[str], typer.Argument(help="CSV/Parquet paths or bundled names (statsmodels:longley).")
    ],
    question: Annotated[
        list[str] | None, typer.Option("--question", help="A question (repeatable).")
    ] = None,
    out: OutDir = Path("analysis"),
    base_url: BaseUrl = None,
    model: ModelName = None,
    api_key: ApiKey = None,
    context_tokens: ContextTokens = None,
    max_tokens: MaxTokens = None,
    call_timeout: CallTimeout = None,
    local: Local = None,
    structured_output: StructuredOutput = None,
    tools: NativeTools = None,
    probe: Probe = True,
    runs_dir: RunsDir = DEFAULT_RUNS_DIR,
    store: Store = True,
    fallback: Fallback = True,
    briefs: Briefs = True,
    mcp_config: McpConfigFile = None,
    approve_tools: ApproveTools = None,
    approve_spawns_over: ApproveSpawnsOver = None,
    approval_timeout: ApprovalTimeout = None,
    on_approval_timeout: OnApprovalTimeout = OnTimeout.deny,
    stream: Stream = False,
    max_concurrency: MaxConcurrency = 64,
    json_lines: Json = False,
) -> None:
    """Batch data analysis: one analyst per (dataset, question), all in parallel."""
    from kimmy_swarm.agents.analysis import AnalysisConfig, run_analysis
    from kimmy_swarm.cli.out_dir import check_out, hold_out
    from kimmy_swarm.cli.summaries import print_analysis

    options = {
        "datasets": list(datasets),
        "out": out,
        "questions": list(question or []),
        "runs_dir": runs_dir if store else None,
        "fallback": fallback,
        "briefs": briefs,
        "mcp": mcp_config,
        "approvals": approval_policy(
            approve_tools, approve_spawns_over, approval_timeout, on_approval_timeout
        ),
        "stream": stream,
        "max_concurrency": max_concurrency,
    }
    AnalysisConfig(**options)  # a bad option fails before a model server is asked
    check_out(out)  # and a bad --out
    honours = {"structured_output": structured_output, "tools": tools}
    client = _client(base_url, model, api_key, context_tokens, local, max_tokens, call_timeout,
                     honours, probe, json_lines, pool=max_concurrency)  # fmt: skip
    config = AnalysisConfig(**options, model=client)
    endpoint = _endpoint(client, local, context_tokens, max_tokens)
    with hold_out(out):
        _run_pipeline(
            lambda sinks: run_analysis(config, sinks=sinks, endpoint=endpoint),
            client, print_analysis, json_lines, stored=store, workflow="kimmy analyze",
        )  # fmt: skip


def _resume_client(
    record: PipelineRecord,
    run_id: str,
    base_url: str | None,
    model: str | None,
    api_key: str | None,
    context_tokens: int | None,
    call_timeout: float | None,
    local: str | None = None,
) -> OpenAIChat | LocalModel | None:
    """The model a stored pipeline run called: its endpoint's, or the one the flags name
    (`--local` or `--base-url`); capped and adapted to as the run's was (its capabilities are
    not probed again)."""
    from kimmy_swarm.cli.options import fail, model_client, stored_base_url

    endpoint = record.endpoint
    tokens = context_tokens or endpoint.context_tokens
    stored = {"max_tokens": endpoint.max_tokens, "capabilities": endpoint.capabilities}
    if local is not None:  # given again: this model, in this process
        return model_client(
            None, None, None, required=True, local=local, context_tokens=tokens,
            call_timeout=call_timeout, **stored,
        )  # fmt: skip
    if base_url or model:  # given again: that server (e.g. a URL with credentials)
        return model_client(
            base_url, model or endpoint.model, api_key, required=True, context_tokens=tokens,
            call_timeout=call_timeout, **stored,
        )  # fmt: skip
    if endpoint.kind == "offline":
        return None
    if endpoint.kind == "local":
        return model_client(
            None, None, None, required=True, local=endpoint.local, call_timeout=call_timeout,
            **stored,
        )  # fmt: skip
    if endpoint.kind == "other":
        raise fail(
            f"run {run_id} called a model object that is not stored; "
            "give its server with --base-url (and --model, --api-key)"
        )
    url = stored_base_url(endpoint.base_url)  # one that had credentials needs them again
    return model_client(
        url, endpoint.model, api_key, required=True, context_tokens=tokens,
        call_timeout=call_timeout, **stored,
    )  # fmt: skip


def resume_pipeline_run(
    run_id: str,
    runs_dir: Path,
    settings: dict[str, object],
    json_lines: bool,
    *,
    base_url: str | None = None,
    model: str | None = None,
    api_key: str | None = None,
    context_tokens: int | None = None,
    max_concurrency: int | None = None,
    call_timeout: float | None = None,
    mcp_config: Path | None = None,
    out: Path | None = None,
    local: str | None = None,
) -> None:
    """`kimmy resume` of a `kimmy review` / `kimmy analyze` run: the same roles and model,
    finished subtasks reused, the files written as an unbroken run writes them (into `out`
    when given, else the run's own folder)."""
    from kimmy_swarm.agents.pipelines import pipeline_record

    record = pipeline_record(settings)
    assert record is not None
    changes: dict[str, Any] = {}
    if max_concurrency is not None:
        changes["max_concurrency"] = max_concurrency
    if mcp_config is not None:
        changes["mcp"] = mcp_config
    if out is not None:
        changes["out"] = out
    client = _resume_client(
        record, run_id, base_url, model, api_key, context_tokens, call_timeout, local
    )
    if record.settings.kind == "review":
        _quiet_readers()
        from kimmy_swarm.agents.review import resume_review
        from kimmy_swarm.cli.summaries import print_review

        _run_pipeline(
            lambda sinks: resume_review(
                run_id, runs_dir=runs_dir, model=client, sinks=sinks, **changes
            ),
            client, print_review, json_lines, stored=True, workflow="kimmy resume",
        )  # fmt: skip
        return
    from kimmy_swarm.agents.analysis import resume_analysis
    from kimmy_swarm.cli.summaries import print_analysis

    _run_pipeline(
        lambda sinks: resume_analysis(
            run_id, runs_dir=runs_dir, model=client, sinks=sinks, **changes
        ),
        client, print_analysis, json_lines, stored=True, workflow="kimmy resume",
    )  # fmt: skip


@app.command("demo")
def demo(
    out: OutDir = Path("kimmy-demo"),
    runs_dir: RunsDir = DEFAULT_RUNS_DIR,
    store: Store = True,
    json_lines: Json = False,
) -> None:
    """The main job, offline: batch analysis of bundled datasets + a literature review of the
    documentation installed with Python and its packages."""
    _quiet_readers()
    from kimmy_swarm.agents.demo import run_demo
    from kimmy_swarm.cli.demo_watch import DemoPrinter
    from kimmy_swarm.cli.interrupts import Interrupted, stop_on_signals
    from kimmy_swarm.cli.out_dir import hold_out

    printer = DemoPrinter(json_lines, stored=store)
    # Ctrl-C exits 130, SIGTERM 143; finished work is stored, and the message names what is
    # left of the demo's two runs and how to finish each
    try:
        with hold_out(out), stop_on_signals():
            outcome = run_demo(out, runs_dir=runs_dir if store else None, watcher=printer)
    except Interrupted as exc:
        left = printer.unfinished(out, runs_dir, default_runs_dir=DEFAULT_RUNS_DIR)
        raise Interrupted(exc.signum, left) from None
    printer.step(
        f"demo finished in {outcome.duration_s:.1f} s — open {out / 'review' / 'review.md'} "
        f"and {out / 'analysis' / 'report.html'}"
    )
