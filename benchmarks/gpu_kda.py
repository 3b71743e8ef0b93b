"""KDA on a CUDA GPU: correctness at real shapes and timings against baselines.

    python benchmarks/gpu_kda.py [--out FILE] [--quick]

1. Correctness at B = 8, T = 4,096, H = 16, K = V = 128, bf16: the Triton chunk kernels'
   output, final state and all six gradients against the PyTorch chunk path in fp32 (itself
   checked against `naive_kda` in CI), the output on one sequence against `naive_kda`, and the
   fused recurrent decode kernel against `naive_kda`.
2. Timings (triton.testing.do_bench, median ms): our Triton chunk forward and forward +
   backward against our PyTorch chunk path, flash-linear-attention's `chunk_kda` (when
   `fla` imports) and PyTorch SDPA (causal, FlashAttention backend where available) at
   T ∈ {4k, 16k, 64k} (B·T ≈ 32k tokens, at least one sequence); decode steps for 1, 64 and
   1,024 sequences against fla's `fused_recurrent_kda`. Ratios are to our Triton kernels.

Without CUDA it prints a note and exits 0, so it can be imported and run anywhere.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from kimmy_swarm.kernels.kda import naive_kda, rel_err, torch_chunk_kda  # noqa: E402

NAMES = ("q", "k", "v", "g", "beta")
H, D = 16, 128


class Setup:
    """Where and how big: the real run, or `--dry-run` (CPU interpreter, tiny shapes)."""

    def __init__(self, dry_run: bool) -> None:
        self.device = "cpu" if dry_run else "cuda"
        self.b, self.t = (2, 80) if dry_run else (8, 4096)
        self.tokens = 160 if dry_run else 32768  # B·T per prefill timing
        self.dry_run = dry_run


SETUP = Setup(dry_run=False)


def make_inputs(b: int, t: int, dtype: torch.dtype, device: str, seed: int = 0) -> dict:
    """Unit-norm q/k, softplus gate like fla's init, β ∈ (0, 1), an initial state."""
    gen = torch.Generator(device=device).manual_seed(seed)

    def randn(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=gen, device=device)

    dt = torch.empty(H * D, device=device).uniform_(-6.9, -2.3, generator=gen).exp()
    dt_bias = dt + torch.log(-torch.expm1(-dt))
    a = torch.empty(H, 1, device=device).uniform_(1, 16, generator=gen)
    g = -a * torch.nn.functional.softplus(randn(b, t, H, D) + dt_bias.view(H, D))
    out = {
        "q": torch.nn.functional.normalize(randn(b, t, H, D), dim=-1).to(dtype),
        "k": torch.nn.functional.normalize(randn(b, t, H, D), dim=-1).to(dtype),
        "v": randn(b, t, H, D).to(dtype),
        "g": g.float(),
        "beta": torch.rand(b, t, H, generator=gen, device=device).to(dtype),
        "initial_state": randn(b, H, D, D) * 0.1,
    }
    return out


def _grads(fn: Callable, inp: dict, do: torch.Tensor, ds: torch.Tensor) -> tuple:
    leaves = {n: inp[n].detach().clone().requires_grad_() for n in (*NAMES, "initial_state")}
    o, s = fn(
        *(leaves[n] for n in NAMES), initial_state=leaves["initial_state"], output_final_state=True
    )
    ((o.float() * do).sum() + (s * ds).sum()).backward()
    return o.detach(), s.detach(), {n: x.grad for n, x in leaves.items()}


