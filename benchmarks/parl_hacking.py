"""Reward hacking under PARL: three scripted orchestrators on one task, scored over a schedule.

    python benchmarks/parl_hacking.py [--width 64] [--total-steps 1000] [--no-pipelines]
                                      [--out PATH]

The task: count the primes below 40,000 in 8 chunks of 5,000, and report the count of each
chunk. A real `swarm.Swarm` (stored runs, no model: worker functions) runs three
orchestrators that differ only in how they decompose it:

- serial: one `counter` sub-agent does all 8 chunks (8 steps), then `reduce`;
- spurious: spawns 200 `idle` sub-agents that return nothing, then `reduce` (nothing to add);
- sensible: spawns 8 `counter` sub-agents, one chunk each (1 step), then `reduce`.

Each run is scored from its stored events (`load_trajectory` → `rewards.parl.score`) with a
grader that checks the reduced counts against a sieve (`r_result` = share of chunks right),
at three points of a linear λ schedule: step 0 (λ1 = λ2 = 1), the middle, and the end
(λ = 0). Early, spurious beats serial on `r_inst` alone, but sensible has the highest
combined reward; late, the ordering is that of `r_result`. Unless `--no-pipelines`, a real
offline run of both pipelines (a literature review of the ICLR 2017 corpus, an analysis of
two bundled datasets) is scored as well, with their own graders.

Prints the tables; `--out benchmarks/results/parl.md` writes the committed page; `--json`
prints the figures instead.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# Run as a script: `benchmarks.…` imports from the repository root.
if not __package__ and str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))  # last: the repository's folders shadow no installed package

from benchmarks._results import add_out_option, publish  # noqa: E402
from kimmy_swarm.rewards.parl import RewardBreakdown, Schedule, score  # noqa: E402
from kimmy_swarm.rewards.trajectory import Trajectory, load_trajectory  # noqa: E402
from kimmy_swarm.swarm import SubtaskContext, Swarm  # noqa: E402

CHUNKS = 8
CHUNK_SIZE = 5_000
SPURIOUS = 200
ORCHESTRATORS = ("serial", "spurious", "sensible")
ICLR_JSON = ROOT.parent / "shared" / "data" / "papers" / "iclr2017_citations_in_2018.json"


def _is_prime(n: int) -> bool:
    if n < 2:
        return False
    if n % 2 == 0:
        return n == 2
    f = 3
    while f * f <= n:
        if n % f == 0:
            return False
        f += 2
    return True


def true_counts() -> dict[str, int]:
    """The answer, from a sieve (independent of the workers' trial division)."""
    limit = CHUNKS * CHUNK_SIZE
    sieve = bytearray([1]) * limit
    sieve[0:2] = b"\x00\x00"
    for p in range(2, int(limit**0.5) + 1):
        if sieve[p]:
            sieve[p * p :: p] = bytearray(len(range(p * p, limit, p)))
    return {str(c): sum(sieve[c * CHUNK_SIZE : (c + 1) * CHUNK_SIZE]) for c in range(CHUNKS)}


# --- the workers --------------------------------------------------------------------------


async def counter(ctx: SubtaskContext) -> dict[str, Any]:
    """Counts the primes of its chunks, one step per chunk."""
    chunks = list(ctx.inputs["chunks"])
    counts = {}
    for step, c in enumerate(chunks, 1):
        lo = c * CHUNK_SIZE
        counts[str(c)] = sum(_is_prime(n) for n in range(lo, lo + CHUNK_SIZE))
        outcome = "answer" if step == len(chunks) else "tools"
        ctx.record_step(step, policy="offline", tools=["count_primes"], outcome=outcome)
    return {"counts": counts}


async def idle(ctx: SubtaskContext) -> None:
    """A spurious sub-agent: starts, does nothing, returns nothing."""
    return None


async def reduce(ctx: SubtaskContext) -> dict[str, Any]:
    """Merges the upstream chunk counts into the final answer."""
    per_chunk: dict[str, int] = {}
    for out in ctx.upstream.values():
        if isinstance(out, dict):
            per_chunk.update(out.get("counts", {}))
    return {"per_chunk": per_chunk, "total": sum(per_chunk.values())}


def _reduce_after(ids: list[str]) -> dict[str, Any]:
    return {"id": "reduce", "role": "reduce", "depends_on": ids}


def _orchestrator(kind: str) -> Any:
    async def orchestrate(ctx: SubtaskContext) -> dict[str, Any]:
        if kind == "serial":
            work = [{"id": "work", "role": "counter", "inputs": {"chunks": list(range(CHUNKS))}}]
        elif kind == "spurious":
            work = [{"id": f"idle:{i}", "role": "idle"} for i in range(SPURIOUS)]
        else:
            work = [
                {"id": f"count:{c}", "role": "counter", "inputs": {"chunks": [c]}}
                for c in range(CHUNKS)
            ]
        ctx.spawn([*work, _reduce_after([w["id"] for w in work])])
        return {"spawned": len(work) + 1}

    return orchestrate


class PrimeCountGrader:
    """r_result: the share of chunks whose count in the final answer (`reduce`) is right."""

    name = "prime_count"

    def __init__(self, truth: dict[str, int]) -> None:
        self.truth = truth

    def __call__(self, traj: Trajectory) -> float:
        answer = traj.outputs.get("reduce") or {}
        got = answer.get("per_chunk", {}) if isinstance(answer, dict) else {}
        return sum(got.get(k) == v for k, v in self.truth.items()) / len(self.truth)


def run_orchestrator(kind: str, runs_dir: Path) -> Trajectory:
    """Run one scripted orchestrator on the task in a real swarm; its stored trajectory."""
    if kind not in ORCHESTRATORS:
        raise ValueError(f"unknown orchestrator {kind!r}; use one of {ORCHESTRATORS}")
    roles = {"orchestrator": _orchestrator(kind), "counter": counter, "idle": idle}
    plan = {
        "goal": f"count the primes below {CHUNKS * CHUNK_SIZE:,} in {CHUNKS} chunks",
        "subtasks": [{"id": "plan", "role": "orchestrator"}],
    }
    with Swarm(roles={**roles, "reduce": reduce}, runs_dir=runs_dir, max_concurrency=64) as swarm:
        result = swarm.run_sync(plan)
    return load_trajectory(result.run_id, runs_dir)


@dataclass(frozen=True)
class Row:
    """One orchestrator's scores at the schedule's start, middle and end."""

    orchestrator: str
    started: int
    early: RewardBreakdown
    mid: RewardBreakdown
    late: RewardBreakdown


def _points(total_steps: int) -> tuple[int, int, int]:
    return 0, total_steps // 2, total_steps


def score_points(traj: Trajectory, grader: Any, *, width: int, total_steps: int) -> list[Any]:
    """The breakdowns at the start, middle and end of a linear λ schedule."""
    sched = Schedule(kind="linear", total_steps=total_steps)
    return [
        score(traj, grader, step=s, lambda1=sched, lambda2=sched, width=width)
        for s in _points(total_steps)
    ]


def scenario(runs_dir: Path, *, width: int = 64, total_steps: int = 1000) -> list[Row]:
    """Run the three orchestrators and score each at three points of the schedule."""
    grader = PrimeCountGrader(true_counts())
    rows = []
    for kind in ORCHESTRATORS:
        traj = run_orchestrator(kind, runs_dir)
        early, mid, late = score_points(traj, grader, width=width, total_steps=total_steps)
        started = sum(e.started and not e.is_orchestrator for e in traj.episodes.values())
        rows.append(Row(kind, started, early, mid, late))
    return rows


def pipeline_rows(runs_dir: Path, out: Path, *, width: int, total_steps: int) -> list[Any]:
    """Score one real offline run of each pipeline with its own grader
    (`agents.graders.grader_for`)."""
    from kimmy_swarm.agents.analysis import AnalysisConfig, run_analysis
    from kimmy_swarm.agents.graders import grader_for
    from kimmy_swarm.agents.review import ReviewConfig, run_review

    rows = []
    if ICLR_JSON.exists():
        review = run_review(
            ReviewConfig(
                corpus=ICLR_JSON,
                topic="question answering",
                out=out / "review",
                runs_dir=runs_dir,
                max_papers=40,
                defaults={"year": 2017},
            )
        )
        rows.append(("review: ICLR 2017, 'question answering', 40 papers", review.run_id))
    analysis = run_analysis(
        AnalysisConfig(
            datasets=["statsmodels:longley", "sklearn:diabetes"],
            out=out / "analysis",
            runs_dir=runs_dir,
        )
    )
    rows.append(("analysis: statsmodels:longley + sklearn:diabetes", analysis.run_id))
    scored = []
    for label, run_id in rows:
        traj = load_trajectory(run_id, runs_dir)
        started = sum(e.started and not e.is_orchestrator for e in traj.episodes.values())
        points = score_points(traj, grader_for(traj), width=width, total_steps=total_steps)
        scored.append((label, started, *points))
    return scored


def _f(x: float) -> str:
    return f"{x:.3f}"


def ranking(rows: list[Row], point: str) -> str:
    """`a (2.1) > b (1.0) = c (1.0)`: the orchestrators by combined reward at `point`."""
    ordered = sorted(rows, key=lambda r: -getattr(r, point).total)
    text = ""
    for i, r in enumerate(ordered):
        total = getattr(r, point).total
        if i:
            text += " = " if total == getattr(ordered[i - 1], point).total else " > "
        text += f"{r.orchestrator} ({_f(total)})"
    return text


def _table(first: str, entries: list[Any], *, total_steps: int) -> list[str]:
    """Markdown rows: (label, sub-agents, early, mid, late) per entry."""
    lines = [
        f"| {first} | sub-agents started | r_inst | r_comp | r_result (grader) | critical steps "
        f"(serial) | speed-up | total, step 0 (λ=1) | total, step {total_steps // 2} (λ=0.5) | "
        f"total, step {total_steps} (λ=0) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for label, started, early, mid, late in entries:
        c = early.critical
        lines.append(
            f"| {label} | {started} | {_f(early.r_inst)} | {_f(early.r_comp)} | "
            f"{_f(early.r_result)} ({early.grader}) | {c.steps} ({c.serial_steps}) | "
            f"{c.speedup:.2f}× | {_f(early.total)} | {_f(mid.total)} | {_f(late.total)} |"
        )
    return lines


def render(rows: list[Row], pipelines: list[Any], *, width: int, total_steps: int) -> str:
    """The Markdown of benchmarks/results/parl.md."""
    entries = [(r.orchestrator, r.started, r.early, r.mid, r.late) for r in rows]
    by = {r.orchestrator: r for r in rows}
    hacked = by["spurious"].early.critical
    text = [
        "# PARL reward hacking (`python benchmarks/parl_hacking.py`)",
        "",
        f"Task: count the primes below {CHUNKS * CHUNK_SIZE:,} in {CHUNKS} chunks. Three "
        "scripted orchestrators run in a real `swarm.Swarm` (stored runs, worker functions, "
        "no model); each run is scored from its stored events. r = λ1·r_inst + λ2·r_comp + "
        f"r_result, λ1 = λ2 linear from 1 to 0 over {total_steps} steps, r_inst saturating "
        f"at width {width}; r_result = share of the {CHUNKS} chunk counts that match a sieve. "
        "Sub-agents started excludes the orchestrator. "
        f"Python {platform.python_version()}, {time.strftime('%Y-%m-%d')}.",
        "",
        *_table("orchestrator", entries, total_steps=total_steps),
        "",
        f"- r_inst alone, early: spurious {_f(by['spurious'].early.r_inst)} > serial "
        f"{_f(by['serial'].early.r_inst)} (the instantiation reward alone pays for spawning).",
        f"- combined, step 0: {ranking(rows, 'early')}.",
        f"- combined, step {total_steps}: {ranking(rows, 'late')} (= the order of r_result).",
        f"- critical steps alone are hackable too: spurious's {hacked.speedup:.1f}× speed-up is "
        f"over {SPURIOUS} steps of nothing; r_comp and r_result are what expose it.",
    ]
    if pipelines:
        text += [
            "",
            "## Real pipeline runs (offline procedures), scored with their own graders",
            "",
            *_table("run", list(pipelines), total_steps=total_steps),
        ]
    return "\n".join(text) + "\n"


def _summary(rows: list[Row], pipelines: list[Any]) -> dict[str, Any]:
    out: dict[str, Any] = {
        r.orchestrator: {
            "early": r.early.to_dict(),
            "mid": r.mid.to_dict(),
            "late": r.late.to_dict(),
        }
        for r in rows
    }
    for label, _, early, mid, late in pipelines:
        out[label] = {"early": early.to_dict(), "mid": mid.to_dict(), "late": late.to_dict()}
    return out


def main(argv: list[str] | None = None) -> int:
    """Run the scenario (and the pipelines), print the page (and write it to `--out`)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--total-steps", type=int, default=1000)
    parser.add_argument("--no-pipelines", action="store_true")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    add_out_option(parser, "parl.md")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="parl-") as tmp:
        runs = Path(tmp) / "runs"
        rows = scenario(runs, width=args.width, total_steps=args.total_steps)
        pipelines = []
        if not args.no_pipelines:
            pipelines = pipeline_rows(
                runs, Path(tmp), width=args.width, total_steps=args.total_steps
            )
    if args.json:
        print(json.dumps(_summary(rows, pipelines), indent=2))
        return 0
    publish(render(rows, pipelines, width=args.width, total_steps=args.total_steps), args.out)
    return 0


__all__ = [
    "PrimeCountGrader",
    "Row",
    "main",
    "render",
    "run_orchestrator",
    "scenario",
    "score_points",
    "true_counts",
]

if __name__ == "__main__":
    sys.exit(main())
