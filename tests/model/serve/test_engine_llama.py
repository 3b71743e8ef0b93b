"""The engine on a Llama-family model (GQA keys and values in the page pool, no state
slots): greedy output equals recomputing without any cache, whatever the batching, prefix
hits, chunk boundaries, preemption and eviction did on the way."""

from __future__ import annotations

import pytest
import torch

from model import LlamaConfig, LlamaForCausalLM
from model.serve.engine import LLMEngine
from model.serve.kv_layout import GQALayout, layout_for
from model.serve.types import EngineConfig, GenerationParams

N = 6  # new tokens per request
SHARED = 40  # tokens of the shared "role prompt"
VOCAB = 64


def _llama(**overrides: object) -> LlamaForCausalLM:
    torch.manual_seed(0)
    return LlamaForCausalLM(LlamaConfig.tiny(**overrides)).double().eval()


LLAMA = _llama()


def _prompts(seed: int = 1) -> list[list[int]]:
    g = torch.Generator().manual_seed(seed)
    shared = torch.randint(3, VOCAB, (SHARED,), generator=g).tolist()
    tails = [5, 9, 1, 20, 3]
    ps = [shared + torch.randint(3, VOCAB, (k,), generator=g).tolist() for k in tails]
    return ps + [torch.randint(3, VOCAB, (n,), generator=g).tolist() for n in (1, 2, 33)]


PROMPTS = _prompts()
PARAMS = GenerationParams(max_tokens=N, temperature=0, ignore_eos=True)


def _reference(lm: LlamaForCausalLM, prompts: list[list[int]]) -> list[list[int]]:
    out = []
    for p in prompts:
        ids = lm.generate(torch.tensor([p]), max_new_tokens=N, eos_token_id=[], use_cache=False)
        out.append(ids[0, len(p) :].tolist())
    return out


REFERENCE = _reference(LLAMA, PROMPTS)


def _run(engine: LLMEngine, prompts: list[list[int]]) -> tuple[list[list[int]], list[int]]:
    """The first request alone (it stores the shared prefix), then the rest together."""
    outs = engine.generate(prompts[:1], PARAMS) + engine.generate(prompts[1:], PARAMS)
    return [o.output_ids for o in outs], [o.cached_tokens for o in outs]


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

    def spy(seqs: list, t: int) -> torch.Tensor:
        sizes.append(len(seqs))
        return run(seqs, t)

    engine.runner.run = spy  # type: ignore[method-assign]
    outs = engine.generate(PROMPTS, PARAMS)
    assert [o.output_ids for o in outs] == REFERENCE
    assert max(sizes) == len(PROMPTS)  # every decode in one left-padded batch


def test_preemption_recomputes_and_still_matches() -> None:
    engine = LLMEngine(LLAMA, None, EngineConfig(page_size=4, num_pages=14))
    prompts = [PROMPTS[0][:44], PROMPTS[6], PROMPTS[7], PROMPTS[0][:20], PROMPTS[1][:22]]
    outs = engine.generate(prompts, PARAMS)
    assert [o.output_ids for o in outs] == _reference(LLAMA, prompts)
    assert engine.stats().preemptions > 0


def test_eviction_under_pressure_keeps_outputs_right() -> None:
    cfg = EngineConfig(page_size=4, num_pages=20, max_num_batched_tokens=9)
    engine = LLMEngine(LLAMA, None, cfg)
    prompts = _prompts(seed=2)[:5] + _prompts(seed=3)[:5] + _prompts(seed=2)[:5]
    outs = [engine.generate([p], PARAMS)[0] for p in prompts]
    assert [o.output_ids for o in outs] == _reference(LLAMA, prompts)
    assert engine.stats().pages_used == 0
    assert sum(o.cached_tokens for o in outs) > 0  # some prefixes survived and were reused


def test_multi_head_attention_without_grouping() -> None:
    lm = _llama(num_key_value_heads=4)
    engine = LLMEngine(lm, None, EngineConfig(page_size=8, max_num_batched_tokens=13))
    got, cached = _run(engine, PROMPTS)
    assert got == _reference(lm, PROMPTS)
    assert cached[1:5] == [SHARED] * 4


def test_unknown_model_classes_are_refused_by_name() -> None:
    from model import ModelConfigError

    with pytest.raises(ModelConfigError, match="got Linear"):
        LLMEngine(torch.nn.Linear(2, 2))
