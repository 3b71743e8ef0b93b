"""Our two ways of running a GGUF model against llama.cpp on the same file and token ids:
next-token argmax agreement over held-out text, and greedy continuations of chat prompts.

    python benchmarks/bench_fidelity.py [--model qwen2.5-coder-1.5b] [--positions 2000]
        [--prompts 10] [--tokens 32] [--controls f32,attn,nofa] [--out PATH]

The reference is llama.cpp (llama-cpp-python's `Llama`) set up as llama.cpp's own tools
and our ggml path set it up: the file's weights, a float16 KV cache, flash attention on.

- **ggml path**: `GGMLModel` (llama.cpp's kernels under our context setup) for every
  position's logits, our `LLMEngine` for greedy (all prompts at once, continuous batching).
  Same kernels, same weights: only batch composition and KV layout could move a float.
- **PyTorch path**: `load_gguf`'s float32 `Qwen2ForCausalLM` (the file's weights
  dequantized: the same values llama.cpp multiplies by), a forward per window for logits,
  `generate` (prompts left-padded in one batch) for greedy. llama.cpp's CPU kernels also
  round each activation row to 8 bits before every K-quant dot product (Q8_K), and its
  attention runs on float16 Q, K and V (flash attention casts even a float32 KV cache to
  float16: measured, f16 and f32 caches give bit-identical logits); we keep all of it fp32.

The controls take those apart (`--controls`): `attn` is llama.cpp on the same file with
float32 attention (flash attention off, float32 KV cache), `f32` that on a float32 copy of
the weights (`write_f32_gguf`), where only float order is left; both are compared with
PyTorch, greedy by teacher forcing (their argmax after every prefix of PyTorch's greedy
output: all equal is greedy equality). `nofa` is llama.cpp against itself with flash
attention off (llama-cpp-python's default): llama.cpp's own rounding noise.

Held-out text: windows of `--window` tokens (each from an empty cache, no BOS), alternating
between the interpreter's reference topics (`model.python_docs`) and the source of a few
standard-library modules. Prints the page; `--out benchmarks/results/fidelity.md` writes it.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import gc
import importlib.util
import logging
import platform
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
# Run as a script: `benchmarks.…` imports from the repository root.
if not __package__ and str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))  # last: the repository's folders shadow no installed package

from benchmarks._results import add_out_option, publish  # noqa: E402
from kimmy_swarm.model.ggml_model import MAX_SEQUENCES, Feed, GGMLModel, GGMLOptions  # noqa: E402
from kimmy_swarm.model.python_docs import python_docs_texts  # noqa: E402
from kimmy_swarm.model.serve.factory import DEFAULT_GGML_CELLS, build_engine  # noqa: E402
from kimmy_swarm.model.serve.types import GenerationParams  # noqa: E402
from tests.support.llama_cpp_logits import write_f32_gguf  # noqa: E402

Ids = list[int]
F32 = 0  # ggml_type GGML_TYPE_F32, for llama.cpp's KV cache
CONTROLS = ("f32", "attn", "nofa")
#: Standard-library modules whose source is the code half of the held-out text.
CODE_MODULES = ("textwrap", "fractions", "shlex", "difflib", "statistics", "calendar")
#: Chat prompts for the greedy checks: (name, system or None, user).
CHAT_PROMPTS: tuple[tuple[str, str | None, str], ...] = (
    ("code", None, "Write a Python function that checks whether a string is a palindrome."),
    ("json", None, 'Answer only with JSON: an object with keys "language" and "year" for '
     "the first public release of Python."),
    ("explain", None, "Explain what a Python generator is, in two sentences."),
    ("bugfix", None, "Fix the bug in this function:\n"
     "def mean(xs):\n    return sum(xs) / len(xs) - 1"),
    ("sql", None, "Write a SQL query that returns the ten most recent rows of a table `orders` "
     "with a `created_at` column."),
    ("regex", None, "Give a regular expression for an ISO 8601 date such as 2024-05-17."),
    ("shell", None, "Which shell command lists every file over 100 MB under /var?"),
    ("review", "You are a terse code reviewer.",
     "Review:\nfor i in range(len(xs)):\n    print(xs[i])"),
    ("rust", None, "Write a Rust function that reverses a Vec<i32> in place."),
    ("complexity", None, "What is the time complexity of binary search, and why?"),
)  # fmt: skip


# ---- inputs ------------------------------------------------------------------------------
def held_out_windows(tokenizer: Any, positions: int, window: int = 512) -> list[Ids]:
    """`ceil(positions / window)` windows of `window` token ids, alternately from the Python
    reference topics and from standard-library source, each spread evenly over its text."""
    docs = "\n\n".join(python_docs_texts())
    code = "\n\n".join(
        Path(spec.origin).read_text(encoding="utf-8")
        for name in CODE_MODULES
        if (spec := importlib.util.find_spec(name)) is not None and spec.origin
    )
    streams = [tokenizer.encode(docs), tokenizer.encode(code)]
    n = -(-positions // window)
    counts = [(n + 1) // 2, n // 2]  # docs get the odd one
    out: list[Ids] = []
    for i in range(n):
        ids, k, of = streams[i % 2], i // 2, counts[i % 2]
        start = k * (len(ids) - window) // max(of - 1, 1)
        out.append(ids[start : start + window])
    return out


def chat_prompts(tokenizer: Any, count: int) -> list[Ids]:
    """The first `count` of `CHAT_PROMPTS`, rendered with the model's chat template."""
    prompts = []
    for _, system, user in CHAT_PROMPTS[:count]:
        messages = [{"role": "system", "content": system}] if system else []
        messages.append({"role": "user", "content": user})
        prompts.append(tokenizer.encode(tokenizer.apply_chat_template(messages)))
    return prompts


