"""Our engine vs llama.cpp's server, head to head on the same GGUF, both on loopback, the
same requests: Qwen2.5-Coder-1.5B-Instruct (Q4_K_M), its 0.5B, or SmolLM2-135M-Instruct.

    python benchmarks/bench_serve_peer.py [--models qwen2.5-coder-1.5b,qwen2.5-coder-0.5b]
        [--llama-server PATH] [--levels 1,4,16,64] [--max-tokens 128] [--quick] [--out PATH]

For each model, concurrency level C and workload — with a ~1,000-token system prompt that
every request shares (the swarm's case: one role prompt, many sub-agents) and without — C
chat requests are sent at once (each a different short user message; greedy; `max_tokens`
output tokens with EOS ignored, so both servers produce the same count), and we report:

- aggregate output tokens/s: completion tokens of all C requests / wall time of the wave;
- time to first token (streamed): mean and p99 over the C requests, from the send;
- each server's resident memory after its waves (`VmRSS`) and at its peak (`VmHWM`).

Each server gets one warm-up request per wave (not timed). Both run the file's quantized
weights with ggml's kernels, on every core: ours through `llama-cpp-python`'s library under
our scheduler (`kimmy serve NAME`, `--quant auto`); llama.cpp's `llama-server` (C++) with its
best setup here: `--parallel` slots = the largest level (capped at 64), continuous batching,
a unified KV cache (`--kv-unified`), `--cache-reuse` on. Without a `llama-server` binary
(`--llama-server`, `$LLAMA_SERVER`, PATH), llama-cpp-python's own server
(`python -m llama_cpp.server`, one request at a time) is the peer, and the page says so.

Models are found as `kimmy serve` finds them (`kimmy models install NAME` first). Prints the
page at the end; `--out benchmarks/results/serve_peer.md` writes the committed one, after
every wave.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
# Run as a script: `benchmarks.…` imports from the repository root.
if not __package__ and str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))  # last: the repository's folders shadow no installed package

from benchmarks._results import add_out_option, publish  # noqa: E402
from kimmy_swarm.model.gguf_loader import bundled_smollm2  # noqa: E402
from kimmy_swarm.model.locate import resolve_model  # noqa: E402

SYSTEM_WORDS = 700  # ≈ 1,000 tokens of role prompt (SmolLM2's and Qwen2.5's tokenizers)


@dataclass(frozen=True)
class Wave:
    server: str
    model: str
    workload: str
    concurrency: int
    tokens: int
    wall_s: float
    ttft_mean_s: float
    ttft_p99_s: float

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.wall_s


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Memory:
    """A server process's resident memory, read from /proc before it stops."""

    rss: int = 0
    peak: int = 0

    def read(self, pid: int) -> None:
        try:
            text = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            return
        for line in text.splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                kib = int(value.split()[0]) * 1024
                self.rss, self.peak = (kib, self.peak) if key == "VmRSS" else (self.rss, kib)


@contextlib.contextmanager
def _server(cmd: list[str], port: int, name: str, memory: Memory) -> Iterator[str]:
    log = open(Path(tempfile.gettempdir()) / f"bench_serve_peer.{name}.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
    try:
        deadline = time.monotonic() + 300
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"{name} exited with {proc.returncode}; see {log.name}")
            try:
                if httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit(f"{name} did not start in 300 s; see {log.name}")
            time.sleep(0.5)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        memory.read(proc.pid)
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def _system_prompt() -> str:
    """A long, fixed role prompt (words of the Python docs' glossary style, generated here)."""
    words = [
        "review", "claims", "evidence", "method", "dataset", "baseline", "result", "cite",
        "verify", "number", "table", "figure", "section", "quote", "source", "passage",
    ]  # fmt: skip
    body = " ".join(words[(i * 7) % len(words)] for i in range(SYSTEM_WORDS))
    return "You are a fact-checker in a review swarm. Rules of the house: " + body


def _messages(i: int, shared: bool) -> list[dict[str, str]]:
    user = {"role": "user", "content": f"Claim {i}: method {i % 7} beats baseline {i % 5}."}
    return [{"role": "system", "content": _system_prompt()}, user] if shared else [user]


