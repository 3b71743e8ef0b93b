"""Both of our ways of running the real Qwen2.5-Coder-1.5B-Instruct GGUF (Q4_K_M) against
llama.cpp on the same file: a short version of `benchmarks/bench_fidelity.py`.

- ggml path (llama.cpp's kernels under our context setup and engine): our `LLMEngine`'s
  greedy equals llama.cpp's on 3 chat prompts × 32 tokens, and `GGMLModel`'s next-token
  argmax agrees with llama.cpp's at ≥ 99% of 512 held-out positions (measured: 100%, the
  logits bit-identical, with llama.cpp's flash attention on as in our path and its own
  tools; llama-cpp-python's default, off, alone moves logits by up to ~1). Each prompt runs
  alone in the engine, so that its batches are llama.cpp's (the prompt, then one token a
  step): prompts batched together give the same logits up to float order, which flipped
  near ties (llama.cpp's own margin < 0.1) in 2–4 of the benchmark's 10 prompts.
- PyTorch path (float32, the file's weights dequantized): argmax agreement ≥
  `TORCH_MIN_AGREEMENT` on the same positions. It cannot be exact: llama.cpp rounds each
  activation row to 8 bits before the K-quant dot products and runs attention in float16;
  with float32 weights and attention on its side too, the two agree to float order (the
  benchmark's `f32` control: 100% of 2,048 positions, 10/10 greedy).

The model: `KIMMY_QWEN_GGUF` names a GGUF file, else the installed `qwen2.5-coder-1.5b`
(`kimmy models install qwen2.5-coder-1.5b`, as CI does); skipped without either, and without
llama-cpp-python. One tokenizer, one llama.cpp reference pass and one copy of each model per
module, freed after use. On two shared cores: ~2 minutes (loading the float32 model ~30 s).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from benchmarks.bench_fidelity import (
    LlamaReference,
    chat_prompts,
    compare_logits,
    divergences,
    engine_greedy,
    ggml_logits,
    held_out_windows,
    torch_logits,
)
from tests.support.qwen_gguf import qwen_gguf_or_skip

POSITIONS, WINDOW = 512, 256  # one window of Python's reference topics, one of stdlib source
PROMPTS, TOKENS = 3, 32
GGML_MIN_AGREEMENT = 99.0  # %; the same kernels: anything but ~100% is a bug in our setup
# %; measured 98.2% here (503/512; 98.3% of the benchmark's 2,048 positions), 97.7% on the
# 0.5B; misses are near ties (llama.cpp's margin ≤ 0.35) but for the windows' lone first
# tokens, where 8-bit activations move the 1.5B's logits by up to 12
TORCH_MIN_AGREEMENT = 95.0


@dataclass(frozen=True)
class Inputs:
    windows: list[list[int]]
    prompts: list[list[int]]


@dataclass(frozen=True)
class Reference:
    logits: np.ndarray  # (POSITIONS, V) float32, llama.cpp's
    greedy: list[list[int]]  # PROMPTS × TOKENS


@pytest.fixture(scope="module")
def gguf_path() -> Path:
    return qwen_gguf_or_skip()


@pytest.fixture(scope="module")
def tok(gguf_path: Path) -> Any:
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")
    from kimmy_swarm.model.gguf_loader import load_gguf_tokenizer

    return load_gguf_tokenizer(gguf_path)


@pytest.fixture(scope="module")
def inputs(tok: Any) -> Inputs:
    return Inputs(held_out_windows(tok, POSITIONS, WINDOW), chat_prompts(tok, PROMPTS))


@pytest.fixture(scope="module")
def reference(gguf_path: Path, inputs: Inputs) -> Reference:
    n_ctx = max(WINDOW, max(map(len, inputs.prompts)) + TOKENS) + 8
    ref = LlamaReference(gguf_path, n_ctx=n_ctx)
    try:
        greedy = [ref.greedy(p, TOKENS) for p in inputs.prompts]
        return Reference(ref.windows(inputs.windows), greedy)
    finally:
        ref.close()


@pytest.fixture(scope="module")
def ggml(gguf_path: Path) -> Iterator[Any]:
    from kimmy_swarm.model.ggml_model import GGMLModel

    model = GGMLModel.load(gguf_path)
    yield model
    model.close()


def test_engine_greedy_equals_llama_cpp(
    ggml: Any, tok: Any, inputs: Inputs, reference: Reference
) -> None:
    outs = engine_greedy(ggml, tok, inputs.prompts, TOKENS, together=False)
    for out, want in zip(outs, reference.greedy, strict=True):
        print(f"ours: {tok.decode(out)!r}\nllama.cpp: {tok.decode(want)!r}")
    assert divergences(outs, reference.greedy) == [None] * PROMPTS


def test_ggml_argmax_agrees_with_llama_cpp(ggml: Any, inputs: Inputs, reference: Reference) -> None:
    found = compare_logits(reference.logits, ggml_logits(ggml, inputs.windows))
    print(found)
    assert found.positions == POSITIONS
    assert found.percent >= GGML_MIN_AGREEMENT


def test_pytorch_fp32_argmax_agrees_with_llama_cpp(
    gguf_path: Path, inputs: Inputs, reference: Reference
) -> None:
    from kimmy_swarm.model.gguf_loader import load_gguf

    lm, _, _ = load_gguf(gguf_path)
    try:
        found = compare_logits(reference.logits, torch_logits(lm, inputs.windows))
    finally:
        del lm
        gc.collect()
    print(found)
    assert found.positions == POSITIONS
    assert found.percent >= TORCH_MIN_AGREEMENT
