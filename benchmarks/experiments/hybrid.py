"""Hybrid 3:1 KDA:MLA vs all-MLA vs all-KDA at similar parameter counts: held-out loss,
training and decoding throughput, and cache bytes per sequence at long context.

    python benchmarks/experiments/hybrid.py [--quick] [--out-dir DIR]

Method: three 4-layer dense models of the same width whose attention layers differ —
KDA, KDA, KDA, MLA (Kimi Linear's 3:1 schedule), all MLA, all KDA. The hybrid keeps the
default FFN width; the other two get the FFN width that brings their parameter count nearest
the hybrid's (the counts are reported). Each trains on two seeds with the same MuonClip
schedule and batches. Throughput: training tokens/s from the training loop (steps only, no
eval); decode tokens/s through `generate` with the hybrid cache (batch 1, greedy), as
(new − 1) / (t(new tokens) − t(1 token)) so the prompt's prefill cancels, at a short and a
long prompt. Cache: `cache_bytes_per_sequence` (bf16 latents and conv states, fp32 KDA
state) at 4k / 32k / 128k, checked against `cache.nbytes()` after a real prefill (fp32, as
these models run), and the same formula for the published 48B shape.

Writes benchmarks/results/exp_hybrid.md and exp_hybrid.png.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch

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
    fmt_bytes,
    fmt_signed,
    fmt_tokens,
    load_corpus,
    match_params,
    md_table,
    model_config,
    page_header,
    parse_args,
    save_plot,
    train_run,
    write_page,
)
from model import (  # noqa: E402
    KimiLinearConfig,
    KimiLinearForCausalLM,
    cache_bytes_per_sequence,
    hybrid_layers,
)
from model.train import TrainResult  # noqa: E402

NAME = "exp_hybrid"
KINDS = ("hybrid", "mla", "kda")
LABELS = {"hybrid": "hybrid 3:1 KDA:MLA", "mla": "all-MLA", "kda": "all-KDA"}
SEEDS = (0, 1)
CONTEXTS = (4096, 32768, 131072)


@dataclass(frozen=True)
class Scale(RunScale):
    decode_prompts: tuple[int, int]  # short and long prompt; the long one is also prefilled
    decode_new: int
    repeats: int


FULL = Scale(
    hidden=64, steps=240, batch=8, seq_len=64, eval_every=20, eval_batches=8, warmup=12,
    lr=8e-3, decode_prompts=(128, 2048), decode_new=64, repeats=3,
)  # fmt: skip
QUICK = Scale(
    hidden=32, steps=3, batch=2, seq_len=16, eval_every=2, eval_batches=1, warmup=1,
    lr=8e-3, decode_prompts=(8, 32), decode_new=3, repeats=1,
)  # fmt: skip
LAYERS = 4


@dataclass
class Outcome:
    scale: Scale
    configs: dict[str, KimiLinearConfig]
    runs: dict[str, list[TrainResult]] = field(default_factory=dict)
    decode: dict[str, dict[int, float]] = field(default_factory=dict)  # kind → prompt → tok/s
    measured: dict[str, tuple[int, int]] = field(default_factory=dict)  # (nbytes, analytic)
    wall_s: float = 0.0


def configs(vocab_size: int, scale: Scale) -> dict[str, KimiLinearConfig]:
    """The hybrid at the default FFN width; all-MLA and all-KDA widened or narrowed to the
    parameter count nearest the hybrid's."""

    def make(kind: str, width: int) -> KimiLinearConfig:
        return model_config(
            vocab_size, kind=kind, layers=LAYERS, hidden=scale.hidden, intermediate=width
        )

    hybrid = make("hybrid", 2 * scale.hidden)
    target = count_params(hybrid)
    widths = range(scale.hidden // 2, 6 * scale.hidden + 1, 2)
    out = {"hybrid": hybrid}
    for kind in ("mla", "kda"):
        out[kind], _ = match_params(lambda w, k=kind: make(k, w), target, widths)
    return out


@torch.no_grad()
def decode_tokens_per_s(
    model: KimiLinearForCausalLM, prompt: torch.Tensor, new: int, repeats: int
) -> float:
    """Greedy decode rate with the cache; prefill cancels in t(new) − t(1)."""
    model.eval()

    def best(n: int) -> float:
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            model.generate(prompt, max_new_tokens=n, eos_token_id=-1)  # (1, T + n)
            times.append(time.perf_counter() - t0)
        return min(times)

    return (new - 1) / max(best(new) - best(1), 1e-9)


@torch.no_grad()
def measured_cache(model: KimiLinearForCausalLM, prompt: torch.Tensor) -> tuple[int, int]:
    """`cache.nbytes()` after prefilling `prompt [1, T]`, and the formula at fp32."""
    cache = model.new_cache()
    model(prompt, cache=cache)  # (1, T, V)
    analytic = cache_bytes_per_sequence(model.config, prompt.shape[1], dtype_bytes=4, state_bytes=4)
    return cache.nbytes(), analytic


def experiment(scale: Scale) -> Outcome:
    """Train every layout on every seed; decode and cache measurements on the seed-0 models."""
    start = time.perf_counter()
    corpus = load_corpus()
    out = Outcome(scale, configs(corpus.vocab_size, scale))
    long_prompt = corpus.eval.tokens[None, : scale.decode_prompts[1]]  # (1, T_long)
    for kind, config in out.configs.items():
        out.runs[kind] = []
        for seed in SEEDS:
            model, result = train_run(
                config, corpus, scale.train_config(seed=seed), f"{kind} seed {seed}"
            )
            out.runs[kind].append(result)
            if seed == 0:
                out.decode[kind] = {
                    n: decode_tokens_per_s(
                        model, long_prompt[:, :n], scale.decode_new, scale.repeats
                    )
                    for n in scale.decode_prompts
                }
                out.measured[kind] = measured_cache(model, long_prompt)
    out.wall_s = time.perf_counter() - start
    return out


# ---- the page ------------------------------------------------------------------------------
def _mean_final(out: Outcome, kind: str) -> float:
    return statistics.fmean(final_loss(r) for r in out.runs[kind])


def _train_tps(out: Outcome, kind: str) -> float:
    return statistics.fmean(r.tokens_per_s for r in out.runs[kind])


def _layout(config: KimiLinearConfig) -> str:
    types = config.layer_types
    return f"{types.count('kda')}:{types.count('mla')}"


def _quality_table(out: Outcome) -> list[str]:
    base = _mean_final(out, "mla")
    rows = []
    for kind, config in out.configs.items():
        finals = [final_loss(r) for r in out.runs[kind]]
        rows.append(
            [LABELS[kind], _layout(config), str(config.intermediate_size),
             f"{count_params(config):,}", f"{count_params(config, exclude_embeddings=True):,}",
             " / ".join(fmt(x, 4) for x in finals), fmt(_mean_final(out, kind), 4),
             fmt_signed(_mean_final(out, kind) - base)]
        )  # fmt: skip
    headers = [
        "model", "KDA:MLA", "FFN width", "parameters", "non-embedding",
        "final eval loss (seeds 0 / 1)", "mean", "Δ vs all-MLA",
    ]  # fmt: skip
    return md_table(headers, rows)


def _speed_table(out: Outcome) -> list[str]:
    short, long = out.scale.decode_prompts
    rows = []
    for kind in out.configs:
        tps, dec = _train_tps(out, kind), out.decode[kind]
        rows.append(
            [LABELS[kind], f"{tps:,.0f}", f"{tps / _train_tps(out, 'mla'):.2f}×",
             f"{dec[short]:,.0f}", f"{dec[short] / out.decode['mla'][short]:.2f}×",
             f"{dec[long]:,.0f}", f"{dec[long] / out.decode['mla'][long]:.2f}×"]
        )  # fmt: skip
    headers = [
        "model", "train tokens/s", "vs all-MLA", f"decode tokens/s, {short:,}-token prompt",
        "vs all-MLA", f"decode tokens/s, {long:,}-token prompt", "vs all-MLA",
    ]  # fmt: skip
    return md_table(headers, rows)


def _cache_rows(layouts: dict[str, KimiLinearConfig]) -> list[list[str]]:
    mla = layouts["all-MLA"]
    rows = []
    for label, config in layouts.items():
        cells = [label]
        for t in CONTEXTS:
            b, m = cache_bytes_per_sequence(config, t), cache_bytes_per_sequence(mla, t)
            cells += [fmt_bytes(b), f"{b / m:.3f}×"]
        rows.append(cells)
    return rows


def _cache_table(layouts: dict[str, KimiLinearConfig]) -> list[str]:
    headers = ["layout"]
    for t in CONTEXTS:
        headers += [f"{t // 1024}k context", "vs all-MLA"]
    return md_table(headers, _cache_rows(layouts))


def _measured_table(out: Outcome) -> list[str]:
    n = out.scale.decode_prompts[1]
    rows = [
        [LABELS[k], f"{m:,}", f"{a:,}", "yes" if m == a else f"no ({m - a:+,} B)"]
        for k, (m, a) in out.measured.items()
    ]
    headers = ["model", f"cache.nbytes() after a {n:,}-token prefill", "formula (fp32)", "equal"]
    return md_table(headers, rows)


def published_layouts() -> dict[str, KimiLinearConfig]:
    """The 48B-A3B shape (27 layers; KDA 32 heads × 128; MLA latent 512 + rope 64)."""
    base = KimiLinearConfig()
    lac = {k: hybrid_layers(27, num_heads=32, head_dim=128, kind=k) for k in ("hybrid", "kda")}
    return {
        "hybrid 3:1 (20 KDA + 7 MLA)": base.replace(linear_attn_config=lac["hybrid"]),
        "all-MLA": base,
        "all-KDA": base.replace(linear_attn_config=lac["kda"]),
    }


def _quality(out: Outcome) -> str:
    hyb, mla, kda = (_mean_final(out, k) for k in KINDS)
    counts = [count_params(c) for c in out.configs.values()]
    spread = (max(counts) - min(counts)) / min(counts)
    noise = max(abs(final_loss(a) - final_loss(b)) for a, b in (r[:2] for r in out.runs.values()))
    gap = hyb - mla
    return (
        f"Quality: with parameter counts within {spread:.1%} of each other, the hybrid ended at "
        f"{fmt(hyb, 4)}, all-MLA at {fmt(mla, 4)} and all-KDA at {fmt(kda, 4)} (mean of 2 "
        "seeds). The seed article's claim that the hybrid outperforms MLA "
        + ("holds here" if gap < 0 else "does not hold here")
        + f" (Δ {fmt_signed(gap)}), a gap "
        + ("well outside" if abs(gap) > 2 * noise else "within")
        + f" the largest seed-to-seed difference of one model ({fmt(noise, 4)}). Kimi Linear's "
        "comparison is at the 48B-A3B scale; a 4-layer model with 16-wide KDA "
        "heads and " + f"{load_corpus().passes(out.scale.tokens):.1f} passes over "
        f"{fmt_tokens(len(load_corpus().train))} tokens is where a fixed-size recurrent state is "
        "weakest against full attention, so this says little about the large-scale claim. "
        f"All three train at one MuonClip lr ({out.scale.lr:g}, the optimum of the 4-layer "
        "all-MLA model in exp_muonclip), not one tuned per layout."
    )  # fmt: skip


def _speed(out: Outcome) -> str:
    short, long = out.scale.decode_prompts
    train = {k: _train_tps(out, k) / _train_tps(out, "mla") for k in KINDS}
    keep = {k: out.decode[k][long] / out.decode[k][short] for k in KINDS}
    at_long = {k: out.decode[k][long] / out.decode["mla"][long] for k in KINDS}
    return (
        f"Speed on this CPU: training runs at {train['hybrid']:.2f}× (hybrid) and "
        f"{train['kda']:.2f}× (all-KDA) the all-MLA rate — KDA's chunked recurrence is "
        "element-wise work and small solves where MLA's attention is one fused SDPA call. "
        f"Decoding after a {long:,}-token prompt instead of {short:,}, all-MLA keeps "
        f"{keep['mla']:.2f}× of its short-prompt rate (its work per token grows with the "
        f"context it attends over), all-KDA {keep['kda']:.2f}× and the hybrid "
        f"{keep['hybrid']:.2f}×. At {long:,} tokens the hybrid decodes at {at_long['hybrid']:.2f}× "
        f"and all-KDA at {at_long['kda']:.2f}× the all-MLA rate: "
        + ("KDA's constant-cost step already wins at this context."
           if at_long["kda"] > 1 else
           "a KDA step (several small ops per head on a tiny state) still costs more than "
           "attending over this many latents, so Kimi Linear's up-to-6× decoding speed-up at "
           "1M context is beyond what this CPU run can reach; the trend is the part it shows.")
    )  # fmt: skip


def _findings(out: Outcome) -> list[str]:
    tiny = {LABELS[k]: c for k, c in out.configs.items()}
    at = {k: cache_bytes_per_sequence(c, CONTEXTS[-1]) for k, c in tiny.items()}
    saving = 1 - at[LABELS["hybrid"]] / at[LABELS["mla"]]
    big = {k: cache_bytes_per_sequence(c, CONTEXTS[-1]) for k, c in published_layouts().items()}
    big_saving = 1 - min(v for k, v in big.items() if k.startswith("hybrid")) / big["all-MLA"]
    cache = (
        f"Cache: the hybrid holds {saving:.1%} less than all-MLA at {CONTEXTS[-1] // 1024}k "
        f"tokens here and {big_saving:.1%} less at the 48B shape (Kimi Linear: up to 75% less; "
        "7 of its 27 layers are MLA, and its 32×128×128 fp32 KDA states are not free at short "
        "context) — only MLA layers grow with context; all-KDA is constant. The formula "
        "matches `cache.nbytes()` after a real prefill "
        + ("exactly for all three." if all(m == a for m, a in out.measured.values())
           else "NOT for every model (see the table).")
    )  # fmt: skip
    return [_quality(out), "", _speed(out), "", cache]


def render(out: Outcome, argv: Sequence[str]) -> list[str]:
    s = out.scale
    tokens = s.tokens
    tiny = {LABELS[k]: c for k, c in out.configs.items()}
    return [
        *page_header("Hybrid 3:1 KDA:MLA vs all-MLA vs all-KDA", Path(__file__).name, argv),
        f"Models: {LAYERS} layers, hidden {s.hidden}, 4 heads (KDA head 16; MLA latent 32 + "
        f"rope 8), dense FFN. Each run: MuonClip lr {s.lr:g}, {s.steps} steps × "
        f"{s.batch}×{s.seq_len} tokens ({fmt_tokens(tokens)}, "
        f"{load_corpus().passes(tokens):.1f} passes over the Python-docs training tokens), eval "
        f"on {s.eval_batches * s.batch * s.seq_len:,} held-out tokens. Decode: batch 1, "
        f"greedy, {s.decode_new} new tokens, best of {s.repeats}. All of this page took "
        f"{out.wall_s:.0f} s.",
        "",
        "## Held-out loss at similar parameter counts",
        "",
        *_quality_table(out),
        "",
        "## Throughput (CPU, fp32)",
        "",
        *_speed_table(out),
        "",
        "## Cache bytes per sequence",
        "",
        "These models, from `cache_bytes_per_sequence` (bf16 MLA latents and conv states, "
        "fp32 KDA state):",
        "",
        *_cache_table(tiny),
        "",
        "The formula against the allocated cache of the trained seed-0 models (fp32 weights, "
        "so every cached tensor is fp32):",
        "",
        *_measured_table(out),
        "",
        "The same formula at the published Kimi-Linear-48B-A3B shape:",
        "",
        *_cache_table(published_layouts()),
        "",
        *_findings(out),
    ]


def plot(out: Outcome, path: Path) -> Path:
    curves = Panel("Eval loss (seed 0)", "training tokens", "eval loss")
    curves.series = {LABELS[k]: eval_curve(out.runs[k][0])[1:] for k in KINDS}
    cache = Panel("Cache bytes per sequence (these models)", "context tokens", "bytes",
                  logx=True, logy=True, markers=True)  # fmt: skip
    ctx = [1024, *CONTEXTS]
    cache.series = {
        LABELS[k]: [(float(t), float(cache_bytes_per_sequence(c, t))) for t in ctx]
        for k, c in out.configs.items()
    }
    return save_plot(path, [curves, cache])


def main(argv: Sequence[str] | None = None) -> int:
    """Run every layout, write the page and the plot."""
    args, shown = parse_args(argv, __doc__.split("\n\n")[0])
    out = experiment(QUICK if args.quick else FULL)
    page = write_page(args.out_dir, f"{NAME}.md", render(out, shown))
    plot(out, args.out_dir / f"{NAME}.png")
    print(f"wrote {page} and {NAME}.png ({out.wall_s:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