async def _one(
    client: httpx.AsyncClient, url: str, model: str, i: int, shared: bool, max_tokens: int
) -> tuple[float, int]:
    body = {
        "model": model,
        "messages": _messages(i, shared),
        "temperature": 0,
        "max_tokens": max_tokens,
        "ignore_eos": True,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    start = time.perf_counter()
    first: float | None = None
    tokens = 0
    async with client.stream("POST", f"{url}/chat/completions", json=body) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            choices = chunk.get("choices") or []
            if first is None and choices and (choices[0].get("delta") or {}).get("content"):
                first = time.perf_counter() - start
            usage = chunk.get("usage")
            if usage:
                tokens = int(usage.get("completion_tokens", 0))
    return (first if first is not None else time.perf_counter() - start), tokens


async def _wave(url: str, model: str, c: int, shared: bool, max_tokens: int) -> Wave:
    limits = httpx.Limits(max_connections=c + 8, max_keepalive_connections=c + 8)
    async with httpx.AsyncClient(timeout=3600, limits=limits) as client:
        await _one(client, url, model, 10_000, shared, 4)  # warm-up (and the prefix cached)
        start = time.perf_counter()
        got = await asyncio.gather(
            *(_one(client, url, model, i, shared, max_tokens) for i in range(c))
        )
        wall = time.perf_counter() - start
    ttfts = sorted(t for t, _ in got)
    p99 = ttfts[min(len(ttfts) - 1, int(0.99 * len(ttfts)))]
    return Wave("", model, "shared" if shared else "plain", c, sum(n for _, n in got), wall,
                statistics.fmean(ttfts), p99)  # fmt: skip


def _run_all(
    url: str,
    name: str,
    model: str,
    levels: list[int],
    max_tokens: int,
    out: list[Wave],
    save: Callable[[], None],
) -> None:
    """Every (workload, level) wave against one server, appended to `out`; `save` after
    each, so a run stopped early keeps what it measured."""
    for shared in (False, True):
        for c in levels:
            w = asyncio.run(_wave(url, model, c, shared, max_tokens))
            w = Wave(name, *list(vars(w).values())[1:])
            print(
                f"{name:>9} {model} {w.workload:>6} C={c:<4} {w.tokens_per_s:8.1f} tok/s  "
                f"TTFT mean {w.ttft_mean_s:6.2f} s p99 {w.ttft_p99_s:6.2f} s  "
                f"({w.tokens} tokens in {w.wall_s:.1f} s)",
                flush=True,
            )
            out.append(w)
            save()


def _find_llama_server(given: str | None) -> str | None:
    path = given or os.environ.get("LLAMA_SERVER") or shutil.which("llama-server")
    if given and not Path(given).is_file():
        raise SystemExit(f"--llama-server {given}: no such file")
    return path if path and Path(path).is_file() else None


def _cells(levels: list[int]) -> int:
    """KV cells for our server: the shared prompt once plus ~250 tokens a request (≥ 8,192).
    llama-server gets 1,280 a slot: it stores each slot's copy of the shared prompt."""
    return max(8192, 256 * max(levels))


def _gguf(name: str) -> Path:
    return bundled_smollm2() if name == "smollm2" else resolve_model(name)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="qwen2.5-coder-1.5b,qwen2.5-coder-0.5b")
    ap.add_argument("--llama-server", default=None)
    ap.add_argument("--levels", default="1,4,16,64")
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--quick", action="store_true", help="levels 1,4; 8 tokens (a smoke run)")
    add_out_option(ap, "serve_peer.md")
    ap.add_argument("--only", choices=["kimmy", "llama.cpp"], default=None)
    args = ap.parse_args()
    levels = [1, 4] if args.quick else [int(x) for x in args.levels.split(",")]
    max_tokens = 8 if args.quick else args.max_tokens
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    threads = os.cpu_count() or 1
    binary = _find_llama_server(args.llama_server)
    peer = "llama-server (C++)" if binary else "llama-cpp-python's server"
    waves: list[Wave] = []
    memory: dict[tuple[str, str], Memory] = {}

    def save() -> None:
        if args.out is not None:
            page = _page(waves, memory, models, levels, max_tokens, threads, peer)
            publish(page, args.out, echo=False)

    for name in models:
        gguf = _gguf(name)
        if args.only != "llama.cpp":
            port = _free_port()
            cmd = [sys.executable, "-P", "-m", "kimmy_swarm.cli", "serve", name,
                   "--port", str(port), "--max-num-seqs", str(max(levels)),
                   "--max-model-len", "2048", "--num-pages", str(_cells(levels) // 16)]  # fmt: skip
            mem = memory[("kimmy", name)] = Memory()
            with _server(cmd, port, "kimmy", mem) as url:
                _run_all(url, "kimmy", name, levels, max_tokens, waves, save)
        if args.only != "kimmy":
            slots = min(max(levels), 64)
            port = _free_port()
            if binary:
                cmd = [binary, "-m", str(gguf), "--host", "127.0.0.1", "--port", str(port),
                       "--parallel", str(slots), "--ctx-size", str(slots * 1280),
                       "--kv-unified", "--cont-batching", "--cache-reuse", "256",
                       "--threads", str(threads), "--threads-batch", str(threads),
                       "--no-webui", "--alias", name]  # fmt: skip
            else:
                cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf),
                       "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048",
                       "--n_threads", str(threads), "--model_alias", name]  # fmt: skip
            mem = memory[("llama.cpp", name)] = Memory()
            with _server(cmd, port, "llama-server", mem) as url:
                _run_all(url, "llama.cpp", name, levels, max_tokens, waves, save)
    print(_page(waves, memory, models, levels, max_tokens, threads, peer))


