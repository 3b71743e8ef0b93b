"""Shared setup of the model experiments: one corpus and tokenizer per process, model presets,
training runs through `model.train`, eval-curve arithmetic, plots and the results page.

The corpus is the interpreter's own Python documentation (`python_docs_texts()`, offline on
any machine), encoded with a byte-level BPE (vocab 1,024) trained on it once per process and
split 90/10 into training and held-out tokens. Every experiment compares variants trained in
the same process on the same tokens, from the same initialisation and data order per seed,
so the ratios it prints are against a baseline measured in that run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import itertools
import math
import os
import platform
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks._results import add_out_dir_option, out_dir  # noqa: E402
from kimmy_swarm.model import KimiLinearConfig, KimiLinearForCausalLM, hybrid_layers  # noqa: E402
from kimmy_swarm.model.errors import KimiModelError  # noqa: E402
from kimmy_swarm.model.tokenizer import HFTokenizer, train_bpe_tokenizer  # noqa: E402
from kimmy_swarm.model.train import (  # noqa: E402
    TokenData,
    TrainConfig,
    TrainResult,
    python_docs_texts,
    tokenize_corpus,
    train,
)

VOCAB_SIZE = 1024
EVAL_FRACTION = 0.1
LR_STEP = 1.4  # neighbouring lrs of a sweep differ by this factor (finer than 2×)
Curve = list[tuple[float, float]]  # (x, y) points, e.g. (training tokens, eval loss)


# ---- corpus --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Corpus:
    """The tokenizer and the train/held-out token streams every run of a process shares."""

    tokenizer: HFTokenizer
    train: TokenData
    eval: TokenData

    @property
    def vocab_size(self) -> int:
        return self.tokenizer.vocab_size

    def passes(self, tokens: float) -> float:
        """How many times `tokens` training tokens go over the training stream."""
        return tokens / len(self.train)


@functools.cache
def load_corpus(vocab_size: int = VOCAB_SIZE) -> Corpus:
    """Python docs → BPE (trained here, ~1 s) → one EOS-joined stream → 90/10 split.

    Cached, so the tokenizer is trained once per process whatever the variants.
    """
    texts = python_docs_texts()
    tok = train_bpe_tokenizer(texts, vocab_size=vocab_size)
    data_train, data_eval = tokenize_corpus(texts, tok).split(EVAL_FRACTION)
    return Corpus(tok, data_train, data_eval)


# ---- models --------------------------------------------------------------------------------
def model_config(
    vocab_size: int,
    *,
    kind: str = "hybrid",
    layers: int = 4,
    hidden: int = 64,
    heads: int = 4,
    head_dim: int = 16,
    intermediate: int = 128,
    **overrides: Any,
) -> KimiLinearConfig:
    """A small dense-FFN Kimi Linear: `kind` "mla" (all MLA), "hybrid" (3:1 KDA:MLA) or
    "kda" (all KDA). Dense, not MoE: on 2 CPU cores a router adds time and run-to-run
    variance that none of these comparisons is about."""
    lac = (
        None
        if kind == "mla"
        else hybrid_layers(layers, num_heads=heads, head_dim=head_dim, kind=kind)
    )
    return KimiLinearConfig.tiny(
        vocab_size=vocab_size,
        hidden_size=hidden,
        intermediate_size=intermediate,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        linear_attn_config=lac,
        num_experts=None,
        **overrides,
    )


def count_params(config: KimiLinearConfig, *, exclude_embeddings: bool = False) -> int:
    """Parameters of the model `config` describes (built on CPU; tiny models take ms)."""
    return KimiLinearForCausalLM(config).num_parameters(exclude_embeddings=exclude_embeddings)


def match_params(
    make: Callable[[int], KimiLinearConfig], target: int, widths: Sequence[int]
) -> tuple[KimiLinearConfig, int]:
    """The config `make(w)` over `widths` whose parameter count is nearest `target`, and that
    count — how variants with different attention layers are brought to similar size.

    Raises:
        KimiModelError: `widths` is empty.
    """
    if not widths:
        raise KimiModelError("match_params needs at least one width to try; got none")
    best = min((abs(count_params(make(w)) - target), w) for w in widths)
    config = make(best[1])
    return config, count_params(config)


@dataclass(frozen=True)
class RunScale:
    """The sizes an experiment trains at (its full run, or `--quick`'s smoke run)."""

    hidden: int
    steps: int
    batch: int
    seq_len: int
    eval_every: int
    eval_batches: int
    warmup: int
    lr: float

    @property
    def tokens(self) -> int:
        """Training tokens of one full-length run."""
        return self.steps * self.batch * self.seq_len

    def train_config(self, *, seed: int, **changes: Any) -> TrainConfig:
        """MuonClip (K2's τ = 100) with warmup then cosine, unless `changes` say otherwise."""
        kw: dict[str, Any] = dict(
            steps=self.steps,
            batch_size=self.batch,
            seq_len=self.seq_len,
            optimizer="muonclip",
            lr=self.lr,
            warmup_steps=self.warmup,
            eval_every=self.eval_every,
            eval_batches=self.eval_batches,
            seed=seed,
        )
        kw.update(changes)
        return TrainConfig(**kw)


def train_run(
    config: KimiLinearConfig, corpus: Corpus, cfg: TrainConfig, label: str
) -> tuple[KimiLinearForCausalLM, TrainResult]:
    """Build the model after `torch.manual_seed(cfg.seed)` (the same init for every variant
    of a seed), train it with `model.train.train` (data order also from `cfg.seed`) and
    print one line under `label`."""
    torch.manual_seed(cfg.seed)
    model = KimiLinearForCausalLM(config)
    result = train(model, corpus.train, corpus.eval, cfg, out_dir=None, progress=False)
    print(
        f"  {label:<36} eval {final_loss(result):.4f}  {result.tokens_per_s:8,.0f} tok/s  "
        f"{result.wall_time_s:6.1f} s",
        flush=True,
    )
    return model, result


def final_loss(result: TrainResult) -> float:
    """The last eval loss of a run; inf if it has none or diverged (NaN), so that it never
    wins a comparison."""
    loss = result.final_eval_loss
    return math.inf if loss is None or not math.isfinite(loss) else loss


# ---- learning-rate sweeps -------------------------------------------------------------------
def best_lr(runs: Mapping[float, TrainResult]) -> float:
    """The lr whose run ended lowest; a diverged run never wins, a tie goes to the smaller lr.

    Raises:
        KimiModelError: `runs` is empty.
    """
    if not runs:
        raise KimiModelError("best_lr needs at least one run; got none")
    return min(sorted(runs), key=lambda lr: final_loss(runs[lr]))


def lr_sweep(
    run: Callable[[float], TrainResult],
    grid: Sequence[float],
    *,
    max_lrs: int,
    step: float = LR_STEP,
) -> tuple[dict[float, TrainResult], bool]:
    """Train `run(lr)` at each lr of `grid`; while the best sits at an edge, add the next lr
    beyond it (× or ÷ `step`, to 2 significant figures), up to `max_lrs` runs, so the edge of
    a guessed grid is not reported as the optimum. Returns the runs by lr and whether the
    best ended with a worse lr on each side (bracketed).

    Raises:
        KimiModelError: `grid` is empty or has a non-positive lr, or `step` is not above 1.
    """
    if not grid or min(grid) <= 0 or step <= 1:
        raise KimiModelError(f"lr_sweep needs positive lrs and a step > 1; got {grid}, {step}")
    runs: dict[float, TrainResult] = {}
    todo = list(dict.fromkeys(grid))
    while todo:
        lr = todo.pop(0)
        runs[lr] = run(lr)
        lrs, best = sorted(runs), best_lr(runs)
        if not todo and len(lrs) < max_lrs and best in (lrs[0], lrs[-1]):
            nxt = float(f"{best * step if best == lrs[-1] else best / step:.2g}")
            todo += [] if nxt in runs else [nxt]
    lrs, best = sorted(runs), best_lr(runs)
    return runs, lrs[0] < best < lrs[-1]


def sweep_table(first: str, sweeps: Mapping[str, Mapping[float, TrainResult]]) -> list[str]:
    """One row per (label, lr): final eval loss, the gap to that label's best lr, wall time."""
    rows = []
    for label, runs in sweeps.items():
        best = best_lr(runs)
        for lr in sorted(runs):
            gap = final_loss(runs[lr]) - final_loss(runs[best])
            rows.append([label, f"{lr:.2e}" + (" (best)" if lr == best else ""),
                         fmt(runs[lr].final_eval_loss, 4), fmt_signed(gap),
                         fmt(runs[lr].wall_time_s, 0)])  # fmt: skip
    return md_table([first, "lr", "final eval loss", "vs best", "wall (s)"], rows)


# ---- curves --------------------------------------------------------------------------------
def eval_curve(result: TrainResult) -> Curve:
    """`(tokens, eval_loss)` at every eval of a run, step 0 included."""
    return [(float(r["tokens"]), float(r["eval_loss"])) for r in result.metrics if "eval_loss" in r]


def metric_series(result: TrainResult, key: str) -> Curve:
    """`(step, value)` for every metrics row that has `key`."""
    return [(float(r["step"]), float(r[key])) for r in result.metrics if key in r]


def tokens_to_reach(curve: Curve, target: float) -> float | None:
    """Training tokens at which the eval curve first gets down to `target`, interpolating
    linearly between the two evals around the crossing; None if it never does.

    Raises:
        KimiModelError: the curve's token counts do not increase.
    """
    if any(b[0] <= a[0] for a, b in itertools.pairwise(curve)):
        raise KimiModelError(f"curve tokens must increase; got {[t for t, _ in curve]}")
    prev: tuple[float, float] | None = None
    for tokens, loss in curve:
        if loss <= target:
            if prev is None:
                return tokens
            t0, l0 = prev  # l0 > target ≥ loss
            return t0 + (l0 - target) / (l0 - loss) * (tokens - t0)
        prev = (tokens, loss)
    return None


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    """`numerator / denominator`, None when either is missing (e.g. a target never reached)."""
    if numerator is None or denominator is None or denominator == 0:
        return None
    return numerator / denominator


# ---- formatting ----------------------------------------------------------------------------
def fmt(x: float | None, digits: int = 3, suffix: str = "") -> str:
    """A number for a table; "not reached" for None, "diverged" for inf or NaN."""
    if x is None:
        return "not reached"
    return f"{x:,.{digits}f}{suffix}" if math.isfinite(x) else "diverged"


def fmt_signed(x: float, digits: int = 4) -> str:
    """A difference with its sign; "diverged" when a side of it was inf or NaN."""
    return f"{x:+.{digits}f}" if math.isfinite(x) else "diverged"


def fmt_tokens(n: float | None) -> str:
    if n is None:
        return "not reached"
    if n < 1e4:
        return f"{n:,.0f}"
    return f"{n / 1e6:.2f}M" if n >= 1e6 else f"{n / 1e3:,.0f}k"


def fmt_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def md_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A Markdown table; the first column left-aligned, the others right-aligned."""
    return [
        "| " + " | ".join(headers) + " |",
        "|" + "|".join(["---"] + ["---:"] * (len(headers) - 1)) + "|",
        *("| " + " | ".join(r) + " |" for r in rows),
    ]


def page_header(title: str, script: str, argv: Sequence[str]) -> list[str]:
    """The house header: the command that wrote the page, the machine and the date."""
    cmd = f"python benchmarks/experiments/{script}" + "".join(f" {a}" for a in argv)
    env = (
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, "
        f"{os.cpu_count()} CPUs ({platform.processor() or platform.machine()}), "
        f"Python {platform.python_version()}, {dt.date.today().isoformat()}"
    )
    return [f"# {title} (`{cmd}`)", "", env + ".", ""]


def write_page(out_dir: Path, name: str, lines: Sequence[str]) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / name
    path.write_text("\n".join(lines).rstrip() + "\n", encoding="utf-8")
    return path


# ---- plots ---------------------------------------------------------------------------------
@dataclass
class Panel:
    """One subplot: labelled series of `(x, y)` points, an optional horizontal line."""

    title: str
    xlabel: str
    ylabel: str
    series: dict[str, Curve] = field(default_factory=dict)
    hline: tuple[float, str] | None = None
    logx: bool = False
    logy: bool = False
    markers: bool = False


def save_plot(path: Path, panels: Sequence[Panel]) -> Path:
    """Side-by-side panels into a PNG (matplotlib's Agg backend: no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.2), squeeze=False)
    for ax, panel in zip(axes[0], panels, strict=True):
        for label, points in panel.series.items():
            xs, ys = [x for x, _ in points], [y for _, y in points]
            ax.plot(xs, ys, label=label, linewidth=1.2, marker="o" if panel.markers else None)
        if panel.hline is not None:
            value, label = panel.hline
            ax.axhline(value, color="grey", linestyle="--", linewidth=1, label=label)
        if panel.logx:
            ax.set_xscale("log")
        if panel.logy:
            ax.set_yscale("log")
        ax.set(title=panel.title, xlabel=panel.xlabel, ylabel=panel.ylabel)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# ---- command line --------------------------------------------------------------------------
def parse_args(
    argv: Sequence[str] | None, description: str
) -> tuple[argparse.Namespace, list[str]]:
    """`--quick` (a smoke run of a few steps, what the tests use) and `--out-dir` (a new
    temporary folder without it); returns the options and the flags that change what runs
    (for the page header)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="a few steps only (smoke test)")
    add_out_dir_option(parser)
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    args.out_dir = out_dir(args.out_dir)
    return args, ["--quick"] if args.quick else []