def check_correctness(lines: list[str]) -> None:
    """Triton vs the PyTorch chunk path (fp32) at B=8, T=4096, H=16, K=V=128, bf16 inputs."""
    from kimmy_swarm.kernels.kda.triton_chunk import triton_chunk_kda
    from kimmy_swarm.kernels.kda.triton_recurrent import triton_fused_recurrent_kda

    dev, b, t = SETUP.device, SETUP.b, SETUP.t
    inp = make_inputs(b, t, torch.bfloat16, dev)
    gen = torch.Generator(device=dev).manual_seed(1)
    do = torch.randn(b, t, H, D, generator=gen, device=dev)
    ds = torch.randn(b, H, D, D, generator=gen, device=dev)
    o, s, grads = _grads(triton_chunk_kda, inp, do, ds)
    ref32 = {n: (x.float() if x.is_floating_point() else x) for n, x in inp.items()}
    o_r, s_r, g_r = _grads(torch_chunk_kda, ref32, do, ds)
    lines += ["| quantity | relative error vs reference |", "|---|---:|"]
    lines.append(f"| o (vs PyTorch chunk, fp32) | {rel_err(o, o_r):.2e} |")
    lines.append(f"| final state | {rel_err(s, s_r):.2e} |")
    for n in g_r:
        lines.append(f"| d{n} | {rel_err(grads[n], g_r[n]):.2e} |")
    with torch.no_grad():
        one = {n: ref32[n][:1] for n in NAMES}
        o_n, _ = naive_kda(*(one[n] for n in NAMES), initial_state=ref32["initial_state"][:1])
        lines.append(f"| o, sequence 0 (vs naive_kda) | {rel_err(o[:1], o_n):.2e} |")
        step = {n: inp[n][:, :1] for n in NAMES}
        o_d, s_d = triton_fused_recurrent_kda(
            *(step[n] for n in NAMES), initial_state=inp["initial_state"], output_final_state=True
        )
        o_dn, s_dn = naive_kda(
            *(step[n] for n in NAMES), initial_state=inp["initial_state"], output_final_state=True
        )
        lines.append(
            f"| decode o / state (fused recurrent vs naive) | "
            f"{rel_err(o_d, o_dn):.2e} / {rel_err(s_d, s_dn):.2e} |"
        )


def _bench(fn: Callable[[], object]) -> float:
    if SETUP.dry_run:  # do_bench needs CUDA events
        t0 = time.perf_counter()
        fn()
        return (time.perf_counter() - t0) * 1e3
    import triton.testing

    return float(triton.testing.do_bench(fn, warmup=3, rep=20, return_mode="median"))


def _fwd_bwd(fn: Callable, inp: dict) -> Callable[[], object]:
    leaves = {n: inp[n].detach().clone().requires_grad_() for n in NAMES}

    def run() -> object:
        o, _ = fn(*(leaves[n] for n in NAMES))
        o.sum().backward()
        return o

    return run


@torch.no_grad()
def _fwd_only(fn: Callable, inp: dict) -> object:
    return fn(*(inp[n] for n in NAMES))


def _sdpa_fwd_bwd(leaves: list[torch.Tensor]) -> None:
    o = torch.nn.functional.scaled_dot_product_attention(*leaves, is_causal=True)
    o.sum().backward()


def _fla():
    try:
        from fla.ops.kda import chunk_kda, fused_recurrent_kda
    except ImportError:
        return None
    return chunk_kda, fused_recurrent_kda


