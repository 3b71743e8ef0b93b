"""The engine on llama.cpp's kernels (`GGMLModel` + `GGMLRunner`): a tiny Qwen2 written as an
F32 GGUF, run by llama.cpp under our scheduler, gives the greedy tokens our PyTorch model
gives for the same weights — through prefix hits, parked holders, evictions, preemption and
running out of sequence ids — and the cells it leaves behind are exactly the cached pages'."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from kimmy_swarm.model.ggml_model import GGMLModel, llama_cpp_available
from kimmy_swarm.model.gguf_loader import load_gguf_tokenizer
from kimmy_swarm.model.qwen2 import Qwen2Config, Qwen2ForCausalLM
from kimmy_swarm.model.serve.engine import LLMEngine
from kimmy_swarm.model.serve.factory import build_engine
from kimmy_swarm.model.serve.ggml_runner import GGMLRunner
from kimmy_swarm.model.serve.types import EngineConfig, GenerationParams
from kimmy_swarm.model.tokenizer import train_bpe_tokenizer
from tests.support.engine_equivalence import run_two_waves, shared_prefix_prompts, uncached_greedy
from tests.support.gguf_files import write_gguf

pytestmark = pytest.mark.skipif(
    not llama_cpp_available(), reason="llama-cpp-python is not installed (make llama-cpp)"
)

N = 6
SHARED = 40
PARAMS = GenerationParams(max_tokens=N, temperature=0, ignore_eos=True)


def _tiny_qwen2(vocab_size: int) -> Qwen2ForCausalLM:
    torch.manual_seed(0)
    cfg = Qwen2Config.tiny(vocab_size=vocab_size, intermediate_size=64, eos_token_id=2,
                           pad_token_id=0, max_position_embeddings=512)  # fmt: skip
    lm = Qwen2ForCausalLM(cfg).eval()
    with torch.no_grad():  # zeros at init: random ones, so that llama.cpp must add them
        for name, p in lm.named_parameters():
            if name.endswith(".bias"):
                p.normal_(std=0.5)
    return lm


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Qwen2ForCausalLM, Path]:
    tok = train_bpe_tokenizer(["the cat sat on the mat", "a hat that fits"] * 20, vocab_size=290)
    bpe = json.loads(tok._tok.to_str())["model"]
    vocab = [t for t, _ in sorted(bpe["vocab"].items(), key=lambda kv: kv[1])]
    merges = [m if isinstance(m, str) else " ".join(m) for m in bpe["merges"]]
    lm = _tiny_qwen2(len(vocab))
    path = tmp_path_factory.mktemp("ggml") / "tiny-qwen2.gguf"
    write_gguf(path, lm, vocab, merges, pre="qwen2")
    return lm, path


@pytest.fixture(scope="module")
def ggml(tiny: tuple[Qwen2ForCausalLM, Path]) -> GGMLModel:
    model = GGMLModel.load(tiny[1], threads=1)
    yield model
    model.close()


@pytest.fixture(scope="module")
def prompts(tiny: tuple[Qwen2ForCausalLM, Path]) -> list[list[int]]:
    return shared_prefix_prompts(vocab=tiny[0].config.vocab_size, shared=SHARED, seed=3)


@pytest.fixture(scope="module")
def reference(tiny: tuple[Qwen2ForCausalLM, Path], prompts: list[list[int]]) -> list[list[int]]:
    return uncached_greedy(tiny[0], prompts, N)


def test_the_model_reads_the_file(ggml: GGMLModel, tiny: tuple[Qwen2ForCausalLM, Path]) -> None:
    cfg = tiny[0].config
    assert ggml.config.architecture == "qwen2"
    assert (ggml.config.vocab_size, ggml.config.num_hidden_layers) == (
        cfg.vocab_size,
        cfg.num_hidden_layers,
    )
    assert (
        ggml.config.kv_bytes_per_token
        == 4 * cfg.num_hidden_layers * cfg.num_key_value_heads * cfg.head_dim
    )


def test_greedy_equals_pytorch_through_prefix_hits(
    ggml: GGMLModel,
    tiny: tuple[Qwen2ForCausalLM, Path],
    prompts: list[list[int]],
    reference: list[list[int]],
) -> None:
    engine = LLMEngine(ggml, None, EngineConfig(page_size=8, num_pages=64, max_num_seqs=8))
    lm = tiny[0]
    run = engine.runner.run
    checked = [0]

    def compare(items: list) -> torch.Tensor:
        """Every forward's logits against PyTorch's on the whole context (not just argmax:
        a tiny random model's next token can hardly depend on the context)."""
        logits = run(items)
        for row, (seq, n) in zip(logits, items, strict=True):
            context = torch.tensor([seq.tokens[: seq.num_computed + n]])
            with torch.no_grad():
                expected = lm(context)[0, -1]
            torch.testing.assert_close(row, expected, atol=2e-3, rtol=2e-3)
            checked[0] += 1
        return logits

    engine.runner.run = compare  # type: ignore[method-assign]
    got, cached = run_two_waves(engine, prompts, PARAMS)
    assert got == reference and checked[0] >= len(prompts) * N
    boundary = SHARED // 8 * 8
    assert cached[:5] == [0] + [boundary] * 4 and cached[5:] == [0, 0, 0]
    runner = engine.runner
    assert isinstance(runner, GGMLRunner)
    # what stays in llama.cpp is what the pool keeps cached: parked holders, nothing else
    held = {p for pages in runner._held.values() for p in pages}
    assert held == set(engine.pages.cached) and runner._id == {}
    assert len(runner._parked) >= 1


def test_evictions_and_preemption_stay_exact(
    ggml: GGMLModel, prompts: list[list[int]], reference: list[list[int]]
) -> None:
    # 14 pages of 4: prompts of up to 60 tokens cannot all fit; cached pages are evicted,
    # running ones preempted and recomputed
    engine = LLMEngine(ggml, None, EngineConfig(page_size=4, num_pages=20, max_num_seqs=4))
    outs = engine.generate(prompts, PARAMS)
    assert [o.output_ids for o in outs] == reference
    outs = engine.generate(prompts[:3], PARAMS)  # again, over whatever is cached now
    assert [o.output_ids for o in outs] == reference[:3]
    runner = engine.runner
    assert isinstance(runner, GGMLRunner)
    assert not runner._id and set(engine.pages.cached) == {
        p for pages in runner._held.values() for p in pages
    }


def test_running_out_of_ids_hands_pages_to_a_running_sequence(
    ggml: GGMLModel, prompts: list[list[int]], reference: list[list[int]]
) -> None:
    """Three ids, two running, one parked at most: the first request's shared pages are held
    by a parked id that is unparked while a running sequence sees them — they pass to it —
    and later hits read cells whose holder changed (or were evicted and recomputed)."""
    engine = LLMEngine(ggml, None, EngineConfig(page_size=8, num_pages=64, max_num_seqs=2))
    runner = engine.runner
    assert isinstance(runner, GGMLRunner)
    runner.max_parked = 1
    runner._free_ids = [2, 1, 0]
    heirs: list[int] = []
    seeing = runner._running_seeing

    def spy(page: int) -> int | None:
        heir = seeing(page)
        heirs.extend([] if heir is None else [heir])
        return heir

    runner._running_seeing = spy  # type: ignore[method-assign]
    got, cached = run_two_waves(engine, prompts, PARAMS)
    assert got == reference and max(cached) > 0
    assert heirs, "no page passed to a running sequence"
    assert len(runner._parked) <= 1 and not runner._id
    again = engine.generate(prompts[1:3], PARAMS)
    assert [o.output_ids for o in again] == reference[1:3]


def test_build_engine_sizes_the_context_from_pages(
    ggml: GGMLModel, tiny: tuple[Qwen2ForCausalLM, Path]
) -> None:
    tokenizer = load_gguf_tokenizer(tiny[1])
    engine = build_engine(ggml, tokenizer, page_size=16, num_pages=32, max_num_seqs=300)
    assert ggml.cells >= 32 * 16
    assert engine.config.max_num_seqs == 64  # as many ids again keep cached prefixes