# ---- the comparisons ---------------------------------------------------------------------
@dataclass(frozen=True)
class LogitAgreement:
    """How one model's next-token logits compare with the reference's over some positions."""

    positions: int
    agree: int  # positions where the argmaxes are the same token
    max_abs: float  # max |Δlogit| over those positions and the whole vocabulary
    mean_abs: float
    mean_kld: float  # mean KL(reference ‖ other) of the softmaxes, nats
    flipped_gap: float  # largest reference-logit gap between the two picks where they differ

    @property
    def percent(self) -> float:
        return 100.0 * self.agree / self.positions


@dataclass(frozen=True)
class RowDiffs:
    """The comparison position by position: (P,) arrays."""

    agree: np.ndarray  # bool: same argmax
    max_abs: np.ndarray
    mean_abs: np.ndarray
    kld: np.ndarray
    gap: np.ndarray  # reference's logit of its pick minus of the other's pick (0 if agree)

    def summary(self, keep: np.ndarray | None = None) -> LogitAgreement:
        """Over every position, or those where `keep` (a (P,) bool mask) is true."""
        k = np.ones(len(self.agree), bool) if keep is None else keep
        return LogitAgreement(
            positions=int(k.sum()), agree=int(self.agree[k].sum()),
            max_abs=float(self.max_abs[k].max()), mean_abs=float(self.mean_abs[k].mean()),
            mean_kld=float(self.kld[k].mean()), flipped_gap=float(self.gap[k].max()),
        )  # fmt: skip


def row_diffs(reference: np.ndarray, other: np.ndarray, rows: int = 64) -> RowDiffs:
    """`reference` and `other`: (P, V) logits of the same P positions."""
    if reference.shape != other.shape:
        raise ValueError(f"shapes differ: {reference.shape} vs {other.shape}")
    parts: list[tuple[np.ndarray, ...]] = []
    for lo in range(0, len(reference), rows):
        r = reference[lo : lo + rows].astype(np.float64)  # (R, V)
        o = other[lo : lo + rows].astype(np.float64)  # (R, V)
        diff = np.abs(o - r)  # (R, V)
        rt, ot, at = r.argmax(-1), o.argmax(-1), np.arange(len(r))  # (R,) each
        log_r = r - np.logaddexp.reduce(r, axis=-1, keepdims=True)  # (R, V)
        log_o = o - np.logaddexp.reduce(o, axis=-1, keepdims=True)  # (R, V)
        kld = (np.exp(log_r) * (log_r - log_o)).sum(-1)  # (R,)
        parts.append((rt == ot, diff.max(-1), diff.mean(-1), kld, r[at, rt] - r[at, ot]))
    return RowDiffs(*(np.concatenate(column) for column in zip(*parts, strict=True)))


