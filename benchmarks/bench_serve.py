"""The serving engine on one tiny Kimi Linear model: batching throughput, shared-prefix reuse
and cache bytes per sequence, each against its baseline measured in the same run.

    python benchmarks/bench_serve.py [--quick] [--out PATH]

(a) Throughput: `LLMEngine` with 1, 16 and 256 requests in flight (`max_num_seqs`), against
    (b) a plain loop calling `model.generate` once per request (its own KV/state cache,
    batch 1) — the same model, prompts (64 random tokens) and greedy 32-token answers; the
    engine's answers are checked equal to the loop's. Tokens/s counts generated tokens over
    the wall time of the whole batch, prefill included.
(c) Shared prefix: 1,000 requests whose prompts are one 1,000-token role prompt plus a
    16-token tail of their own, all queued at once, 1 token each (time to first token), with
    prefix reuse on (`cache_point` at the end of the role prompt, as `kimmy serve` sets it
    for the system messages) and off. Reported: prompt tokens run through the model (the
    prefill work), wall time until every request had its first token, mean and p99 TTFT
    from the moment all were queued.
(d) Cache bytes per sequence: the engine's pools (MLA latent pages + one KDA state slot)
    for this hybrid model against an all-MLA model of the same size at 4k / 32k / 128k, and
    the same formula at the published 48B-A3B shape (bf16 latents, fp32 KDA state).

Prints the page; `--out benchmarks/results/serve.md` writes the committed one. CPU here; the
same script runs on a GPU if one is there.
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
from dataclasses import dataclass
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks._results import add_out_option, publish  # noqa: E402
from benchmarks.experiments._common import fmt_bytes  # noqa: E402
from kimmy_swarm.model import KimiLinearConfig, KimiLinearForCausalLM  # noqa: E402
from kimmy_swarm.model.cache import cache_bytes_per_sequence  # noqa: E402
from kimmy_swarm.model.serve.engine import LLMEngine  # noqa: E402
from kimmy_swarm.model.serve.types import EngineConfig, GenerationParams  # noqa: E402

PROMPT_LEN, NEW_TOKENS = 64, 32
ROLE_LEN, TAIL_LEN = 1000, 16
CONTEXTS = (4096, 32768, 131072)


@dataclass(frozen=True)
class Scale:
    concurrency: tuple[int, ...]
    baseline_requests: int
    shared_requests: int


FULL = Scale((1, 16, 256), baseline_requests=16, shared_requests=1000)
QUICK = Scale((1, 4), baseline_requests=2, shared_requests=24)


def tiny_model(device: torch.device, **overrides: object) -> KimiLinearForCausalLM:
    torch.manual_seed(0)
    return KimiLinearForCausalLM(KimiLinearConfig.tiny(**overrides)).to(device).eval()


def random_prompts(n: int, length: int, vocab: int, seed: int) -> list[list[int]]:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(3, vocab, (n, length), generator=g).tolist()


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


# ---- (a) + (b) throughput ------------------------------------------------------------------
def baseline_loop(
    lm: KimiLinearForCausalLM, prompts: list[list[int]], device: torch.device
) -> tuple[float, list[list[int]]]:
    """(tokens/s, answers) of one `generate` call per request, one after another."""
    answers = []
    _sync(device)
    t0 = time.perf_counter()
    for p in prompts:
        ids = torch.tensor([p], device=device)
        out = lm.generate(ids, max_new_tokens=NEW_TOKENS, eos_token_id=[])
        answers.append(out[0, len(p) :].tolist())
    _sync(device)
    return len(prompts) * NEW_TOKENS / (time.perf_counter() - t0), answers


def engine_run(
    lm: KimiLinearForCausalLM, prompts: list[list[int]], concurrency: int
) -> tuple[float, list[list[int]]]:
    """(tokens/s, answers) of the engine with `concurrency` requests in flight at most."""
    pages = concurrency * math.ceil((PROMPT_LEN + NEW_TOKENS) / 16) + 16
    cfg = EngineConfig(
        max_num_seqs=concurrency, num_pages=pages, num_state_slots=concurrency + 2,
        max_num_batched_tokens=4096, enable_prefix_caching=False,
    )  # fmt: skip
    engine = LLMEngine(lm, None, cfg)
    params = GenerationParams(max_tokens=NEW_TOKENS, temperature=0, ignore_eos=True)
    _sync(engine.runner.device)
    t0 = time.perf_counter()
    outs = engine.generate(prompts, params)
    _sync(engine.runner.device)
    wall = time.perf_counter() - t0
    return sum(len(o.output_ids) for o in outs) / wall, [o.output_ids for o in outs]


def throughput(lm: KimiLinearForCausalLM, scale: Scale, device: torch.device) -> dict:
    vocab = lm.config.vocab_size
    base_prompts = random_prompts(scale.baseline_requests, PROMPT_LEN, vocab, seed=1)
    engine_run(lm, base_prompts[:2], 2)  # warm-up (allocator, first-call costs)
    base_tps, base_answers = baseline_loop(lm, base_prompts, device)
    rows = []
    for c in scale.concurrency:
        n = max(c, scale.baseline_requests)
        prompts = base_prompts + random_prompts(n - len(base_prompts), PROMPT_LEN, vocab, 2)
        tps, answers = engine_run(lm, prompts, c)
        same = answers[: len(base_answers)] == base_answers
        rows.append({"concurrency": c, "requests": n, "tps": tps, "same": same})
        print(f"(a) engine, {c} in flight: {tps:,.0f} tok/s ({tps / base_tps:.1f}×)", flush=True)
    print(f"(b) generate loop: {base_tps:,.0f} tok/s", flush=True)
    return {"baseline_tps": base_tps, "rows": rows}


# ---- (c) shared prefix -----------------------------------------------------------------------
def shared_prefix_run(lm: KimiLinearForCausalLM, n: int, *, reuse: bool) -> dict:
    role = random_prompts(1, ROLE_LEN, lm.config.vocab_size, seed=3)[0]
    tails = random_prompts(n, TAIL_LEN, lm.config.vocab_size, seed=4)
    per_seq = math.ceil((ROLE_LEN + TAIL_LEN + 1) / 16)
    cfg = EngineConfig(
        max_num_seqs=256, num_pages=256 * per_seq + 256, num_state_slots=256 + 64,
        max_num_batched_tokens=2048, max_waiting=n, enable_prefix_caching=reuse,
    )  # fmt: skip
    engine = LLMEngine(lm, None, cfg)
    params = GenerationParams(max_tokens=1, temperature=0, ignore_eos=True, cache_point=ROLE_LEN)
    first: dict[str, float] = {}
    _sync(engine.runner.device)
    t0 = time.perf_counter()
    ids = [engine.add_request(role + tail, params) for tail in tails]
    while engine.has_unfinished():
        events = engine.step()
        _sync(engine.runner.device)
        now = time.perf_counter()
        for e in events:
            first.setdefault(e.request_id, now - t0)
    ttft = sorted(first[i] for i in ids)
    stats = engine.stats()
    return {
        "prefill_tokens": stats.prefill_tokens_computed,
        "prompt_tokens": stats.prompt_tokens,
        "cached_tokens": stats.cached_prompt_tokens,
        "wall": ttft[-1],
        "mean_ttft": statistics.fmean(ttft),
        "p99_ttft": ttft[min(len(ttft) - 1, math.ceil(0.99 * len(ttft)) - 1)],
    }


def shared_prefix(lm: KimiLinearForCausalLM, scale: Scale) -> dict:
    out = {}
    for reuse in (True, False):
        r = shared_prefix_run(lm, scale.shared_requests, reuse=reuse)
        out["on" if reuse else "off"] = r
        print(f"(c) reuse {'on' if reuse else 'off'}: {r['prefill_tokens']:,} prefill tokens, "
              f"all first tokens after {r['wall']:.1f} s", flush=True)  # fmt: skip
    return out


# ---- (d) cache bytes ------------------------------------------------------------------------
def engine_bytes_per_sequence(lm: KimiLinearForCausalLM, context: int) -> int:
    """Pool bytes one sequence of `context` tokens holds: its pages and its state slot."""
    engine = LLMEngine(lm, None, EngineConfig(num_pages=2, num_state_slots=2, max_num_seqs=1))
    pages, slots = engine.pages, engine.slots
    page_bytes = 0
    if lm.config.layer_types.count("mla"):
        page_bytes = pages.kv.element_size() * pages.kv.numel() // pages.num_pages
    slot_bytes = 0
    if lm.config.layer_types.count("kda"):
        per = slots.conv.element_size() * slots.conv.numel()
        per += slots.recurrent.element_size() * slots.recurrent.numel()
        slot_bytes = per // slots.num_slots
    return math.ceil(context / pages.page_size) * page_bytes + slot_bytes


def cache_bytes(hybrid: KimiLinearForCausalLM, mla: KimiLinearForCausalLM) -> dict:
    from benchmarks.experiments._hybrid_cache import published_layouts

    engine = {
        name: [engine_bytes_per_sequence(m, c) for c in CONTEXTS]
        for name, m in (("hybrid", hybrid), ("all-MLA", mla))
    }
    formula = {
        name: [cache_bytes_per_sequence(m.config, c, dtype_bytes=4) for c in CONTEXTS]
        for name, m in (("hybrid", hybrid), ("all-MLA", mla))
    }
    layouts = published_layouts()
    big = {
        name: [cache_bytes_per_sequence(cfg, c) for c in CONTEXTS] for name, cfg in layouts.items()
    }
    return {"engine": engine, "formula": formula, "published": big}


# ---- the page -------------------------------------------------------------------------------
def _cache_table(rows: dict[str, list[int]], base: str) -> list[str]:
    head = "| model | " + " | ".join(f"{c // 1024}k | vs all-MLA" for c in CONTEXTS) + " |"
    out = [head, "|---|" + "---:|---:|" * len(CONTEXTS)]
    for name, values in rows.items():
        cells = [f"{fmt_bytes(v)} | {v / b:.3f}×" for v, b in zip(values, rows[base], strict=True)]
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    return out


def render(a: dict, c: dict, d: dict, argv: list[str], seconds: float) -> list[str]:
    dev = "CUDA " + torch.cuda.get_device_name() if torch.cuda.is_available() else "CPU"
    cfg = KimiLinearConfig.tiny()
    command = " ".join(["python benchmarks/bench_serve.py", *argv])
    lines = [
        f"# Serving engine (`{command}`)",
        "",
        f"torch {torch.__version__}, {dev}, {torch.get_num_threads()} threads, "
        f"{os.cpu_count()} CPUs ({platform.machine()}), Python {platform.python_version()}, "
        f"{dt.date.today().isoformat()}. Whole run: {seconds:.0f} s.",
        "",
        f"Model: `KimiLinearConfig.tiny()` — {cfg.num_hidden_layers} layers (KDA, KDA, KDA, "
        f"MLA), hidden {cfg.hidden_size}, MoE FFNs, vocab {cfg.vocab_size}, fp32, random "
        "weights (seed 0).",
        "",
        f"## (a) vs (b): throughput, {PROMPT_LEN}-token prompts, {NEW_TOKENS} greedy tokens each",
        "",
        "| runner | requests in flight | requests | generated tokens/s | vs generate loop | "
        "answers equal the loop's |",
        "|---|---:|---:|---:|---:|---|",
        f"| (b) `model.generate`, one request at a time | 1 | {a['requests']} | "
        f"{a['baseline_tps']:,.0f} | 1.0× | — |",
    ]
    for r in a["rows"]:
        lines.append(
            f"| (a) `LLMEngine` | {r['concurrency']} | {r['requests']} | {r['tps']:,.0f} | "
            f"{r['tps'] / a['baseline_tps']:.1f}× | {'yes' if r['same'] else '**no**'} |"
        )
    on, off = c["on"], c["off"]
    n = c["requests"]
    lines += [
        "",
        f"## (c) {n:,} requests sharing a {ROLE_LEN:,}-token role prompt (+{TAIL_LEN} tokens each)",
        "",
        "| prefix reuse | prompt tokens | run through the model | from the cache | "
        "all first tokens after | mean TTFT | p99 TTFT |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in (("on", on), ("off", off)):
        lines.append(
            f"| {name} | {r['prompt_tokens']:,} | {r['prefill_tokens']:,} | "
            f"{r['cached_tokens']:,} | {r['wall']:.2f} s | {r['mean_ttft']:.2f} s | "
            f"{r['p99_ttft']:.2f} s |"
        )
    work = off["prefill_tokens"] / on["prefill_tokens"]
    lines += [
        "",
        f"Prefill work with reuse: {work:.1f}× less (goal ≥ 20×); time until every request had "
        f"its first token {off['wall'] / on['wall']:.1f}× shorter, mean TTFT "
        f"{off['mean_ttft'] / on['mean_ttft']:.1f}× shorter.",
        "",
        "## (d) cache bytes per sequence",
        "",
        "The engine's pools, bytes one sequence holds (fp32 model: MLA latent pages of 16 "
        "tokens + one KDA state slot), hybrid vs an all-MLA model of the same dims:",
        "",
        *_cache_table(d["engine"], "all-MLA"),
        "",
        "`cache_bytes_per_sequence` (fp32) gives "
        + ("the same bytes" if _formula_matches(d) else "**different bytes**")
        + " up to the last partly filled page.",
        "",
        "The same formula at the published Kimi-Linear-48B-A3B shape (bf16 latents and conv "
        "states, fp32 KDA state):",
        "",
        *_cache_table(d["published"], "all-MLA"),
    ]
    return lines


def _formula_matches(d: dict) -> bool:
    return all(
        abs(e - f) < 16 * 4 * 1024  # at most a page of latents apart
        for name in d["engine"]
        for e, f in zip(d["engine"][name], d["formula"][name], strict=True)
    )


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small smoke run")
    add_out_option(parser, "serve.md")
    args = parser.parse_args(argv)
    scale = QUICK if args.quick else FULL
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    start = time.perf_counter()
    with torch.inference_mode():
        hybrid = tiny_model(device)
        mla = tiny_model(device, linear_attn_config=None)
        a = throughput(hybrid, scale, device)
        a["requests"] = scale.baseline_requests
        c = shared_prefix(hybrid, scale)
        c["requests"] = scale.shared_requests
        d = cache_bytes(hybrid, mla)
    page = "\n".join(render(a, c, d, argv, time.perf_counter() - start)) + "\n"
    publish(page, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
