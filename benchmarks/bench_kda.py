"""Kimi Delta Attention on CPU: chunkwise PyTorch vs the token-by-token reference, decode-step
latency, and the memory of a KDA state against a full-attention KV cache.

    python benchmarks/bench_kda.py [--quick] [--runs 5] [--out PATH]

1. Prefill (forward, no grad) at T ∈ {1k, 4k, 16k}: `torch_chunk_kda` against `naive_kda`
   on the same inputs (B = 1, H = 4, K = V = 128, fp32, realistic gates), both measured in
   this run; one warm-up call each, then `--runs` timed calls (naive: fewer at long T); the
   ratio is of the best calls (the machine is shared and noisy), medians shown too.
   A second table varies the head sizes at T = 4k.
2. Decode: one token for 1, 64 and 1,024 sequences at the model's KDA layer size (H = 32,
   K = V = 128) through `kda` (on CPU the recurrent reference), state updated in place.
3. Memory per sequence for one layer: the KDA state (fp32 H·K·V, plus the short-conv state)
   against a full-attention KV cache of the same dims (bf16 K and V, H heads of 128) and the
   Kimi Linear MLA cache (kv_lora_rank 512 + rope 64, bf16), at T ∈ {4k, 32k, 1M}.

Prints the page; `--out benchmarks/results/kda.md` writes the committed one (GPU figures come
from benchmarks/gpu_kda.py).
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks._results import add_out_option, publish  # noqa: E402
from kimmy_swarm.kernels.kda import kda, kda_gate, l2norm, naive_kda, torch_chunk_kda  # noqa: E402

MODEL_H, MODEL_D = 32, 128  # Kimi Linear KDA layer: 32 heads of 128
CONV_W = 4  # short convolution width (its state keeps W - 1 inputs of q, k and v)


def make_inputs(b: int, t: int, h: int, kd: int, vd: int, seed: int = 0) -> dict[str, torch.Tensor]:
    """fp32 inputs with unit-norm q, k and a gate drawn like fla's initialisation."""
    gen = torch.Generator().manual_seed(seed)
    a_log = torch.empty(h).uniform_(1, 16, generator=gen).log()
    dt_ = torch.empty(h * kd).uniform_(math.log(1e-3), math.log(0.1), generator=gen).exp()
    dt_bias = dt_ + torch.log(-torch.expm1(-dt_))
    return {
        "q": l2norm(torch.randn(b, t, h, kd, generator=gen)),
        "k": l2norm(torch.randn(b, t, h, kd, generator=gen)),
        "v": torch.randn(b, t, h, vd, generator=gen),
        "g": kda_gate(torch.randn(b, t, h, kd, generator=gen), a_log, dt_bias),
        "beta": torch.rand(b, t, h, generator=gen),
    }


def timed(fn: Callable[[], object], runs: int) -> list[float]:
    """One warm-up call (first-touch page faults), then `runs` timed calls, in seconds."""
    fn()
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def _call(fn: Callable, inp: dict[str, torch.Tensor]) -> Callable[[], object]:
    args = [inp[n] for n in ("q", "k", "v", "g", "beta")]
    return lambda: fn(*args, output_final_state=True)