def compare_logits(reference: np.ndarray, other: np.ndarray) -> LogitAgreement:
    """`reference` and `other`: (P, V) logits of the same P positions; over all of them."""
    return row_diffs(reference, other).summary()


def first_divergence(a: Ids, b: Ids) -> int | None:
    """The first index where two token lists differ (a length counts), or None if equal."""
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def divergences(outs: list[Ids], wants: list[Ids]) -> list[int | None]:
    return [first_divergence(o, w) for o, w in zip(outs, wants, strict=True)]


# ---- llama.cpp (the reference) -----------------------------------------------------------
class LlamaReference:
    """llama.cpp through llama-cpp-python's `Llama` (CPU; two threads for batches, one for
    single-token steps) set up as our ggml path sets it up: flash attention on (llama.cpp's
    own `-fa auto` on a CPU; llama-cpp-python's default is off, which alone moved
    Qwen2.5-Coder-0.5B's logits by up to 0.65) and a float16 KV cache. `f32_kv` keeps the
    cache in float32, which changes nothing unless `flash_attn` is off: flash attention
    casts K and V to float16 (measured: bit-identical logits)."""

    def __init__(self, path: Path, *, n_ctx: int, f32_kv: bool = False, flash_attn: bool = True):
        import llama_cpp

        kv = {"type_k": F32, "type_v": F32} if f32_kv else {}
        self._llm = llama_cpp.Llama(
            model_path=str(path), n_ctx=n_ctx, n_batch=512, n_ubatch=512, n_threads=1,
            n_threads_batch=2, logits_all=True, flash_attn=flash_attn, verbose=False, **kv,
        )  # fmt: skip

    def logits(self, tokens: Ids) -> np.ndarray:  # (T, V) float32, row t predicts t + 1
        """Every position's logits, from an empty KV cache."""
        self._llm.reset()
        self._llm.eval(list(tokens))
        return np.array(self._llm.scores[: len(tokens)], dtype=np.float32)

    def windows(self, windows: list[Ids]) -> np.ndarray:  # (P, V)
        return np.concatenate([self.logits(w) for w in windows])

    def greedy(self, tokens: Ids, n: int) -> Ids:
        """`n` argmax tokens: the prompt in one pass, then one token per decode step."""
        self._llm.reset()
        self._llm.eval(list(tokens))
        out: Ids = []
        for i in range(n):
            out.append(int(np.argmax(self._llm.scores[self._llm.n_tokens - 1])))
            if i + 1 < n:
                self._llm.eval(out[-1:])
        return out

    def teacher_forced(self, prompts: list[Ids], outs: list[Ids]) -> list[int | None]:
        """Per prompt, the first step where the argmax after prompt + out[:i] is not out[i]
        (None: this model's greedy is `out`), from one forward of prompt + out."""
        found = []
        for prompt, out in zip(prompts, outs, strict=True):
            rows = self.logits(prompt + out)[len(prompt) - 1 : -1]  # (n, V): row i → out[i]
            found.append(first_divergence(rows.argmax(-1).tolist(), out))
        return found

    def close(self) -> None:
        self._llm.close()


# ---- our two paths -----------------------------------------------------------------------
def ggml_logits(model: GGMLModel, windows: list[Ids]) -> np.ndarray:  # (P, V)
    """Every position's logits from `GGMLModel.decode` (a one-token feed per position of
    sequence 0, so a window is one batch), in a context the size the engine opens."""
    model.open_context(GGMLOptions(cells=DEFAULT_GGML_CELLS, sequences=MAX_SEQUENCES))
    rows = []
    for w in windows:
        rows.append(model.decode([Feed(0, [t], i) for i, t in enumerate(w)]).numpy())
        model.drop_cells(0)
    model.close_context()
    return np.concatenate(rows)


def engine_greedy(
    model: GGMLModel, tokenizer: Any, prompts: list[Ids], n: int, *, together: bool = True
) -> list[Ids]:
    """Greedy through our `LLMEngine`, EOS ignored: every prompt queued at once in one engine
    (`together`: continuous batching, a shared prefix computed once), or each prompt alone
    in a fresh engine (llama.cpp's batch composition: the prompt, then a token a step)."""
    params = GenerationParams(max_tokens=n, temperature=0.0, ignore_eos=True)
    outs = []
    for wave in [prompts] if together else [[p] for p in prompts]:
        outs += [o.output_ids for o in build_engine(model, tokenizer).generate(wave, params)]
        model.close_context()
    return outs