def _page(
    waves: list[Wave],
    memory: dict[tuple[str, str], Memory],
    models: list[str],
    levels: list[int],
    max_tokens: int,
    threads: int,
    peer: str,
) -> str:
    by = {(w.server, w.model, w.workload, w.concurrency): w for w in waves}
    lines = [
        "# Our engine vs llama.cpp's server (same GGUF, both on ggml's kernels)",
        "",
        f"{dt.date.today()} · {platform.processor() or platform.machine()} · {threads} cores"
        f" · `python benchmarks/bench_serve_peer.py` · {max_tokens} output tokens a request,"
        f" greedy, EOS ignored · peer: {peer}",
        "",
        "| model | workload | C | kimmy tok/s | llama.cpp tok/s | kimmy / llama.cpp | kimmy TTFT "
        "mean / p99 s | llama.cpp TTFT mean / p99 s |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]

    def cells(w: Wave | None) -> tuple[str, str]:
        if w is None:
            return "not run", "not run"
        return f"{w.tokens_per_s:.1f}", f"{w.ttft_mean_s:.2f} / {w.ttft_p99_s:.2f}"

    for model in models:
        for workload in ("plain", "shared"):
            for c in levels:
                k = by.get(("kimmy", model, workload, c))
                ll = by.get(("llama.cpp", model, workload, c))
                if k is None and ll is None:
                    continue
                ratio = f"{k.tokens_per_s / ll.tokens_per_s:.2f}×" if k and ll else "–"
                (kt, kf), (lt, lf) = cells(k), cells(ll)
                lines.append(
                    f"| {model} | {workload} | {c} | {kt} | {lt} | {ratio} | {kf} | {lf} |"
                )
    lines += ["", "| model | server | GGUF file | resident after the waves | peak resident |",
              "|---|---|---:|---:|---:|"]  # fmt: skip
    for (server, model), mem in memory.items():
        size = _gguf(model).stat().st_size
        lines.append(
            f"| {model} | {server} | {size / 2**30:.2f} GiB | {mem.rss / 2**30:.2f} GiB "
            f"({mem.rss / size:.2f}×) | {mem.peak / 2**30:.2f} GiB ({mem.peak / size:.2f}×) |"
        )
    lines += [
        "",
        "plain: a one-line user message; shared: the same plus a ~1,000-token system prompt "
        "every request shares.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
