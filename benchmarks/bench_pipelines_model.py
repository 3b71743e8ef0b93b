"""The pipelines on a real model: how many sub-agents' outputs the model made, not the fallback.

    python benchmarks/bench_pipelines_model.py --model qwen2.5-coder-1.5b
           [--papers 10] [--topic "generative adversarial networks"]
           [--datasets statsmodels:fair,statsmodels:spector] [--no-briefs-too]
           [--out benchmarks/results/pipelines_model.md]

Runs `kimmy review` (the ICLR 2017 corpus, `--papers` papers on `--topic`) and
`kimmy analyze` (`--datasets`) with the model loaded once in this process (our engine,
`LocalModel`), every check as strict as offline, `fallback` on: a sub-agent whose model
fails its task is done by its role's offline procedure and counted as such. Reported per
pipeline: sub-agents, made by the model / by the fallback, the share, wall-clock, and what
the fact-check says (claims supported; numbers verified). With `--no-briefs-too` each
pipeline runs a second time with `briefs=False` (the model calls the tools itself), the
baseline of the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks._results import add_out_option, publish  # noqa: E402
from kimmy_swarm.agents.analysis import AnalysisConfig, run_analysis  # noqa: E402
from kimmy_swarm.agents.review import ReviewConfig, run_review  # noqa: E402
from kimmy_swarm.agents.widesearch import ICLR_DEFAULTS  # noqa: E402
from kimmy_swarm.swarm.llm import OpenAIChat  # noqa: E402

ICLR = ROOT.parent / "shared" / "data" / "papers" / "iclr2017_citations_in_2018.json"


def _row(pipeline: str, briefs: bool, out: Any, wall_s: float, checked: str) -> dict[str, Any]:
    """One pipeline run's row; the share is the model's of all the run's sub-agents (one
    that failed outright counts against it too)."""
    made, fell = out.made_by.get("model", 0), out.made_by.get("offline_fallback", 0)
    return {"pipeline": pipeline, "briefs": briefs, "subagents": out.subagents, "model": made,
            "fallback": fell, "share": made / out.subagents if out.subagents else 0.0,
            "wall_s": wall_s, "checked": checked, "status": out.status,
            "fell": sorted(out.fallbacks), "problems": out.problems}  # fmt: skip


def review(args: argparse.Namespace, model: Any, tmp: Path, briefs: bool) -> dict[str, Any]:
    config = ReviewConfig(
        corpus=ICLR, topic=args.topic, out=tmp / f"review-{briefs}", model=model,
        max_papers=args.papers, defaults=ICLR_DEFAULTS, briefs=briefs,
    )  # fmt: skip
    t0 = time.perf_counter()
    out = run_review(config)
    checked = f"{out.files.supported}/{out.files.claims} claims supported"
    return _row("review", briefs, out, time.perf_counter() - t0, checked)


def analysis(args: argparse.Namespace, model: Any, tmp: Path, briefs: bool) -> dict[str, Any]:
    config = AnalysisConfig(
        args.datasets.split(","), out=tmp / f"analysis-{briefs}", model=model, briefs=briefs
    )
    t0 = time.perf_counter()
    out = run_analysis(config)
    checked = f"{out.verified}/{out.findings} numbers verified"
    return _row("analyze", briefs, out, time.perf_counter() - t0, checked)


def page(args: argparse.Namespace, rows: list[dict[str, Any]]) -> str:
    lines = [
        f"# The pipelines on {args.model}: outputs made by the model "
        "(`python benchmarks/bench_pipelines_model.py`)",
        "",
        f"`kimmy review` of {args.papers} ICLR 2017 papers on {args.topic!r} and "
        f"`kimmy analyze {' '.join(args.datasets.split(','))}`, model `{args.model}` on our "
        "engine (llama.cpp kernels) in this process, sampled at its default temperature (1), as "
        "`kimmy review --local` does; every check as strict as offline, "
        f"fallback on. One run, Python {platform.python_version()}, "
        f"{dt.date.today().isoformat()}, {platform.machine()} with {os.cpu_count()} CPU cores.",
        "",
        "| pipeline | briefs | sub-agents | made by the model | fell back | share | wall (s) "
        "| fact-check | status | fell back |",
        "|---|---|---:|---:|---:|---:|---:|---|---|---|",
        *(
            f"| {r['pipeline']} | {'yes' if r['briefs'] else 'no'} | {r['subagents']} | "
            f"{r['model']} | {r['fallback']} | {r['share']:.0%} | {r['wall_s']:.0f} | "
            f"{r['checked']} | {r['status']} | {', '.join(r['fell']) or '—'} |"
            for r in rows
        ),
        "",
        "Goal (issue 33): a model-made share of at least 80% for both pipelines. The share is "
        "of all the run's sub-agents: one that failed outright counts against it.",
        "",
        *(f"- {r['pipeline']}: {p}" for r in rows for p in r["problems"][:8]),
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--papers", type=int, default=10)
    parser.add_argument("--topic", default="generative adversarial networks")
    parser.add_argument("--datasets", default="statsmodels:fair,statsmodels:spector")
    parser.add_argument(
        "--no-briefs-too", action="store_true", help="each pipeline again with briefs=False"
    )
    parser.add_argument("--only", choices=("review", "analyze"), default=None)
    add_out_option(parser, "pipelines_model.md")
    args = parser.parse_args()
    from kimmy_swarm.swarm.llm.local import LocalModel

    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="kimmy-bench-pipelines-") as tmp_name:
        tmp = Path(tmp_name)
        local = LocalModel.load(args.model, max_connections=64)
        asyncio.run(local.start())
        try:
            for run in (review, analysis):
                if args.only is not None and run.__name__ != args.only.replace(
                    "analyze", "analysis"
                ):
                    continue
                for briefs in (True, False) if args.no_briefs_too else (True,):
                    # A client per run: each run has its own event loop.
                    model = OpenAIChat(local.base_url, local.name, max_connections=64,
                                       context_length=local.context_length)  # fmt: skip
                    row = run(args, model, tmp, briefs)
                    rows.append(row)
                    print(f"{row['pipeline']} (briefs {briefs}): {row['model']}/"
                          f"{row['subagents']} by the model in {row['wall_s']:.0f} s",
                          flush=True)  # fmt: skip
        finally:
            asyncio.run(local.aclose())
    publish(page(args, rows), args.out)


if __name__ == "__main__":
    main()
