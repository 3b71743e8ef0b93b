"""From swarm runs to an RL dataset: K rollouts, PARL rewards, GRPO advantages, TRL rows.

    python examples/rl_export.py [--k 8] [--seed 0] [--out rollouts.jsonl] [--runs-dir DIR]

The "policy" here is a scripted orchestrator that samples its decomposition (seeded): how
many `summer` sub-agents share the work of summing the squares of 1..4,000, and sometimes a
few spurious ones that return nothing. Each rollout is a real, stored swarm run (no model,
no GPU). Each is scored from its stored events, r = λ1·r_inst + λ2·r_comp + r_result
(r_result: is the reduced answer right?), the group gets GRPO advantages, and the records
go to a versioned JSONL file (`kimmy.rollout/v2`). At `--step 0` (λ = 1) a decomposition
padded with spurious sub-agents can still outscore a correct narrow one; at `--step 1000`
(λ annealed to 0) only the result counts.

The file then becomes rows in TRL's conversational prompt/completion format, with the reward
and advantage as extra columns — plain Python dicts, so no `trl` install is needed. These
scripted orchestrators spawn without a model turn, so their turns are described as JSON and
every row says `reconstructed: True`; an orchestrator agent's rollouts (`run_solve` with a
model) hold its own messages instead, and a trainer keeps only those rows:

    rows = to_trl(load_rollouts("rollouts.jsonl"))
    own = [r for r in rows if not r["reconstructed"]]   # the orchestrator's own text only
    # with `datasets` installed: Dataset.from_list(rows) is a TRL-ready dataset; a GRPO
    # reward function can read the precomputed column: lambda completions, reward, **kw: reward
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from kimmy_swarm.rewards.export import build_group, load_rollouts, to_trl, write_rollouts  # noqa: E402
from kimmy_swarm.rewards.parl import Schedule, score  # noqa: E402
from kimmy_swarm.rewards.trajectory import Trajectory, build_trajectory  # noqa: E402
from kimmy_swarm.swarm import SubtaskContext, Swarm  # noqa: E402
from kimmy_swarm.swarm.store import RunStore  # noqa: E402

N = 4_000
TASK = {"goal": f"sum of the squares of 1..{N}", "n": N}


async def summer(ctx: SubtaskContext) -> dict[str, int]:
    lo, hi = ctx.inputs["lo"], ctx.inputs["hi"]
    return {"lo": lo, "hi": hi, "sum": sum(i * i for i in range(lo, hi))}


async def idle(ctx: SubtaskContext) -> None:
    return None


async def reduce(ctx: SubtaskContext) -> dict[str, Any]:
    parts = [v for v in ctx.upstream.values() if isinstance(v, dict)]
    covered = sum(p["hi"] - p["lo"] for p in parts)
    return {"sum": sum(p["sum"] for p in parts), "covered": covered}


def sampled_orchestrator(rng: random.Random) -> Any:
    """One sample of the policy: a width, and maybe some spurious spawns (or a dropped chunk)."""
    width = rng.choice([1, 2, 4, 8])
    spurious = rng.choice([0, 0, 12])
    drop_last = rng.random() < 0.25  # a sloppy plan that forgets part of the range

    async def orchestrate(ctx: SubtaskContext) -> dict[str, int]:
        bounds = [1 + N * i // width for i in range(width + 1)]
        bounds[-1] = N + 1
        work = [
            {"id": f"sum:{i}", "role": "summer", "inputs": {"lo": bounds[i], "hi": bounds[i + 1]}}
            for i in range(width - (1 if drop_last and width > 1 else 0))
        ]
        work += [{"id": f"idle:{i}", "role": "idle"} for i in range(spurious)]
        ctx.spawn(
            [*work, {"id": "reduce", "role": "reduce", "depends_on": [w["id"] for w in work]}]
        )
        return {"width": width, "spurious": spurious}

    return orchestrate


class SumGrader:
    """r_result: 1 when the reduced sum is right, else the share of the range covered."""

    name = "sum_of_squares"

    def __call__(self, traj: Trajectory) -> float:
        answer = traj.outputs.get("reduce") or {}
        if answer.get("sum") == sum(i * i for i in range(1, N + 1)):
            return 1.0
        return min(1.0, answer.get("covered", 0) / N) * 0.5


def rollout(seed: int, runs_dir: Path) -> tuple[Trajectory, Any]:
    """Run one sampled orchestrator as a stored swarm run; (trajectory, stored plan)."""
    roles = {"orchestrator": sampled_orchestrator(random.Random(seed))}
    roles |= {"summer": summer, "idle": idle, "reduce": reduce}
    plan = {"goal": TASK["goal"], "subtasks": [{"id": "plan", "role": "orchestrator"}]}
    with Swarm(roles=roles, runs_dir=runs_dir) as swarm:
        run_id = swarm.run_sync(plan).run_id
    with RunStore(runs_dir, create=False) as store:
        stored = store.load_run(run_id)
        return build_trajectory(store.events(run_id), plan=stored.plan), stored.plan


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, default=8, help="rollouts in the group")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--step", type=int, default=0, help="training step (λ schedule)")
    parser.add_argument("--out", type=Path, default=Path("rollouts.jsonl"))
    parser.add_argument("--runs-dir", type=Path, default=None, help="default: a temp dir")
    args = parser.parse_args(argv)
    grader, sched = SumGrader(), Schedule(kind="cosine", total_steps=1000)
    with tempfile.TemporaryDirectory(prefix="rl-export-") as tmp:
        runs = args.runs_dir or Path(tmp)
        sampled = [rollout(args.seed * 1000 + i, runs) for i in range(args.k)]
    trajs, plans = [t for t, _ in sampled], [p for _, p in sampled]
    breakdowns = [
        score(t, grader, step=args.step, lambda1=sched, lambda2=sched, width=16) for t in trajs
    ]
    records = build_group(trajs, breakdowns, task=TASK, group=f"seed-{args.seed}", plans=plans)
    write_rollouts(args.out, records)

    rows = to_trl(load_rollouts(args.out))  # what a trainer reads back
    print(f"{len(rows)} rollouts -> {args.out}")
    print(" #  spawns  r_inst  r_comp r_result  reward     adv")
    for rec, row in zip(records, rows, strict=True):
        w = rec.reward
        print(
            f"{rec.index:>2} {len(rec.spawns):>6} {w['r_inst']:>7.3f} {w['r_comp']:>7.3f} "
            f"{w['r_result']:>8.3f} {row['reward']:>7.3f} {row['advantage']:>+7.3f}"
        )
    first = rows[0]
    print("\nTRL row 0 (conversational prompt/completion + reward columns):")
    print(f"  prompt:     {[m['role'] for m in first['prompt']]} {first['prompt'][0]['content']!r}")
    print(f"  completion: {[m['role'] for m in first['completion']]}")
    print(f"  assistant:  {first['completion'][0]['content'][:100]}…")
    print(f"  reward:     {first['reward']:.4f}   advantage: {first['advantage']:+.4f}")
    print(f"  reconstructed: {first['reconstructed']} (described spawns: a trainer drops the row)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
