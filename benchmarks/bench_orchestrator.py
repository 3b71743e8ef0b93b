"""The orchestrator against one agent working serially, on a wide task, with the same model.

    python benchmarks/bench_orchestrator.py [--task rl_papers] [--subagents 100]
                                            [--ttft 0.3] [--tokens-per-s 40] [--quick]
                                            [--out PATH]

The wide task: for every ICLR 2017 paper of `../shared/data/papers/` that meets a condition,
a table of facts (`agents.widesearch`), graded by item-level F1 against the ground truth
computed from the data. The model: a loopback OpenAI server that simulates a real model's
latency (time to first token plus completion tokens / tokens-per-second per call; no
capacity limit) and answers by rules as a competent model would
(`benchmarks/_latency_model.py`).

- serial: one agent reads the documents one call after another (one call per document),
  then writes the table in one last call — the same model and latency.
- swarm, listing: `run_solve` (`kimmy swarm`) with the orchestrator writing everything out:
  it creates an extractor, assigns one task per slice of the corpus (`--subagents`
  slices) listing the slices' document ids, waits, and retypes the rows as the table.
- swarm, by reference: the same, with the orchestrator's `fan_out(all_documents, tasks=N)`
  (no id decoded) and `finish(table=…)` (the rows assembled by the runtime, not retyped).

Reported, from one run: wall-clock of each and the speed-ups over the serial agent;
critical steps of the swarms (PARL's metric, from their trajectories) against the serial
agent's steps (its model calls); the orchestrator's overhead per turn (wall-clock of the
swarm beyond its setup and the simulated model time on its critical path — the
orchestrator's calls and the slowest sub-agent's — per orchestrator turn); F1 of every
answer. Prints the table; `--out benchmarks/results/orchestrator.md` writes the committed
page.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks._latency_model import MODEL_ID, Latency, LatencyModelServer  # noqa: E402
from benchmarks._papers import PAPERS, papers_file  # noqa: E402
from benchmarks._results import add_out_option, publish  # noqa: E402
from kimmy_swarm.agents.orchestrator import ORCHESTRATOR_ID, SolveConfig, run_solve  # noqa: E402
from kimmy_swarm.agents.widesearch import (  # noqa: E402
    ICLR_DEFAULTS,
    WIDE_TASKS,
    grade_answer,
    load_papers,
    rows_markdown,
)
from kimmy_swarm.rewards import critical_steps, load_trajectory  # noqa: E402
from kimmy_swarm.swarm.llm import OpenAIChat  # noqa: E402


async def serial(srv: LatencyModelServer, task: Any, ids: list[str]) -> dict[str, Any]:
    """One agent, one call per document, then one call that writes the table."""
    from benchmarks._latency_model import serial_messages

    model = OpenAIChat(srv.base_url, MODEL_ID, max_connections=4, timeout_s=600)
    t0 = time.perf_counter()
    matched: list[str] = []
    latency = 0.0
    try:
        for doc in ids:
            c0 = time.perf_counter()
            reply = await model.chat(serial_messages(task, doc), max_tokens=512)
            latency += time.perf_counter() - c0
            if json.loads(reply.content or "{}").get("rows"):
                matched.append(doc)
        final = [
            {"role": "system", "content": "Write the final table of the rows you found."},
            {"role": "user", "content": f"{task.goal()}\n\nDocuments: {', '.join(matched)}"},
        ]
        reply = await model.chat(final, max_tokens=8192)
    finally:
        await model.aclose()
    rows = json.loads(reply.content or "{}").get("rows", [])
    return {
        "wall_s": time.perf_counter() - t0,
        "steps": len(ids) + 1,
        "answer": rows_markdown(tuple(task.columns), rows),
    }


def swarm(
    srv: LatencyModelServer, task: Any, subagents: int, tmp: Path, corpus: Path
) -> dict[str, Any]:
    """`run_solve` against the same model (over `corpus`, the papers the model knows)."""
    model = OpenAIChat(srv.base_url, MODEL_ID, max_connections=subagents + 8, timeout_s=600)
    config = SolveConfig(
        goal=task.goal(), out=tmp / "out", corpus=corpus, model=model, runs_dir=tmp / "runs",
        max_subagents=subagents + 16, max_concurrency=subagents + 8, defaults=ICLR_DEFAULTS,
        context_tokens=200_000,
    )  # fmt: skip
    t0, t0_wall = time.perf_counter(), time.time()
    try:
        outcome = run_solve(config)
    finally:
        asyncio.run(model.aclose())
    wall = time.perf_counter() - t0
    traj = load_trajectory(outcome.run_id, tmp / "runs")
    crit = critical_steps(traj)
    orch = traj.episodes[ORCHESTRATOR_ID]
    orch_model_s = sum(c.latency_s for c in orch.model_calls)
    subs = [e for k, e in traj.episodes.items() if k != ORCHESTRATOR_ID]
    slowest = max((sum(c.latency_s for c in e.model_calls) for e in subs), default=0.0)
    setup = (traj.started_at or t0_wall) - t0_wall  # loading the corpus, its index, tools
    return {
        "setup_s": setup,
        "wall_s": wall,
        "steps": crit.steps,
        "serial_steps": crit.serial_steps,
        "turns": outcome.turns,
        "subagents": outcome.subagents,
        "orchestrator_model_s": orch_model_s,
        "slowest_subagent_s": slowest,
        "overhead_per_turn_s": (wall - setup - orch_model_s - slowest) / max(1, outcome.turns),
        "answer": outcome.answer,
        "status": outcome.status,
    }


def _table(args: argparse.Namespace, task: Any, s: dict[str, Any], listing: dict[str, Any],
           ref: dict[str, Any], f1s: tuple[float, float, float], truth: int) -> str:  # fmt: skip
    when = dt.date.today().isoformat()

    def ratio(w: dict[str, Any]) -> str:
        return f"{s['wall_s'] / w['wall_s']:.2f}×"

    rows = [
        ("wall-clock (s)", f"{s['wall_s']:.1f}", f"{listing['wall_s']:.1f}",
         f"{ref['wall_s']:.1f}"),
        ("speed-up over the serial agent", "1.00×", ratio(listing), ratio(ref)),
        ("steps (model calls on the critical path)", str(s["steps"]), str(listing["steps"]),
         str(ref["steps"])),
        ("F1 of the answer", *(f"{f:.3f}" for f in f1s)),
        ("sub-agents / orchestrator turns", "–", f"{listing['subagents']} / {listing['turns']}",
         f"{ref['subagents']} / {ref['turns']}"),
        ("orchestrator model time (s)", "–", f"{listing['orchestrator_model_s']:.1f}",
         f"{ref['orchestrator_model_s']:.1f}"),
        ("slowest sub-agent (s)", "–", f"{listing['slowest_subagent_s']:.1f}",
         f"{ref['slowest_subagent_s']:.1f}"),
        ("setup: corpus, index, tools (s)", "–", f"{listing['setup_s']:.2f}",
         f"{ref['setup_s']:.2f}"),
        ("orchestrator overhead per turn (s)", "–", f"{listing['overhead_per_turn_s']:.3f}",
         f"{ref['overhead_per_turn_s']:.3f}"),
    ]  # fmt: skip
    return "\n".join(
        [
            "# Orchestrator vs one serial agent (`python benchmarks/bench_orchestrator.py`)",
            "",
            f"Wide task `{task.name}` over {args.documents} ICLR 2017 papers ({truth} rows in the "
            f"ground truth); simulated model: {args.ttft} s to first token + "
            f"{args.tokens_per_s:g} tokens/s per call, no capacity limit; {args.subagents} "
            f"sub-agents. One run, Python {platform.python_version()}, {when}.",
            "",
            "| measure | serial agent | swarm, listing | swarm, by reference |",
            "|---|---:|---:|---:|",
            *(f"| {' | '.join(r)} |" for r in rows),
            "",
            "Swarm, listing: the orchestrator writes each slice's document ids into its "
            "assignments and retypes the rows as the table. By reference: `fan_out` over the "
            "corpus (no id decoded) and `finish(table=…)` (the rows assembled from the "
            "sub-agents' outputs).",
            "",
            f"Goal: ≥ 4.5× wall-clock at 100 sub-agents (K2.5 reports 3–4.5×), F1 equal to the "
            f"serial agent's. Critical steps of the by-reference swarm's trajectory: "
            f"{ref['steps']} of {ref['serial_steps']} serial (its own sub-agents' steps summed).",
            "",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", default="rl_papers", choices=sorted(WIDE_TASKS))
    parser.add_argument("--subagents", type=int, default=100)
    parser.add_argument("--ttft", type=float, default=0.3)
    parser.add_argument("--tokens-per-s", type=float, default=40.0)
    parser.add_argument("--documents", type=int, default=0, help="0: the whole corpus")
    parser.add_argument("--quick", action="store_true", help="small and fast (tests)")
    add_out_option(parser, "orchestrator.md")
    args = parser.parse_args()
    if args.quick:
        args.subagents, args.ttft, args.tokens_per_s = 8, 0.01, 20_000.0
        args.documents = args.documents or 60
    task = WIDE_TASKS[args.task]
    papers = load_papers(PAPERS)
    if args.documents:
        papers = papers[: args.documents]
    args.documents = len(papers)
    ids = [p.id for p in papers]
    truth = task.ground_truth(papers)
    latency = Latency(ttft_s=args.ttft, tokens_per_s=args.tokens_per_s)
    with (
        LatencyModelServer(papers, task, latency=latency, subagents=args.subagents) as srv,
        tempfile.TemporaryDirectory(prefix="kimmy-bench-orch-") as tmp,
    ):
        corpus = papers_file(Path(tmp), len(ids))
        s = asyncio.run(serial(srv, task, ids))
        srv.by_reference = False
        listing = swarm(srv, task, args.subagents, Path(tmp) / "listing", corpus)
        srv.by_reference = True
        ref = swarm(srv, task, args.subagents, Path(tmp) / "ref", corpus)
        errors = list(srv.errors)
    f1s = tuple(grade_answer(task, r["answer"], truth).f1 for r in (s, listing, ref))
    table = _table(args, task, s, listing, ref, f1s, len(truth))  # type: ignore[arg-type]
    publish(table, args.out)
    if errors:
        print(f"model server errors: {errors[:3]}")


if __name__ == "__main__":
    main()
