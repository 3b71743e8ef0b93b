"""The inference half of the hybrid experiment (exp_hybrid), what the cache costs: bytes per
sequence from `cache_bytes_per_sequence` at 4k / 32k / 128k, the formula checked against
`cache.nbytes()` after a real prefill, the same formula at the published Kimi-Linear-48B-A3B
shape, and the cached decode rate of the trained models, timed round-robin.

Kept apart from hybrid.py, which trains the models and writes the page, so that each file
stays small and so that benchmarks/bench_serve.py can take `published_layouts` without the
training code. Tables are keyed by a display label; ratios are against `MLA` ("all-MLA").
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.experiments._common import Panel, fmt_bytes, md_table  # noqa: E402
from kimmy_swarm.model import (  # noqa: E402
    KimiLinearConfig,
    KimiLinearForCausalLM,
    cache_bytes_per_sequence,
    hybrid_layers,
)
from kimmy_swarm.model.errors import KimiModelError  # noqa: E402

CONTEXTS = (4096, 32768, 131072)
MLA = "all-MLA"  # the label every "vs all-MLA" ratio divides by
Measured = tuple[int, int]  # (cache.nbytes() after a prefill, the formula at fp32)


@torch.no_grad()
def measured_cache(model: KimiLinearForCausalLM, prompt: torch.Tensor) -> Measured:
    """`cache.nbytes()` after prefilling `prompt [1, T]`, and the formula at fp32 (the dtype
    these models run in), so the page can show the formula is the allocated size."""
    cache = model.new_cache()
    model(prompt, cache=cache)  # (1, T, V)
    analytic = cache_bytes_per_sequence(model.config, prompt.shape[1], dtype_bytes=4, state_bytes=4)
    return cache.nbytes(), analytic


@torch.no_grad()
def _decode_rate(model: KimiLinearForCausalLM, prompt: torch.Tensor, new: int) -> float:
    """Tokens/s of the cached decode steps of one greedy `generate` of `new` tokens after
    `prompt [1, T]`. `generate` runs one forward for the prefill, then one per new token; a
    forward pre-hook stamps the start of the second, so the clock covers the new − 1 cached
    steps (with `generate`'s own sampling and bookkeeping) and never the prefill. Differencing
    two calls, t(new) − t(1), would also remove the prefill, but it subtracts two timings that
    both hold the prefill's jitter, which at a long prompt swamps the few decode steps."""
    starts: list[float] = []
    handle = model.register_forward_pre_hook(lambda *_: starts.append(time.perf_counter()))
    try:
        model.generate(prompt, max_new_tokens=new, eos_token_id=-1)  # (1, T + new)
        end = time.perf_counter()
    finally:
        handle.remove()
    return (new - 1) / max(end - starts[1], 1e-9)


def decode_rounds(
    models: Mapping[str, KimiLinearForCausalLM],
    prompts: Sequence[torch.Tensor],
    *,
    new: int,
    rounds: int,
) -> dict[str, dict[int, list[float]]]:
    """Greedy decode tokens/s (`_decode_rate`) of every model at every prompt `[1, T]`, once
    per round, the models taken round-robin (A, B, C, A, B, C, …) so that machine-load drift
    during the measurement lands on all of them alike instead of on whichever ran at the
    time; one untimed call per model and prompt warms up first. Returns model → prompt
    length → one rate per round.

    Raises:
        KimiModelError: `new` < 2 (no decode step to time) or `rounds` < 1.
    """
    if new < 2 or rounds < 1:
        raise KimiModelError(f"decode_rounds needs new >= 2 and rounds >= 1; got {new}, {rounds}")
    for model in models.values():
        model.eval()
        for prompt in prompts:
            _decode_rate(model, prompt, 2)
    out: dict[str, dict[int, list[float]]] = {k: {p.shape[1]: [] for p in prompts} for k in models}
    for _ in range(rounds):
        for kind, model in models.items():
            for prompt in prompts:
                out[kind][prompt.shape[1]].append(_decode_rate(model, prompt, new))
    return out


def published_layouts() -> dict[str, KimiLinearConfig]:
    """The 48B-A3B shape (27 layers; KDA 32 heads × 128; MLA latent 512 + rope 64) as the
    hybrid, all-MLA and all-KDA, for the large-scale column of the cache comparison."""
    base = KimiLinearConfig()
    lac = {k: hybrid_layers(27, num_heads=32, head_dim=128, kind=k) for k in ("hybrid", "kda")}
    return {
        "hybrid 3:1 (20 KDA + 7 MLA)": base.replace(linear_attn_config=lac["hybrid"]),
        MLA: base,
        "all-KDA": base.replace(linear_attn_config=lac["kda"]),
    }


def _hybrid_label(layouts: Mapping[str, KimiLinearConfig]) -> str:
    """The one label of `layouts` that names the hybrid (it starts with "hybrid").

    Raises:
        KimiModelError: `layouts` lacks an all-MLA entry or has no or several hybrids.
    """
    hybrids = [k for k in layouts if k.startswith("hybrid")]
    if MLA not in layouts or len(hybrids) != 1:
        raise KimiModelError(
            f"cache layouts need one label starting with 'hybrid' and one {MLA!r}; "
            f"got {list(layouts)}"
        )
    return hybrids[0]


def cache_table(layouts: Mapping[str, KimiLinearConfig]) -> list[str]:
    """Bytes per sequence of each layout at `CONTEXTS` (bf16 latents and conv states, fp32
    KDA state), each with its ratio to all-MLA."""
    rows, mla = [], layouts[MLA]
    for label, config in layouts.items():
        rows.append([label])
        for t in CONTEXTS:
            b, m = cache_bytes_per_sequence(config, t), cache_bytes_per_sequence(mla, t)
            rows[-1] += [fmt_bytes(b), f"{b / m:.3f}×"]
    headers = ["layout", *(h for t in CONTEXTS for h in (f"{t // 1024}k context", "vs all-MLA"))]
    return md_table(headers, rows)


def measured_table(measured: Mapping[str, Measured], prefill: int) -> list[str]:
    """The allocated cache after a `prefill`-token prompt against the formula, per model."""
    rows = [
        [label, f"{m:,}", f"{a:,}", "yes" if m == a else f"no ({m - a:+,} B)"]
        for label, (m, a) in measured.items()
    ]
    headers = [
        "model", f"cache.nbytes() after a {prefill:,}-token prefill", "formula (fp32)", "equal",
    ]  # fmt: skip
    return md_table(headers, rows)


def cache_section(
    tiny: Mapping[str, KimiLinearConfig], measured: Mapping[str, Measured], prefill: int
) -> list[str]:
    """The page's "Cache bytes per sequence" section: these models, the check against the
    real cache, the published shape."""
    return [
        "## Cache bytes per sequence",
        "",
        "These models, from `cache_bytes_per_sequence` (bf16 MLA latents and conv states, "
        "fp32 KDA state):",
        "",
        *cache_table(tiny),
        "",
        "The formula against the allocated cache of the trained seed-0 models (fp32 weights, "
        "so every cached tensor is fp32):",
        "",
        *measured_table(measured, prefill),
        "",
        "The same formula at the published Kimi-Linear-48B-A3B shape:",
        "",
        *cache_table(published_layouts()),
    ]


def cache_finding(tiny: Mapping[str, KimiLinearConfig], measured: Mapping[str, Measured]) -> str:
    """The cache paragraph, from the numbers: the hybrid's saving at the longest context here
    and at the 48B shape, and whether the formula matched every real cache."""
    at = {k: cache_bytes_per_sequence(c, CONTEXTS[-1]) for k, c in tiny.items()}
    saving = 1 - at[_hybrid_label(tiny)] / at[MLA]
    big = published_layouts()
    big_at = {k: cache_bytes_per_sequence(c, CONTEXTS[-1]) for k, c in big.items()}
    big_saving = 1 - big_at[_hybrid_label(big)] / big_at[MLA]
    return (
        f"Cache: the hybrid holds {saving:.1%} less than all-MLA at {CONTEXTS[-1] // 1024}k "
        f"tokens here and {big_saving:.1%} less at the 48B shape (Kimi Linear: up to 75% less; "
        "7 of its 27 layers are MLA, and its 32×128×128 fp32 KDA states are not free at short "
        "context) — only MLA layers grow with context; all-KDA is constant. The formula "
        "matches `cache.nbytes()` after a real prefill "
        + ("exactly for all three." if all(m == a for m, a in measured.values())
           else "NOT for every model (see the table).")
    )  # fmt: skip


def cache_panel(tiny: Mapping[str, KimiLinearConfig]) -> Panel:
    """Bytes per sequence against context (log-log) for the plot's third panel."""
    panel = Panel("Cache bytes per sequence (these models)", "context tokens", "bytes",
                  logx=True, logy=True, markers=True)  # fmt: skip
    ctx = [1024, *CONTEXTS]
    panel.series = {
        label: [(float(t), float(cache_bytes_per_sequence(c, t))) for t in ctx]
        for label, c in tiny.items()
    }
    return panel
