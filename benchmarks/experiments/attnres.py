"""Attention Residuals vs the standard residual at equal tokens: held-out loss at the end, and
the tokens each AttnRes variant needs to reach the standard residual's final loss.

    python benchmarks/experiments/attnres.py [--quick] [--out-dir DIR]

Method: one 8-layer dense all-MLA model (16 sublayers) built three ways — the standard
pre-norm residual, Full AttnRes (every sublayer attends over all earlier outputs) and Block
AttnRes with `NUM_BLOCKS` blocks (4 sublayers each) — trained from the same seed (the shared
weights initialise identically; AttnRes adds only its zero-initialised pseudo-queries) on
the same batches with the same MuonClip schedule, for two seeds. The token-efficiency ratio
is the standard run's tokens over the tokens an AttnRes run needs to reach the standard
run's final eval loss, interpolated on its eval curve (same seed). The seed article claims
"24% token efficiency" (1.24×); the paper reports a 1.25× compute advantage.

Writes exp_attnres.md and exp_attnres.png into `--out-dir` (a new temporary folder without it;
`--out-dir benchmarks/results` updates the committed ones).
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.experiments._common import (  # noqa: E402
    Panel,
    RunScale,
    count_params,
    eval_curve,
    final_loss,
    fmt,
    fmt_signed,
    fmt_tokens,
    load_corpus,
    md_table,
    model_config,
    page_header,
    parse_args,
    ratio,
    save_plot,
    tokens_to_reach,
    train_run,
    write_page,
)
from kimmy_swarm.model.train import TrainResult  # noqa: E402

NAME = "exp_attnres"
VARIANTS = ("standard", "full_attnres", "block_attnres")
NUM_BLOCKS = 4  # 16 sublayers → blocks of 4; with 8 blocks a block would be one layer
SEEDS = (0, 1)


FULL = RunScale(
    hidden=64, steps=240, batch=8, seq_len=64, eval_every=20, eval_batches=8, warmup=12,
    lr=8e-3,
)  # fmt: skip
QUICK = RunScale(
    hidden=32, steps=3, batch=2, seq_len=16, eval_every=2, eval_batches=1, warmup=1, lr=8e-3,
)  # fmt: skip
LAYERS = 8


@dataclass
class Outcome:
    scale: RunScale
    params: dict[str, int]
    runs: dict[str, list[TrainResult]]  # variant → one run per seed
    wall_s: float


def experiment(scale: RunScale) -> Outcome:
    """Every variant on every seed, in one process."""
    start = time.perf_counter()
    corpus = load_corpus()
    runs: dict[str, list[TrainResult]] = {v: [] for v in VARIANTS}
    params: dict[str, int] = {}
    for variant in VARIANTS:
        config = model_config(
            corpus.vocab_size,
            kind="mla",
            layers=LAYERS,
            hidden=scale.hidden,
            residual=variant,
            attn_res_num_blocks=NUM_BLOCKS,
        )
        params[variant] = count_params(config)
        for seed in SEEDS:
            cfg = scale.train_config(seed=seed)
            runs[variant].append(train_run(config, corpus, cfg, f"{variant} seed {seed}")[1])
    return Outcome(scale, params, runs, time.perf_counter() - start)


def _need(out: Outcome, variant: str, seed: int) -> float | None:
    """Tokens `variant` needs to reach the standard residual's final loss (same seed)."""
    target = final_loss(out.runs["standard"][seed])
    return tokens_to_reach(eval_curve(out.runs[variant][seed]), target)


def _ratios(out: Outcome, variant: str) -> list[float | None]:
    std = out.runs["standard"]
    return [ratio(std[s].tokens_seen, _need(out, variant, s)) for s in range(len(SEEDS))]


def _mean(xs: Sequence[float | None]) -> float | None:
    got = [x for x in xs if x is not None]
    return statistics.fmean(got) if len(got) == len(xs) and got else None


def _table(out: Outcome) -> list[str]:
    std_final = statistics.fmean(final_loss(r) for r in out.runs["standard"])
    std_tps = statistics.fmean(r.tokens_per_s for r in out.runs["standard"])
    rows = []
    for v in VARIANTS:
        finals = [final_loss(r) for r in out.runs[v]]
        mean = statistics.fmean(finals)
        tps = statistics.fmean(r.tokens_per_s for r in out.runs[v])
        need = [_need(out, v, s) for s in range(len(SEEDS))]
        ratios = _ratios(out, v)
        rows.append(
            [v, f"{out.params[v]:,}", " / ".join(fmt(x, 4) for x in finals), fmt(mean, 4),
             fmt_signed(mean - std_final), " / ".join(fmt_tokens(n) for n in need),
             " / ".join(fmt(r, 2, "×") for r in ratios), fmt(_mean(ratios), 2, "×"),
             f"{tps:,.0f}", f"{std_tps / tps:.2f}×"]
        )  # fmt: skip
    headers = [
        "residual", "parameters", "final eval loss (seeds 0 / 1)", "mean", "Δ vs standard",
        "tokens to standard's final loss (0 / 1)", "token efficiency (0 / 1)", "mean efficiency",
        "train tokens/s", "time per token vs standard",
    ]  # fmt: skip
    return md_table(headers, rows)


