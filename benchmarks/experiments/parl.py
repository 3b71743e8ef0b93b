"""PARL at small scale: does the reward decide whether an orchestrator learns to spawn in
parallel, serially, or spuriously?

    python benchmarks/experiments/parl.py [--steps 45] [--quick] [--out-dir DIR]
    python benchmarks/experiments/parl.py --report-from parl-experiment   # table and plot again

Three arms train SmolLM2-135M-Instruct from the same weights, on the same spawn tasks
(`agents.parl`: which of 6 documents meet a condition; one `split_documents(extractors)`
call decides the width: 1 extractor is the serial collapse, 6 the parallel policy, more than
6 spawns extractors with nothing to read), with the same GRPO settings and seeds
(`kimmy train parl`, `model.train.grpo` on our engine); only the reward differs:

- result: r_result only (λ1 = λ2 = 0);
- parl: λ1·r_inst + λ2·r_comp + r_result, both λ annealed linearly from 1 to 0;
- no-comp: λ1·r_inst + r_result (λ1 annealed), without the completion reward.

Frozen extractors read one document per step with 0.05 s of simulated work each, so the
wall-clock of a rollout follows its critical steps. Reported per arm over training steps:
sub-agents spawned, critical steps, wall-clock, r_result, the share of spawned sub-agents
that completed. Writes parl_training.md and parl_training.png into `--out-dir` (a new
temporary folder without it; `--out-dir benchmarks/results` updates the committed ones).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
# Run as a script: `benchmarks.…` imports from the repository root.
if not __package__ and str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))  # last: the repository's folders shadow no installed package

from benchmarks._results import add_out_dir_option, out_dir  # noqa: E402
from kimmy_swarm.cli.parl_training import ParlSettings, run_parl_training  # noqa: E402
from kimmy_swarm.model.train.grpo import GRPOConfig  # noqa: E402

ICLR_JSON = ROOT.parent / "shared" / "data" / "papers" / "iclr2017_citations_in_2018.json"
ARMS = ("result", "parl", "no-comp")
#: What each row of the table averages: the first and the last `WINDOW` steps.
WINDOW = 8
FIGURES = (
    ("spawned", "sub-agents spawned"),
    ("critical_steps", "critical steps"),
    ("wall_s", "wall-clock (s, critical path)"),
    ("r_result", "r_result"),
    ("completed_share", "completed / spawned"),
)


def _row_figures(row: dict[str, Any]) -> dict[str, float]:
    spawned = float(row.get("spawned", 0.0))
    out = {k: float(row.get(k, 0.0)) for k, _ in FIGURES if k != "completed_share"}
    out["completed_share"] = float(row.get("completed", 0.0)) / spawned if spawned else 0.0
    return out


def _mean(rows: list[dict[str, float]], key: str) -> float:
    return sum(r[key] for r in rows) / len(rows) if rows else float("nan")


def run_arm(arm: str, steps: int, out: Path, corpus: Path | None, lr: float) -> list[dict]:
    settings = ParlSettings(corpus=str(corpus) if corpus else None, tasks=32, width=6,
                            reward=arm, step_latency_s=0.05, seed=0)  # fmt: skip
    cfg = GRPOConfig(steps=steps, tasks_per_step=2, group_size=4, lr=lr, max_new_tokens=40,
                     checkpoint_every=steps, keep_checkpoints=1, seed=0)  # fmt: skip
    t0 = time.perf_counter()

    def show(row: dict[str, Any]) -> None:
        f = _row_figures(row)
        print(f"[{arm}] step {row['step']}/{steps}: reward {row['reward']:.3f} "
              f"spawned {f['spawned']:.2f} r_result {f['r_result']:.2f} "
              f"{row['step_s']:.1f} s ({time.perf_counter() - t0:.0f} s)", flush=True)  # fmt: skip

    result = run_parl_training(settings, cfg, out / arm, on_step=show)
    return result.rows


def _table(arms: dict[str, list[dict]]) -> list[str]:
    lines = [
        "| arm | steps | sub-agents spawned | critical steps | wall-clock (s) | r_result "
        "| completed / spawned | reward | steps with a gradient |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for arm, rows in arms.items():
        figs = [_row_figures(r) | r for r in rows]
        for label, part in ((f"1–{WINDOW}", figs[:WINDOW]),
                            (f"{len(figs) - WINDOW + 1}–{len(figs)}", figs[-WINDOW:])):  # fmt: skip
            cells = [f"{_mean(part, k):.2f}" for k in
                     ("spawned", "critical_steps", "wall_s", "r_result", "completed_share",
                      "reward")]  # fmt: skip
            trained = sum(float(r.get("trained_samples", 0.0)) > 0 for r in part)
            lines.append(f"| {arm} | {label} | " + " | ".join(cells) + f" | {trained} |")
    return lines


def _plot(arms: dict[str, list[dict]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(FIGURES), figsize=(4 * len(FIGURES), 3.4))
    for ax, (key, title) in zip(axes, FIGURES, strict=True):
        for arm, rows in arms.items():
            ys = [_row_figures(r)[key] for r in rows]
            smooth = [sum(ys[max(0, i - 4) : i + 1]) / len(ys[max(0, i - 4) : i + 1])
                      for i in range(len(ys))]  # fmt: skip
            ax.plot(range(1, len(ys) + 1), smooth, label=arm)
        ax.set_title(title)
        ax.set_xlabel("training step (mean of the last 5)")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=45, help="GRPO steps per arm")
    parser.add_argument("--lr", type=float, default=3e-5)
    parser.add_argument("--quick", action="store_true", help="3 steps per arm (a smoke run)")
    add_out_dir_option(parser)
    parser.add_argument("--work", type=Path, default=Path("parl-experiment"),
                        help="run folders (checkpoints, metrics) of the arms")  # fmt: skip
    parser.add_argument(
        "--report-from",
        type=Path,
        metavar="WORK",
        help="write the table and plot from a finished run's summary.json "
        "(no training; give the run's --lr if it was not the default)",
    )
    args = parser.parse_args(argv)
    corpus = ICLR_JSON if ICLR_JSON.is_file() else None
    if args.report_from is not None:
        summary = args.report_from / "summary.json"
        if not summary.is_file():
            parser.error(f"--report-from {args.report_from}: no summary.json there "
                         "(it is written when all arms have finished)")  # fmt: skip
        arms = json.loads(summary.read_text(encoding="utf-8"))
        steps = max(len(rows) for rows in arms.values())
        minutes = sum(rows[-1]["elapsed_s"] for rows in arms.values() if rows) / 60
        args.work = args.report_from
    else:
        steps = 3 if args.quick else args.steps
        t0 = time.perf_counter()
        arms = {arm: run_arm(arm, steps, args.work, corpus, args.lr) for arm in ARMS}
        minutes = (time.perf_counter() - t0) / 60
    args.out_dir = out_dir(args.out_dir)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    md = args.out_dir / "parl_training.md"
    png = args.out_dir / "parl_training.png"
    _plot(arms, png)
    where = "ICLR 2017 records (../shared/data)" if corpus else "the Python module docstrings"
    text = [
        "# PARL training at small scale (`python benchmarks/experiments/parl.py`)",
        "",
        f"SmolLM2-135M-Instruct, full fine-tuning with GRPO on our engine (lr {args.lr:g}, "
        f"{steps} steps per arm, 2 tasks × 4 rollouts per step, temperature 1, no KL), on 32 "
        f"spawn tasks of 6 documents from {where}. Frozen extractor sub-agents (offline "
        "procedures, 0.05 s per document). Figures are means over the first and the last "
        f"{WINDOW} steps ({8 * WINDOW} rollouts each). {minutes:.0f} min for all arms "
        f"on {platform.processor() or platform.machine()}, Python {platform.python_version()}, "
        f"{dt.date.today().isoformat()}.",
        "",
        *_table(arms),
        "",
        f"![curves]({png.name})",
        "",
        "Raw rows: `metrics.jsonl` of each arm's run folder under "
        f"`{args.work}/` (not kept in the repository).",
    ]
    md.write_text("\n".join(text) + "\n", encoding="utf-8")
    if args.report_from is None:
        (args.work / "summary.json").write_text(json.dumps(arms), encoding="utf-8")
    print(f"wrote {md} and {png} ({minutes:.1f} min)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
