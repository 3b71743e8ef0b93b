"""`kimmy review`, `kimmy analyze` and `kimmy demo`: the two pipelines on the command line.

Offline by default (the roles' procedures); with `--base-url` / `--model` or
`KIMMY_BASE_URL` the same pipelines run the model policy against that server. The
commands are registered on `swarm.cli.app`; heavy libraries load only when one runs.
Exit codes as for `kimmy run`: 0 everything finished, 1 partial (the files say what is
missing), 2 bad input.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

Out = Annotated[Path, typer.Option("--out", help="Output folder (created).", file_okay=False)]
BaseUrl = Annotated[
    str | None,
    typer.Option("--base-url", help="OpenAI-compatible API root [env KIMMY_BASE_URL]."),
]
ModelName = Annotated[
    str | None, typer.Option("--model", help="Model id; implies model mode [env KIMMY_MODEL].")
]
ApiKey = Annotated[str | None, typer.Option("--api-key", help="API key [env KIMMY_API_KEY].")]
Json = Annotated[bool, typer.Option("--json", help="Events as JSON lines on stdout.")]
RunsDir = Annotated[
    Path,
    typer.Option(
        "--runs-dir",
        envvar="KIMMY_RUNS_DIR",
        help="Where the run is stored (SQLite; `kimmy show` reads it).",
        file_okay=False,
    ),
]
Store = Annotated[bool, typer.Option(help="Store the run (events, results) durably.")]
#: Where pipeline runs are stored, as for `kimmy run`.
DEFAULT_RUNS_DIR = Path(".kimmy/runs")


def _positive_int(value: int | None) -> int | None:
    if value is not None and value < 1:
        raise typer.BadParameter(f"must be an integer ≥ 1, got {value}")
    return value


def model_from_options(
    base_url: str | None, model: str | None, api_key: str | None, pool: int = 64
) -> Any:
    """The model client when model mode is asked for (flags or KIMMY_BASE_URL), else None."""
    if not (base_url or model or os.environ.get("KIMMY_BASE_URL")):
        return None
    from swarm.llm import OpenAIChat

    client = OpenAIChat.from_env(
        base_url=base_url, model=model, api_key=api_key, max_connections=pool
    )
    asyncio.run(client.check())  # one clear line when the server is unreachable
    return client


def _quiet_readers() -> None:
    """pypdf and bibtexparser log each malformed file; the summary lists them once instead."""
    import logging

    for name in ("pypdf", "bibtexparser"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


def _progress(json_lines: bool) -> Any:
    from swarm.progress import make_progress

    return make_progress(json=json_lines)


def _run_pipeline(run: Any, config: Any, client: Any, show: Any, json_lines: bool) -> None:
    """Run a pipeline with the progress view, close the model, print the summary; exit 1
    when anything is missing from the result."""
    try:
        with _progress(json_lines) as sink:
            outcome = run(config, sinks=[sink])
    finally:
        if client is not None:
            asyncio.run(client.aclose())
    show(outcome, json_lines, stored=config.runs_dir is not None)
    if outcome.status != "completed" or outcome.problems:
        raise typer.Exit(1)


def _say_run(outcome: Any, json_lines: bool, stored: bool) -> None:
    where = f": kimmy show {outcome.run_id}" if stored else " (not stored)"
    _say(f"  run {outcome.run_id} (status {outcome.status}){where}", json_lines)


def _say(text: str, json_lines: bool) -> None:
    print(text, file=sys.stderr if json_lines else sys.stdout)


def review(
    corpus: Annotated[
        Path, typer.Argument(help="Folder of .md/.txt/.pdf, or a .bib/.jsonl/.json file.")
    ],
    topic: Annotated[str, typer.Option("--topic", help="What the review is about.")] = "",
    out: Out = Path("review"),
    max_papers: Annotated[
        int, typer.Option("--max-papers", callback=_positive_int, help="Most papers reviewed.")
    ] = 200,
    themes: Annotated[
        int | None, typer.Option("--themes", callback=_positive_int, help="Number of themes.")
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
    runs_dir: RunsDir = DEFAULT_RUNS_DIR,
    store: Store = True,
    json_lines: Json = False,
) -> None:
    """Literature review of a corpus: review.md, references.bib, report.html, claims.jsonl."""
    _quiet_readers()
    from agents.review import ReviewConfig, run_review

    client = model_from_options(base_url, model, api_key)
    config = ReviewConfig(
        corpus=corpus,
        topic=topic,
        out=out,
        model=client,
        runs_dir=runs_dir if store else None,
        max_papers=max_papers,
        themes=themes,
        researcher=researcher,
        defaults={"year": year} if year is not None else None,
    )
    _run_pipeline(run_review, config, client, print_review, json_lines)


def print_review(outcome: Any, json_lines: bool = False, *, stored: bool = True) -> None:
    """The summary lines of a review run."""
    files = outcome.files
    _say(
        f"review: {outcome.documents} documents ({len(outcome.skipped)} skipped), "
        f"{outcome.relevant} relevant, {outcome.themes} themes, {outcome.subagents} sub-agents "
        f"({outcome.peak_researchers} researchers at peak), {outcome.duration_s:.1f} s",
        json_lines,
    )
    _say(
        f"fact-check: {files.supported}/{files.claims} claims supported "
        f"({100 * outcome.pass_rate:.1f}%), {files.flagged} flagged",
        json_lines,
    )
    for skipped in outcome.skipped[:5]:
        _say(f"  skipped {skipped.source}: {skipped.reason}", json_lines)
    for problem in outcome.problems[:5]:
        _say(f"  problem: {problem}", json_lines)
    for name, path in files.paths.items():
        _say(f"  {name:<15} {path}", json_lines)
    _say_run(outcome, json_lines, stored)


def analyze(
    datasets: Annotated[
        list[str], typer.Argument(help="CSV/Parquet paths or bundled names (statsmodels:longley).")
    ],
    question: Annotated[
        list[str] | None, typer.Option("--question", help="A question (repeatable).")
    ] = None,
    out: Out = Path("analysis"),
    base_url: BaseUrl = None,
    model: ModelName = None,
    api_key: ApiKey = None,
    runs_dir: RunsDir = DEFAULT_RUNS_DIR,
    store: Store = True,
    json_lines: Json = False,
) -> None:
    """Batch data analysis: one analyst per (dataset, question), all in parallel."""
    from agents.analysis import AnalysisConfig, run_analysis

    client = model_from_options(base_url, model, api_key)
    config = AnalysisConfig(
        datasets=list(datasets),
        out=out,
        questions=list(question or []),
        model=client,
        runs_dir=runs_dir if store else None,
    )
    _run_pipeline(run_analysis, config, client, print_analysis, json_lines)


def print_analysis(outcome: Any, json_lines: bool = False, *, stored: bool = True) -> None:
    """The summary lines of an analysis run."""
    _say(
        f"analysis: {outcome.analyses} analyses ({outcome.peak_analysts} in flight at peak), "
        f"{outcome.duration_s:.1f} s",
        json_lines,
    )
    _say(
        f"fact-check: {outcome.verified}/{outcome.findings} numbers verified by recomputation "
        f"({100 * outcome.pass_rate:.1f}%), {outcome.mismatched} mismatched, "
        f"{outcome.unverifiable} unverifiable",
        json_lines,
    )
    for problem in outcome.problems[:8]:
        _say(f"  problem: {problem}", json_lines)
    for name, path in outcome.paths.items():
        _say(f"  {name:<15} {path}", json_lines)
    _say_run(outcome, json_lines, stored)


def demo(
    out: Out = Path("kimmy-demo"),
    runs_dir: RunsDir = DEFAULT_RUNS_DIR,
    store: Store = True,
    json_lines: Json = False,
) -> None:
    """The main job, offline: batch analysis of bundled datasets + a literature review of the
    documentation installed with Python and its packages."""
    from agents.demo import run_demo

    run_demo(out, json_lines=json_lines, runs_dir=runs_dir if store else None)


def register(app: typer.Typer) -> None:
    """Add the pipeline commands to the `kimmy` app."""
    app.command("review")(review)
    app.command("analyze")(analyze)
    app.command("demo")(demo)


__all__ = [
    "analyze",
    "demo",
    "model_from_options",
    "print_analysis",
    "print_review",
    "register",
    "review",
]