CLAIM = 1.24  # the seed article's "24% token efficiency"


def _verdict(out: Outcome, variant: str) -> str:
    """One sentence per AttnRes variant: loss gap, token efficiency, against the claim."""
    std = statistics.fmean(final_loss(r) for r in out.runs["standard"])
    delta = statistics.fmean(final_loss(r) for r in out.runs[variant]) - std
    ratios = _ratios(out, variant)
    mean = _mean(ratios)
    side = "below" if delta < 0 else "above"
    head = f"{variant} ended {fmt(abs(delta), 4)} nats {side} the standard"
    if mean is None:
        hit = sum(r is not None for r in ratios)
        return (
            f"{head} on average but reached the standard's final loss on only {hit} of "
            f"{len(ratios)} seeds: the claimed {CLAIM:.2f}× is not reproduced for it here."
        )
    per_seed = " and ".join(fmt(r, 2, "×") for r in ratios)
    if mean >= CLAIM:
        judged = f"at or above the claimed {CLAIM:.2f}×"
    elif mean >= 1.05:
        judged = f"a gain, below the claimed {CLAIM:.2f}×"
    else:
        judged = f"no real gain against the claimed {CLAIM:.2f}×"
    return f"{head}; token efficiency {per_seed} (mean {mean:.2f}×) — {judged}."


def _findings(out: Outcome) -> list[str]:
    std = [final_loss(r) for r in out.runs["standard"]]
    tps = {v: statistics.fmean(r.tokens_per_s for r in out.runs[v]) for v in VARIANTS}
    cost = " and ".join(f"{tps['standard'] / tps[v]:.2f}× ({v})" for v in VARIANTS[1:])
    s = out.scale
    shows = " ".join(_verdict(out, v) for v in VARIANTS[1:]) + (
        f" For scale: the standard residual's own two seeds ended {fmt(abs(std[0] - std[1]), 4)} "
        f"nats apart. Time per training token was {cost} the standard's, against the paper's "
        "< 4% training overhead: at width 64 the depth softmax over up to "
        f"{2 * LAYERS + 1} sources costs about as much as the small layers it mixes."
    )
    limits = (
        f"What limits it: {LAYERS} layers of width {s.hidden} ({out.params['standard']:,} "
        f"parameters), {s.steps} steps of {s.batch}×{s.seq_len} tokens, one lr for all three "
        "(the MuonClip optimum of the 4-layer model in exp_muonclip, not tuned per variant), "
        "2 seeds. The paper's figures come from scaling-law fits at far larger depth and token "
        "counts, where the standard residual's growing hidden-state norm (PreNorm dilution) "
        "matters more than in 8 layers."
    )
    return [shows, "", limits]


def render(out: Outcome, argv: Sequence[str]) -> list[str]:
    s = out.scale
    tokens = s.tokens
    return [
        *page_header("Attention Residuals vs standard residual", Path(__file__).name, argv),
        f"Model: all-MLA, {LAYERS} layers, hidden {s.hidden}, dense FFN; corpus: the Python "
        f"docs, BPE vocab {load_corpus().vocab_size}. Each run: MuonClip lr {s.lr:g}, "
        f"{s.steps} steps × {s.batch}×{s.seq_len} tokens ({fmt_tokens(tokens)} tokens, "
        f"{load_corpus().passes(tokens):.1f} passes), "
        f"{s.warmup} warmup steps then cosine, eval every {s.eval_every} steps on "
        f"{s.eval_batches * s.batch * s.seq_len:,} held-out tokens. Block AttnRes: "
        f"{NUM_BLOCKS} blocks. All runs of this page took {out.wall_s:.0f} s.",
        "",
        *_table(out),
        "",
        "Token efficiency = the standard run's tokens ÷ the tokens this variant needed to "
        "reach the standard run's final eval loss (linear interpolation between evals, same "
        "seed); > 1× means fewer tokens for the same loss.",
        "",
        *_findings(out),
    ]


def plot(out: Outcome, path: Path) -> Path:
    curves = Panel("Eval loss (seed 0)", "training tokens", "eval loss")
    curves.series = {v: eval_curve(out.runs[v][0])[1:] for v in VARIANTS}
    gap = Panel("Eval loss minus standard's, same seed", "training tokens", "Δ eval loss")
    for v in VARIANTS[1:]:
        for seed in range(len(SEEDS)):
            base = eval_curve(out.runs["standard"][seed])
            mine = eval_curve(out.runs[v][seed])
            gap.series[f"{v} seed {seed}"] = [
                (t, loss - b) for (t, loss), (_, b) in zip(mine, base, strict=True)
            ][1:]
    gap.hline = (0.0, "standard")
    return save_plot(path, [curves, gap])


def main(argv: Sequence[str] | None = None) -> int:
    """Run every variant, write the page and the plot."""
    args, shown = parse_args(argv, __doc__.split("\n\n")[0])
    out = experiment(QUICK if args.quick else FULL)
    page = write_page(args.out_dir, f"{NAME}.md", render(out, shown))
    plot(out, args.out_dir / f"{NAME}.png")
    print(f"wrote {page} and {NAME}.png ({out.wall_s:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