def bench_prefill(lines: list[str], ts: list[int]) -> None:
    """Milliseconds per call, forward and forward + backward, and ratios to ours."""
    from kimmy_swarm.kernels.kda.triton_chunk import triton_chunk_kda

    fla = _fla()
    lines += [
        "| T | B | path | fwd (ms) | fwd+bwd (ms) | fwd / ours | fwd+bwd / ours |",
        "|---:|---:|---|---:|---:|---:|---:|",
    ]
    for t in ts:
        b = max(1, SETUP.tokens // t)
        inp = make_inputs(b, t, torch.bfloat16, SETUP.device)
        paths: dict[str, Callable] = {"ours (Triton chunk)": triton_chunk_kda}
        if t <= 16384:
            paths["ours (PyTorch chunk)"] = torch_chunk_kda
        if fla is not None:
            paths["fla chunk_kda"] = fla[0]
        qkv = [inp[n].transpose(1, 2) for n in ("q", "k", "v")]  # (B, H, T, D)

        def sdpa(*_a: object, qkv: list = qkv) -> tuple:
            o = torch.nn.functional.scaled_dot_product_attention(*qkv, is_causal=True)
            return o, None

        results = {}
        for name, fn in paths.items():
            results[name] = (_bench(partial(_fwd_only, fn, inp)), _bench(_fwd_bwd(fn, inp)))
        with torch.no_grad():
            sd_f = _bench(sdpa)
        leaves = [x.detach().clone().requires_grad_() for x in qkv]
        sd_b = _bench(partial(_sdpa_fwd_bwd, leaves))
        results["SDPA (causal softmax)"] = (sd_f, sd_b)
        ours = results["ours (Triton chunk)"]
        for name, (f, fb) in results.items():
            lines.append(
                f"| {t:,} | {b} | {name} | {f:.2f} | {fb:.2f} | "
                f"{f / ours[0]:.2f} | {fb / ours[1]:.2f} |"
            )
        print("\n".join(lines[-len(results) :]), flush=True)


@torch.no_grad()
def bench_decode(lines: list[str], batches: list[int]) -> None:
    """One token per sequence with the state updated in place."""
    from kimmy_swarm.kernels.kda.triton_recurrent import triton_fused_recurrent_kda

    fla = _fla()
    lines += [
        "| sequences | ours (ms) | fla fused_recurrent_kda (ms) | fla / ours |",
        "|---:|---:|---:|---:|",
    ]
    for n in batches:
        inp = make_inputs(n, 1, torch.bfloat16, SETUP.device)
        state = inp["initial_state"].contiguous()
        args = [inp[x] for x in NAMES]
        ours = _bench(
            partial(triton_fused_recurrent_kda, *args, initial_state=state, inplace_state=True)
        )
        theirs = float("nan")
        if fla is not None:
            theirs = _bench(partial(fla[1], *args, initial_state=state, output_final_state=True))
        lines.append(f"| {n:,} | {ours:.3f} | {theirs:.3f} | {theirs / ours:.2f} |")
        print(lines[-1], flush=True)


def main(argv: list[str] | None = None) -> int:
    """Run the GPU checks (or say why not) and write the Markdown report."""
    global SETUP
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=None, help="Markdown file to write")
    parser.add_argument("--quick", action="store_true", help="T = 4k only; decode 1 and 64")
    parser.add_argument(
        "--dry-run", action="store_true", help="exercise the script on CPU (TRITON_INTERPRET=1)"
    )
    args = parser.parse_args(argv)
    if args.dry_run:
        os.environ["TRITON_INTERPRET"] = "1"  # before the kernel modules are imported
        SETUP = Setup(dry_run=True)
    elif not torch.cuda.is_available():
        print("no CUDA device: GPU checks skipped (run this on a machine with one)")
        return 0
    where = "CPU (dry run)" if args.dry_run else torch.cuda.get_device_name()
    lines = [
        f"# KDA on {where} (`python benchmarks/gpu_kda.py`)",
        "",
        f"torch {torch.__version__}; fla importable: {_fla() is not None}",
        "",
        f"## Correctness (B={SETUP.b}, T={SETUP.t}, H={H}, K=V={D}, bf16 inputs)",
        "",
    ]
    check_correctness(lines)
    print("\n".join(lines), flush=True)
    lines += ["", f"## Prefill / training step (H={H}, K=V={D}, bf16)", ""]
    if args.dry_run:
        ts, batches = [80], [1, 2]
    else:
        ts = [4096] if args.quick else [4096, 16384, 65536]
        batches = [1, 64] if args.quick else [1, 64, 1024]
    bench_prefill(lines, ts)
    lines += ["", f"## Decode step (H={H}, K=V={D})", ""]
    bench_decode(lines, batches)
    out = args.out or (Path(os.environ["OUT"]) / "gpu_kda.md" if "OUT" in os.environ else None)
    if out is not None:
        out.write_text("\n".join(lines) + "\n")
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
