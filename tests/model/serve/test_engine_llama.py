"""The engine on a Llama-family model (GQA keys and values in the page pool, no state
slots): greedy output equals recomputing without any cache, whatever the batching, prefix
hits, chunk boundaries, preemption and eviction did on the way."""

from __future__ import annotations

import pytest
import torch

from kimmy_swarm.model import LlamaConfig, LlamaForCausalLM
from kimmy_swarm.model.serve.engine import LLMEngine
from kimmy_swarm.model.serve.kv_layout import GQALayout, layout_for
from kimmy_swarm.model.serve.types import EngineConfig, GenerationParams
from tests.support.engine_equivalence import (
    run_two_waves,
    shared_prefix_prompts,
    uncached_greedy,
)

N = 6  # new tokens per request
SHARED = 40  # tokens of the shared "role prompt"
VOCAB = 64


def _llama(**overrides: object) -> LlamaForCausalLM:
    torch.manual_seed(0)
    return LlamaForCausalLM(LlamaConfig.tiny(**overrides)).double().eval()


LLAMA = _llama()


def _prompts(seed: int = 1) -> list[list[int]]:
    return shared_prefix_prompts(vocab=VOCAB, shared=SHARED, seed=seed)


PROMPTS = _prompts()
PARAMS = GenerationParams(max_tokens=N, temperature=0, ignore_eos=True)


REFERENCE = uncached_greedy(LLAMA, PROMPTS, N)


def _run(engine: LLMEngine, prompts: list[list[int]]) -> tuple[list[list[int]], list[int]]:
    return run_two_waves(engine, prompts, PARAMS)


def test_the_layout_pages_keys_and_values_of_every_layer() -> None:
    layout = layout_for(LLAMA)
    cfg = LLAMA.config
    assert isinstance(layout, GQALayout) and not layout.needs_state
    assert layout.page_layers == cfg.num_hidden_layers
    assert layout.page_width == 2 * cfg.num_key_value_heads * cfg.head_dim


@pytest.mark.parametrize(
    "cfg",
    [
        EngineConfig(page_size=4, num_pages=200),  # roomy: hits, one chunk per prompt
        EngineConfig(page_size=8, num_pages=200, max_num_batched_tokens=7),  # chunks cut
        EngineConfig(page_size=16, num_pages=200, max_num_seqs=2),  # few sequences at once
    ],
    ids=["roomy", "chunked", "two-at-a-time"],
)
def test_greedy_equals_uncached_generate(cfg: EngineConfig) -> None:
    engine = LLMEngine(LLAMA, None, cfg)
    got, cached = _run(engine, PROMPTS)
    assert got == REFERENCE
    # no state to checkpoint: every full page of the shared prefix is a hit
    boundary = SHARED // cfg.page_size * cfg.page_size
    assert cached[0] == 0 and cached[1:5] == [boundary] * 4
    assert cached[5:] == [0, 0, 0]
    stats = engine.stats()
    assert stats.running == stats.waiting == stats.pages_used == 0
    assert stats.cached_prompt_tokens == 4 * boundary


def test_batched_decodes_of_different_lengths_share_a_forward() -> None:
    engine = LLMEngine(LLAMA, None, EngineConfig(page_size=8))
    sizes: list[int] = []
    run = engine.runner.run

    def spy(items: list) -> torch.Tensor:
        sizes.append(len(items))
        return run(items)

    engine.runner.run = spy  # type: ignore[method-assign]
    outs = engine.generate(PROMPTS, PARAMS)
    assert [o.output_ids for o in outs] == REFERENCE
    assert max(sizes) == len(PROMPTS)  # every decode in one left-padded batch


def test_preemption_recomputes_and_still_matches() -> None:
    engine = LLMEngine(LLAMA, None, EngineConfig(page_size=4, num_pages=14))
    prompts = [PROMPTS[0][:44], PROMPTS[6], PROMPTS[7], PROMPTS[0][:20], PROMPTS[1][:22]]
    outs = engine.generate(prompts, PARAMS)
    assert [o.output_ids for o in outs] == uncached_greedy(LLAMA, prompts, N)
    assert engine.stats().preemptions > 0


def test_eviction_under_pressure_keeps_outputs_right() -> None:
    cfg = EngineConfig(page_size=4, num_pages=20, max_num_batched_tokens=9)
    engine = LLMEngine(LLAMA, None, cfg)
    prompts = _prompts(seed=2)[:5] + _prompts(seed=3)[:5] + _prompts(seed=2)[:5]
    outs = [engine.generate([p], PARAMS)[0] for p in prompts]
    assert [o.output_ids for o in outs] == uncached_greedy(LLAMA, prompts, N)
    assert engine.stats().pages_used == 0
    assert sum(o.cached_tokens for o in outs) > 0  # some prefixes survived and were reused


def test_multi_head_attention_without_grouping() -> None:
    lm = _llama(num_key_value_heads=4)
    engine = LLMEngine(lm, None, EngineConfig(page_size=8, max_num_batched_tokens=13))
    got, cached = _run(engine, PROMPTS)
    assert got == uncached_greedy(lm, PROMPTS, N)
    assert cached[1:5] == [SHARED] * 4


def test_unknown_model_classes_are_refused_by_name() -> None:
    from kimmy_swarm.model import ModelConfigError

    with pytest.raises(ModelConfigError, match="got Linear"):
        LLMEngine(torch.nn.Linear(2, 2))