def ggml_gap(model: GGMLModel, prompt: Ids, out: Ids, step: int, other: int) -> float:
    """llama.cpp's logit of token `other` minus that of `out[step]` after prompt + out[:step]."""
    model.open_context(GGMLOptions(cells=len(prompt) + step + 1, sequences=1))
    row = model.decode([Feed(0, prompt + out[:step], 0)])[0]  # (V,)
    model.close_context()
    return float(row[other] - row[out[step]])


def torch_logits(lm: Any, windows: list[Ids]) -> np.ndarray:  # (P, V)
    with torch.no_grad():
        return np.concatenate([lm(torch.tensor([w]))[0].float().numpy() for w in windows])


def torch_greedy(lm: Any, prompts: list[Ids], n: int, pad: int) -> list[Ids]:
    """`lm.generate` on all prompts in one left-padded batch, EOS ignored."""
    width = max(map(len, prompts))
    ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts])  # (B, T)
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])  # (B, T)
    with torch.no_grad():
        out = lm.generate(ids, attention_mask=mask, max_new_tokens=n, eos_token_id=[])
    return out[:, width:].tolist()


def torch_gap(lm: Any, prompt: Ids, out: Ids, step: int, other: int) -> float:
    """PyTorch's logit of its own token minus that of `other` at greedy step `step`."""
    with torch.no_grad():
        row = lm(torch.tensor([prompt + out[:step]]))[0, -1]  # (V,)
    return float(row[out[step]] - row[other])


# ---- the run -----------------------------------------------------------------------------
@dataclass
class Results:
    model: str
    windows: list[Ids]
    prompts: list[Ids]
    tokens: int
    logits: dict[str, RowDiffs] = field(default_factory=dict)
    greedy: dict[str, list[int | None]] = field(default_factory=dict)  # first divergences
    gaps: dict[str, dict[int, float]] = field(default_factory=dict)  # at those, per prompt
    seconds: dict[str, float] = field(default_factory=dict)

    @contextlib.contextmanager
    def timed(self, phase: str) -> Iterator[None]:
        start = time.perf_counter()
        yield
        self.seconds[phase] = time.perf_counter() - start
        print(f"  {phase}: {self.seconds[phase]:.0f} s", file=sys.stderr)


def run(path: Path, *, positions: int, window: int, prompts: int, tokens: int,
        controls: set[str]) -> Results:  # fmt: skip
    """Every comparison on the GGUF file `path` (see the module docstring)."""
    from kimmy_swarm.model.gguf_loader import load_gguf, load_gguf_tokenizer

    start = time.perf_counter()
    tok = load_gguf_tokenizer(path)
    res = Results(path.name, held_out_windows(tok, positions, window), [], tokens)
    res.prompts = chats = chat_prompts(tok, prompts)
    res.seconds["tokenizer and inputs"] = time.perf_counter() - start
    wins, n_ctx = res.windows, max(window, max(map(len, chats)) + tokens) + 8
    with res.timed("llama.cpp: logits, greedy"):
        ref = LlamaReference(path, n_ctx=n_ctx)
        want, want_greedy = ref.windows(wins), [ref.greedy(p, tokens) for p in chats]
        ref.close()
    if "nofa" in controls:
        with res.timed("llama.cpp, flash attention off: logits, teacher-forced greedy"):
            ref = LlamaReference(path, n_ctx=n_ctx + tokens, flash_attn=False)
            res.logits["nofa"] = row_diffs(want, ref.windows(wins))
            res.greedy["nofa"] = ref.teacher_forced(chats, want_greedy)
            ref.close()
    with res.timed("ggml path: logits, engine greedy (together, alone)"):
        _ggml_path(res, GGMLModel.load(path), tok, want, want_greedy)
    with res.timed("PyTorch fp32: load, logits, greedy"):
        lm, _, _ = load_gguf(path)
        ours, ours_greedy = _torch_path(res, lm, tok.pad_token_id or 0, want, want_greedy)
        del lm, want
        gc.collect()
    if "attn" in controls:
        with res.timed("llama.cpp, f32 attention: logits, teacher-forced greedy"):
            ref = LlamaReference(path, n_ctx=n_ctx + tokens, f32_kv=True, flash_attn=False)
            _against(res, "attn", ref, ours, ours_greedy)
    if "f32" in controls:
        phase = "llama.cpp on float32 weights: copy, logits, teacher-forced greedy"
        with res.timed(phase), tempfile.TemporaryDirectory(prefix="kimmy-fidelity-") as tmp:
            f32 = write_f32_gguf(path, Path(tmp) / "f32.gguf")
            ref = LlamaReference(f32, n_ctx=n_ctx + tokens, f32_kv=True, flash_attn=False)
            _against(res, "f32", ref, ours, ours_greedy)
    return res


