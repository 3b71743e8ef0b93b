"""The engine on a Qwen2 model (Llama's GQA page layout; q/k/v biases in the attention):
greedy output equals the model's own `generate`, cached and uncached, through prefix hits,
chunked prefill and few sequences at a time."""

from __future__ import annotations

import pytest
import torch

from kimmy_swarm.model import Qwen2Config, Qwen2ForCausalLM
from kimmy_swarm.model.serve.engine import LLMEngine
from kimmy_swarm.model.serve.kv_layout import GQALayout, layout_for
from kimmy_swarm.model.serve.types import EngineConfig, GenerationParams
from tests.support.engine_equivalence import run_two_waves, shared_prefix_prompts, uncached_greedy

N = 6  # new tokens per request
SHARED = 40  # tokens of the shared "role prompt"


def _qwen2() -> Qwen2ForCausalLM:
    torch.manual_seed(0)
    lm = Qwen2ForCausalLM(Qwen2Config.tiny()).double().eval()
    with torch.no_grad():  # zeros at init: random ones, so that the cached k/v carry them
        for name, p in lm.named_parameters():
            if name.endswith(".bias"):
                p.normal_(std=0.5)
    return lm


QWEN2 = _qwen2()
PROMPTS = shared_prefix_prompts(vocab=QWEN2.config.vocab_size, shared=SHARED, seed=1)
PARAMS = GenerationParams(max_tokens=N, temperature=0, ignore_eos=True)


def _generate(prompts: list[list[int]]) -> list[list[int]]:
    """`model.generate` (KV-cached), one prompt at a time, EOS ignored."""
    out = []
    for p in prompts:
        ids = QWEN2.generate(torch.tensor([p]), max_new_tokens=N, eos_token_id=[])
        out.append(ids[0, len(p) :].tolist())
    return out


REFERENCE = _generate(PROMPTS)


def test_the_reference_is_the_uncached_one_too() -> None:
    assert uncached_greedy(QWEN2, PROMPTS, N) == REFERENCE


def test_qwen2_pages_keys_and_values_as_llama_does() -> None:
    layout = layout_for(QWEN2)
    cfg = QWEN2.config
    assert isinstance(layout, GQALayout) and not layout.needs_state
    assert layout.page_width == 2 * cfg.num_key_value_heads * cfg.head_dim
    assert layout.page_layers == cfg.num_hidden_layers


@pytest.mark.parametrize(
    "cfg",
    [
        EngineConfig(page_size=4, num_pages=200),
        EngineConfig(page_size=8, num_pages=200, max_num_batched_tokens=7),
        EngineConfig(page_size=16, num_pages=200, max_num_seqs=2),
    ],
    ids=["roomy", "chunked", "two-at-a-time"],
)
def test_engine_greedy_equals_model_generate(cfg: EngineConfig) -> None:
    engine = LLMEngine(QWEN2, None, cfg)
    got, cached = run_two_waves(engine, PROMPTS, PARAMS)
    assert got == REFERENCE
    boundary = SHARED // cfg.page_size * cfg.page_size
    assert cached[1:5] == [boundary] * 4  # the shared prefix's pages were hits
    assert engine.stats().pages_used == 0
