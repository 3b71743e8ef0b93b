"""The swarm against one agent on the wide-task suite, with a real model on our engine.

    python benchmarks/bench_widesearch.py --model qwen2.5-coder-1.5b
           [--goals dropout_citations,speech,...] [--documents 60] [--token-cap 400000]
           [--out benchmarks/results/widesearch.md]

For each goal of `agents.widesearch.WIDE_SUITE` (its words, as a person would type them):

- swarm: `run_solve` (`kimmy swarm GOAL --local MODEL`): the orchestrator model plans,
  creates sub-agents and fans them out; its answer is graded against the ground truth;
- single: one agent with the same model, the same tools (`search`, `read_document`,
  `read_metadata`) and the same token cap (`agents.orchestrator.single_agent`), told the
  corpus's fields and how to search and read as the orchestrator is; its first turn calls
  `search` and only it (a 1.5B otherwise answers from memory at once, or reads ids it
  invents).

Reported per goal and as means: item-F1, precision, recall, cell accuracy, wall-clock,
tokens, critical steps (PARL's, from the swarm's trajectory; the single agent's model
calls) and sub-agents created. The model is loaded once (`LocalModel.load`), served by our
engine (continuous batching) in this process. `--documents N` runs every goal over the
first N papers of the corpus (written to a temporary file; the ground truth is computed
from the same N), which keeps a CPU run short; the page says so.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks._papers import papers_file  # noqa: E402
from benchmarks._results import add_out_option, publish  # noqa: E402
from kimmy_swarm.agents.orchestrator import SolveConfig, run_solve  # noqa: E402
from kimmy_swarm.agents.orchestrator.single_agent import run_single  # noqa: E402
from kimmy_swarm.agents.widesearch import (  # noqa: E402
    ICLR_DEFAULTS,
    WIDE_SUITE,
    grade_answer,
    load_papers,
)
from kimmy_swarm.rewards import critical_steps, load_trajectory  # noqa: E402
from kimmy_swarm.swarm.llm import OpenAIChat  # noqa: E402


def swarm_run(goal: Any, corpus: Path, model: Any, tmp: Path, cap: int | None) -> dict[str, Any]:
    runs = tmp / "runs"
    config = SolveConfig(
        goal=goal.words, out=tmp / "out" / goal.name, corpus=corpus, model=model,
        runs_dir=runs, defaults=ICLR_DEFAULTS, max_total_tokens=cap, max_turns=12,
    )  # fmt: skip
    t0 = time.perf_counter()
    outcome = run_solve(config)
    wall = time.perf_counter() - t0
    traj = load_trajectory(outcome.run_id, runs)
    tokens = sum(c.usage.total_tokens for e in traj.episodes.values() for c in e.model_calls)
    return {
        "answer": outcome.answer, "wall_s": wall, "tokens": tokens, "status": outcome.status,
        "steps": critical_steps(traj).steps, "subagents": outcome.subagents,
        "created": len(outcome.agents), "turns": outcome.turns,
    }  # fmt: skip


def single_run(goal: Any, corpus: Path, model: Any, tmp: Path, cap: int | None) -> dict[str, Any]:
    out = run_single(goal.words, goal.task, corpus, model, token_cap=cap, runs_dir=tmp / "single")
    return {"answer": out.answer, "wall_s": out.wall_s, "tokens": out.tokens, "steps": out.steps,
            "status": out.status, "subagents": 0, "created": 0, "error": out.error}  # fmt: skip


def _graded(goal: Any, run: dict[str, Any], papers: list[Any]) -> dict[str, Any]:
    score = grade_answer(goal.task, run["answer"], goal.task.ground_truth(papers))
    return {**run, "f1": score.f1, "precision": score.precision, "recall": score.recall,
            "cells": score.cell_accuracy, "truth": score.truth_rows}  # fmt: skip


def _row(name: str, s: dict[str, Any], w: dict[str, Any]) -> str:
    return (
        f"| {name} | {s['truth']} | {w['f1']:.2f} | {s['f1']:.2f} | {w['precision']:.2f} / "
        f"{w['recall']:.2f} | {s['precision']:.2f} / {s['recall']:.2f} | {w['cells']:.2f} | "
        f"{s['cells']:.2f} | {w['wall_s']:.0f} | {s['wall_s']:.0f} | {w['tokens']:,} | "
        f"{s['tokens']:,} | {w['steps']} | {s['steps']} | {w['created']} / {w['subagents']} |"
    )


def page(
    args: argparse.Namespace, rows: list[tuple[str, dict[str, Any], dict[str, Any]]], of: int
) -> str:
    def mean(key: str, which: int) -> float:
        return statistics.fmean(r[which][key] for r in rows) if rows else 0.0

    # single / swarm: above 1 when the swarm is faster
    speed = mean("wall_s", 2) / mean("wall_s", 1) if rows and mean("wall_s", 1) else 0.0
    lines = [
        f"# Wide-task suite: swarm vs one agent, {args.model} "
        "(`python benchmarks/bench_widesearch.py`)",
        "",
        f"{len(rows)} goals of `WIDE_SUITE` in words"
        + (
            f" (the run was asked for {of}; the page is written after each)"
            if of > len(rows)
            else ""
        )
        + "; corpus: "
        + (
            f"the first {args.documents} ICLR 2017 papers"
            if args.documents
            else "the 489 ICLR 2017 papers"
        )
        + f"; model `{args.model}` on our engine (llama.cpp kernels), greedy; token cap "
        f"{args.token_cap or 'none'} per run; a model call's limit {args.call_timeout:.0f} s. "
        f"One run, Python {platform.python_version()}, "
        f"{dt.date.today().isoformat()}, {platform.machine()} with {args.cpus} CPU cores.",
        *([f"\n{args.note}"] if args.note else []),
        "",
        "| goal | truth rows | F1 swarm | F1 single | P / R swarm | P / R single | cells swarm "
        "| cells single | wall swarm (s) | wall single (s) | tokens swarm | tokens single "
        "| steps swarm | steps single | created / sub-agents |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        *(_row(name, s, w) for name, w, s in rows),
        "",
        f"Means: item-F1 swarm {mean('f1', 1):.3f}, single {mean('f1', 2):.3f} "
        f"(difference {mean('f1', 1) - mean('f1', 2):+.3f}); wall-clock swarm "
        f"{mean('wall_s', 1):.0f} s, single {mean('wall_s', 2):.0f} s "
        f"(single / swarm {speed:.2f}×); tokens swarm {mean('tokens', 1):,.0f}, single "
        f"{mean('tokens', 2):,.0f}.",
        "",
        "Goals (issue 33): mean item-F1 ≥ 0.8 for the swarm, ≥ +0.15 over the single agent, "
        "≥ 3× less wall-clock.",
        "",
        *(
            f"- {name}, swarm ({w['status']}): {' '.join(str(w['answer']).split())[:300]}"
            for name, w, _ in rows
            if w["status"] != "completed"
        ),
        *(f"- {name}, single agent: {s['error']}" for name, _, s in rows if s.get("error")),
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    import os

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--goals", default="", help="comma-separated suite names (all)")
    parser.add_argument("--documents", type=int, default=0, help="0: the whole corpus")
    parser.add_argument("--token-cap", type=int, default=400_000)
    parser.add_argument("--skip-single", action="store_true", help="the swarm only")
    parser.add_argument(
        "--call-timeout", type=float, default=3600.0,
        help="one model call's limit in seconds, the same for both (a measurement, not a "
        "test of timeouts: the adaptive limit, learned afresh per goal, cut the single "
        "agent's first call on a busy machine)",
    )  # fmt: skip
    parser.add_argument(
        "--runs-dir", type=Path, default=None,
        help="keep the runs here (kimmy show reads them; default: removed)",
    )  # fmt: skip
    parser.add_argument(
        "--note", default="", help="a line the page carries under its header (e.g. what else ran)"
    )
    add_out_option(parser, "widesearch.md")
    args = parser.parse_args()
    args.cpus = os.cpu_count()
    names = [n for n in args.goals.split(",") if n] or list(WIDE_SUITE)
    unknown = [n for n in names if n not in WIDE_SUITE]
    if unknown:
        parser.error(f"unknown goals {unknown}; the suite has: {', '.join(WIDE_SUITE)}")
    from kimmy_swarm.swarm.llm.local import LocalModel

    rows: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
    with tempfile.TemporaryDirectory(prefix="kimmy-bench-wide-") as tmp_name:
        tmp = args.runs_dir.resolve() if args.runs_dir else Path(tmp_name)
        tmp.mkdir(parents=True, exist_ok=True)
        corpus = papers_file(tmp, args.documents)
        papers = load_papers(corpus)
        local = LocalModel.load(args.model, max_connections=128)
        asyncio.run(local.start())
        try:
            for name in names:
                # A client per goal: each run has its own event loop.
                model = OpenAIChat(local.base_url, local.name, max_connections=128,
                                   context_length=local.context_length,
                                   timeout_s=args.call_timeout)  # fmt: skip
                goal = WIDE_SUITE[name]
                if not goal.task.ground_truth(papers):
                    print(f"{name}: no paper of this corpus meets it; skipped", flush=True)
                    continue
                swarm = swarm_run(goal, corpus, model, tmp / name, args.token_cap)
                w = _graded(goal, swarm, papers)
                if args.skip_single:
                    s = {**w, "f1": 0.0, "precision": 0.0, "recall": 0.0, "cells": 0.0,
                         "wall_s": 0.0, "tokens": 0, "steps": 0}  # fmt: skip
                else:
                    model = OpenAIChat(local.base_url, local.name, max_connections=8,
                                       context_length=local.context_length,
                                       timeout_s=args.call_timeout)  # fmt: skip
                    single = single_run(goal, corpus, model, tmp / name, args.token_cap)
                    s = _graded(goal, single, papers)
                rows.append((name, w, s))
                print(f"{name}: swarm F1 {w['f1']:.2f} in {w['wall_s']:.0f} s ({w['status']}); "
                      f"single F1 {s['f1']:.2f} in {s['wall_s']:.0f} s", flush=True)  # fmt: skip
                if args.out is not None:  # the goals so far: a stopped run keeps its page
                    publish(page(args, rows, of=len(names)), args.out, echo=False)
        finally:
            asyncio.run(local.aclose())
    publish(page(args, rows, of=len(names)), args.out)


if __name__ == "__main__":
    main()