def _ggml_path(
    res: Results, model: GGMLModel, tok: Any, want: np.ndarray, greedy: list[Ids]
) -> None:
    """The ggml rows: `model`'s logits vs llama.cpp's `want`, the engine's greedy (prompts
    together, then each alone) vs llama.cpp's; closes `model`."""
    res.logits["ggml"] = row_diffs(want, ggml_logits(model, res.windows))
    for key, together in (("ggml", True), ("ggml1", False)):
        outs = engine_greedy(model, tok, res.prompts, res.tokens, together=together)
        res.greedy[key] = divergences(outs, greedy)
        res.gaps[key] = {
            i: ggml_gap(model, res.prompts[i], outs[i], k, greedy[i][k])
            for i, k in enumerate(res.greedy[key])
            if k is not None
        }
    model.close()


def _torch_path(
    res: Results, lm: Any, pad: int, want: np.ndarray, greedy: list[Ids]
) -> tuple[np.ndarray, list[Ids]]:
    """The PyTorch row; its logits and greedy tokens, for the controls."""
    ours = torch_logits(lm, res.windows)
    res.logits["torch"] = row_diffs(want, ours)
    ours_greedy = torch_greedy(lm, res.prompts, res.tokens, pad)
    res.greedy["torch"] = divergences(ours_greedy, greedy)
    res.gaps["torch"] = {
        i: torch_gap(lm, res.prompts[i], ours_greedy[i], k, greedy[i][k])
        for i, k in enumerate(res.greedy["torch"])
        if k is not None
    }
    return ours, ours_greedy


def _against(
    res: Results, key: str, ref: LlamaReference, ours: np.ndarray, greedy: list[Ids]
) -> None:
    """A control: `ref`'s logits vs PyTorch's `ours`, and `ref` fed PyTorch's `greedy`."""
    res.logits[key] = row_diffs(ref.windows(res.windows), ours)
    res.greedy[key] = ref.teacher_forced(res.prompts, greedy)
    ref.close()


# ---- the page ----------------------------------------------------------------------------
#: Each row: (ours, reference). "llama.cpp" alone is the served setup (the file's weights,
#: a float16 KV cache, flash attention on); the controls change what is in bold.
PAIRS = {
    "ggml": ("ggml path (GGMLModel; LLMEngine, prompts together)", "llama.cpp"),
    "ggml1": ("ggml path (LLMEngine, each prompt alone)", "llama.cpp"),
    "nofa": ("llama.cpp, **flash attention off**", "llama.cpp"),
    "torch": ("PyTorch fp32 (weights dequantized)", "llama.cpp"),
    "attn": ("PyTorch fp32", "llama.cpp, **f32 attention** (f32 KV, flash attention off)"),
    "f32": ("PyTorch fp32", "llama.cpp, **f32 weights**, f32 attention"),
}


def _divergences(res: Results, key: str) -> str:
    gaps = res.gaps.get(key, {})
    cells = [
        f"{CHAT_PROMPTS[i][0]} @ {k}" + (f" (gap {gaps[i]:.3f})" if i in gaps else "")
        for i, k in enumerate(res.greedy[key])
        if k is not None
    ]
    return "; ".join(cells) or "—"


def _logit_cells(a: LogitAgreement) -> str:
    return (
        f"{a.percent:.2f}% ({a.agree}/{a.positions}) | {a.max_abs:.3g} | {a.mean_abs:.3g} "
        f"| {a.mean_kld:.2e} | {a.flipped_gap:.3f}"
    )