@torch.no_grad()
def bench_prefill(ts: list[int], dims: tuple[int, int, int], runs: int) -> list[dict]:
    """Best and median seconds of chunk and naive forward at each T, and their ratio."""
    h, kd, vd = dims
    rows = []
    for t in ts:
        inp = make_inputs(1, t, h, kd, vd)
        chunk = timed(_call(torch_chunk_kda, inp), runs)
        naive_runs = max(1, runs // 2) if t > 4096 else runs
        naive = timed(_call(naive_kda, inp), naive_runs)
        c, n = min(chunk), min(naive)
        rows.append(
            {
                "T": t,
                "H": h,
                "K": kd,
                "V": vd,
                "chunk": c,
                "chunk_med": statistics.median(chunk),
                "naive": n,
                "naive_med": statistics.median(naive),
                "naive_runs": naive_runs,
                "ratio": n / c,
            }
        )
        print(f"prefill T={t} H={h} K={kd} V={vd}: chunk {c:.3f}s naive {n:.3f}s ×{n / c:.1f}")
    return rows


@torch.no_grad()
def bench_decode(batches: list[int], runs: int) -> list[dict]:
    """Best and median latency of one decode step (1 token per sequence) through `kda`."""
    rows = []
    for n in batches:
        inp = make_inputs(n, 1, MODEL_H, MODEL_D, MODEL_D, seed=n)
        state = torch.zeros(n, MODEL_H, MODEL_D, MODEL_D)
        args = [inp[x] for x in ("q", "k", "v", "g", "beta")]

        def step(args: list[torch.Tensor] = args, state: torch.Tensor = state) -> object:
            return kda(*args, initial_state=state, output_final_state=True)

        times = timed(step, runs)
        lat = min(times)
        rows.append({"N": n, "step": lat, "median": statistics.median(times), "per_seq": lat / n})
        print(f"decode N={n}: {lat * 1e3:.2f} ms/step, {lat / n * 1e6:.1f} µs/sequence")
    return rows


def memory_rows(ts: list[int]) -> list[dict]:
    """Bytes per sequence for one layer: KDA state vs KV caches (from the tensors' sizes)."""
    state = torch.empty(1, MODEL_H, MODEL_D, MODEL_D, dtype=torch.float32)  # (N, H, K, V)
    conv = torch.empty(1, 3 * MODEL_H * MODEL_D, CONV_W - 1, dtype=torch.bfloat16)  # q, k, v
    kda_bytes = state.nbytes + conv.nbytes
    kv_token = torch.empty(2, MODEL_H, MODEL_D, dtype=torch.bfloat16).nbytes  # K and V
    mla_token = torch.empty(512 + 64, dtype=torch.bfloat16).nbytes  # latent + shared rope key
    return [{"T": t, "kda": kda_bytes, "kv": kv_token * t, "mla": mla_token * t} for t in ts]


def _fmt_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def _prefill_table(rows: list[dict]) -> list[str]:
    out = [
        "| T | H | K = V | chunk best (s) | chunk median (s) | naive best (s) | naive median (s) "
        "| naive runs | naive / chunk (best) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        out.append(
            f"| {r['T']:,} | {r['H']} | {r['K']} | {r['chunk']:.3f} | {r['chunk_med']:.3f} "
            f"| {r['naive']:.3f} | {r['naive_med']:.3f} | {r['naive_runs']} | {r['ratio']:.1f}× |"
        )
    return out


def _target_line(rows: list[dict]) -> str:
    at_4k = next((r for r in rows if r["T"] == 4096), None)
    if at_4k is None:
        return "Issue target (chunk ≥ 10× naive at T = 4k): not measured in this run."
    verdict = "met" if at_4k["ratio"] >= 10 else "not met"
    return (
        f"Issue target (chunk ≥ 10× naive at T = 4k, H = {at_4k['H']}, K = V = {at_4k['K']}): "
        f"{verdict} on this machine ({at_4k['ratio']:.1f}×)."
    )


def _memory_section(mem: list[dict]) -> list[str]:
    return [
        "## Memory per sequence, one layer (H = 32, head dim 128)",
        "",
        "KDA: fp32 state H·K·V plus the short-conv state (3 × H·K × (W − 1) bf16), constant "
        "in T. Full attention: bf16 K and V for every token (H = 32 heads of 128, no GQA). "
        "MLA (Kimi Linear's full-attention layers): 512 latent + 64 rope dims per token, "
        "bf16. Sizes from the tensors' byte counts (not allocated at 1M).",
        "",
        "| T | KDA state | full-attention KV | KV / KDA | MLA cache | MLA / KDA |",
        "|---:|---:|---:|---:|---:|---:|",
        *(
            f"| {r['T']:,} | {_fmt_bytes(r['kda'])} | {_fmt_bytes(r['kv'])} | "
            f"{r['kv'] / r['kda']:,.0f}× | {_fmt_bytes(r['mla'])} | {r['mla'] / r['kda']:,.1f}× |"
            for r in mem
        ),
    ]


def render(
    prefill: list[dict],
    dims_rows: list[dict],
    decode: list[dict],
    mem: list[dict],
    argv: list[str],
    runs: int,
) -> str:
    """The results page in Markdown."""
    env = (
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, "
        f"{os.cpu_count()} CPUs ({platform.processor() or platform.machine()}), "
        f"Python {platform.python_version()}, {dt.date.today().isoformat()}"
    )
    cmd = "python benchmarks/bench_kda.py" + ("" if not argv else " " + " ".join(argv))
    lines = [
        f"# KDA kernels on CPU (`{cmd}`)",
        "",
        env + ".",
        "",
        "## Prefill: chunkwise PyTorch vs the token-by-token reference",
        "",
        f"Forward only (no grad), B = 1, fp32, unit-norm q/k, gates as fla initialises them. "
        f"{runs} timed calls after a warm-up (naive: fewer above T = 4k); both paths measured "
        "in this run on the same inputs. The ratio uses the best call of each, as this shared "
        "2-core machine's timings are noisy (the medians are shown beside them).",
        "",
        *_prefill_table(prefill),
        "",
        _target_line(prefill),
        "",
        "Why the margin is modest at K = V = 128: per token and head the chunked form does "
        "about 4 GEMM products of K·V multiply-adds (W S, Q S, Kᵀ V′, P V′) where the "
        "recurrence does ~6 element-wise passes over the K×V state, so on CPU its gain is "
        "GEMM versus element-wise (and Python-loop) throughput; smaller heads or fewer of "
        "them leave more of the recurrence's per-step overhead to win back. On GPUs the "
        "chunked form's GEMMs run on tensor cores and all chunks in parallel.",
        "",
        "Head sizes at T = 4,096 (same method):",
        "",
        *_prefill_table(dims_rows),
        "",
        "## Decode: one token per sequence, one KDA layer (H = 32, K = V = 128)",
        "",
        "Through `kda(...)`, which on CPU takes the recurrent reference path; the state "
        "(fp32) is passed in and the new one returned.",
        "",
        "| sequences | step, best (ms) | step, median (ms) | per sequence, best (µs) |",
        "|---:|---:|---:|---:|",
        *(
            f"| {r['N']:,} | {r['step'] * 1e3:.2f} | {r['median'] * 1e3:.2f} "
            f"| {r['per_seq'] * 1e6:.1f} |"
            for r in decode
        ),
        "",
        *_memory_section(mem),
        "",
        "## GPU",
        "",
        "Not measured here (no accelerator in this session). `python benchmarks/gpu_kda.py` "
        "checks the Triton kernels at B = 8, T = 4,096, H = 16, K = V = 128 in bf16 and times "
        "them against the PyTorch chunk path, flash-linear-attention and SDPA.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, print the results page (and write it where `--out` says)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="T ∈ {1k, 4k}, decode 1/64")
    parser.add_argument("--runs", type=int, default=5, help="timed calls per measurement")
    add_out_option(parser, "kda.md")
    args = parser.parse_args(argv)
    raw = sys.argv[1:] if argv is None else argv
    ts = [1024, 4096] if args.quick else [1024, 4096, 16384]
    prefill = bench_prefill(ts, (4, 128, 128), args.runs)
    dims = [(4, 64, 64), (16, 128, 128)] if not args.quick else [(4, 64, 64)]
    dims_rows = [r for d in dims for r in bench_prefill([4096], d, args.runs)]
    dims_rows += [r for r in prefill if r["T"] == 4096]  # H = 4, K = V = 128, measured above
    dims_rows.sort(key=lambda r: (r["K"], r["H"]))
    decode = bench_decode([1, 64] if args.quick else [1, 64, 1024], args.runs)
    mem = memory_rows([4096, 32768, 1 << 20])
    page = render(prefill, dims_rows, decode, mem, raw, args.runs)
    publish(page + "\n", args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