def render(res: Results, command: str) -> str:
    n, p = len(res.prompts), sum(map(len, res.windows))
    same = " | ".join(["〃"] * 5)
    head = ("argmax agree | max abs Δlogit | mean abs Δlogit | mean KLD | largest flipped gap",
            "---:|---:|---:|---:|---:")  # fmt: skip
    lines = [
        "# Fidelity: our ggml and PyTorch paths vs llama.cpp",
        "",
        f"`{command}`: model file `{res.model}`; {p} positions of held-out text "
        f"({len(res.windows)} windows of {len(res.windows[0])} tokens, alternately Python's "
        f"reference topics and the source of {', '.join(CODE_MODULES)}); {n} chat prompts × "
        f"{res.tokens} greedy tokens (EOS ignored). llama-cpp-python "
        f"{version('llama-cpp-python')}, torch {torch.__version__}, Python "
        f"{platform.python_version()}, {torch.get_num_threads()} threads, "
        f"{dt.date.today().isoformat()}.",
        "",
        f"| ours | reference | {head[0]} | greedy equal | first divergence (prompt @ step) |",
        f"|---|---|{head[1]}|---:|---|",
    ]
    for key, (ours, ref) in PAIRS.items():
        if key in res.greedy:
            logits = _logit_cells(res.logits[key].summary()) if key in res.logits else same
            eq = sum(k is None for k in res.greedy[key])
            how = " teacher-forced" if key in CONTROLS else ""
            where = _divergences(res, key)
            lines.append(f"| {ours} | {ref} | {logits} | {eq}/{n}{how} | {where} |")
    later = np.ones(p, bool)
    later[np.cumsum([0] + [len(w) for w in res.windows[:-1]])] = False
    lines += ["", "The same without each window's first position (a lone token, no context):",
              "", f"| ours | reference | {head[0]} |", f"|---|---|{head[1]}|"]  # fmt: skip
    lines += [f"| {ours} | {ref} | {_logit_cells(res.logits[k].summary(later))} |"
              for k, (ours, ref) in PAIRS.items() if k in res.logits]  # fmt: skip
    lines += [
        "",
        "*Largest flipped gap*: where the argmaxes differ, the reference's logit of its pick "
        "minus its logit of ours, at most (a near tie gives ~0). *Gap* at a greedy divergence: "
        "the margin of a pick over the other side's, as the model that picked it saw it "
        "(PyTorch for its row; llama.cpp for the ggml rows, in a one-batch forward of the "
        "prefix). *Teacher-forced*: the row's llama.cpp fed the other side's greedy tokens "
        "(PyTorch's; with flash attention off, llama.cpp's own), its argmax compared at "
        "every step.",
        "",
        "| phase | seconds |",
        "|---|---:|",
        *(f"| {k} | {v:.0f} |" for k, v in res.seconds.items()),
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="qwen2.5-coder-1.5b", help="an installed name or a .gguf")
    ap.add_argument("--positions", type=int, default=2000)
    ap.add_argument("--window", type=int, default=512)
    ap.add_argument("--prompts", type=int, default=10, choices=range(1, len(CHAT_PROMPTS) + 1))
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--controls", default="f32,attn", help=f"of {','.join(CONTROLS)}; '' for none")
    add_out_option(ap, "fidelity.md")
    args = ap.parse_args()
    controls = {c for c in args.controls.split(",") if c}
    if unknown := controls - set(CONTROLS):
        ap.error(f"--controls: unknown {sorted(unknown)}; known: {', '.join(CONTROLS)}")
    from kimmy_swarm.model.locate import resolve_model

    logging.getLogger("kimmy_swarm.model.ggml_model").setLevel(logging.ERROR)  # its load log
    res = run(resolve_model(args.model), positions=args.positions, window=args.window,
              prompts=args.prompts, tokens=args.tokens, controls=controls)  # fmt: skip
    argv = sys.argv[1:]
    if "--out" in argv:  # where the page went is not how its figures were made
        del argv[argv.index("--out") : argv.index("--out") + 2]
    command = " ".join(["python benchmarks/bench_fidelity.py", *argv])
    publish(render(res, command), args.out)


if __name__ == "__main__":
    main()
