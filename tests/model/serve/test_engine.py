"""The engine's greedy output equals recomputing the sequence without any cache, whatever
the batching, prefix hits, chunk boundaries, preemption and eviction did on the way."""

from __future__ import annotations

import pytest
import torch

from kimmy_swarm.model import (
    GenerationError,
    KimiLinearConfig,
    KimiLinearForCausalLM,
    hybrid_layers,
)
from kimmy_swarm.model.serve.engine import LLMEngine
from kimmy_swarm.model.serve.types import EngineConfig, GenerationParams
from tests.support.engine_equivalence import (
    run_two_waves,
    shared_prefix_prompts,
    uncached_greedy,
)

N = 6  # new tokens per request
SHARED = 40  # tokens of the shared "role prompt"
VOCAB = 512


def _model(**overrides: object) -> KimiLinearForCausalLM:
    torch.manual_seed(0)
    return KimiLinearForCausalLM(KimiLinearConfig.tiny(**overrides)).double().eval()


HYBRID = _model()


def _prompts(seed: int = 1) -> list[list[int]]:
    return shared_prefix_prompts(vocab=VOCAB, shared=SHARED, seed=seed)


PROMPTS = _prompts()
PARAMS = GenerationParams(max_tokens=N, temperature=0, cache_point=SHARED, ignore_eos=True)


REFERENCE = uncached_greedy(HYBRID, PROMPTS, N)


def _run(engine: LLMEngine, prompts: list[list[int]]) -> tuple[list[list[int]], list[int]]:
    return run_two_waves(engine, prompts, PARAMS)


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
    engine = LLMEngine(HYBRID, None, cfg)
    got, cached = _run(engine, PROMPTS)
    assert got == REFERENCE
    boundary = SHARED // cfg.page_size * cfg.page_size
    assert cached[0] == 0 and cached[1:5] == [boundary] * 4  # hits on the shared prefix
    assert cached[5:] == [0, 0, 0]  # unrelated prompts miss
    stats = engine.stats()
    assert stats.running == stats.waiting == stats.pages_used == 0
    assert stats.cached_prompt_tokens == 4 * boundary


def test_equal_chunks_of_different_contexts_run_as_one_group() -> None:
    """Tails of 5 tokens after a prefix hit (40 cached tokens) and fresh 5-token prompts
    (nothing cached) feed the same number of tokens, so they share one forward: left-padded
    latents and each row's own KDA state."""
    g = torch.Generator().manual_seed(4)
    shared = PROMPTS[0][:SHARED]
    tails = [shared + torch.randint(3, 512, (5,), generator=g).tolist() for _ in range(3)]
    fresh = [torch.randint(3, 512, (5,), generator=g).tolist() for _ in range(2)]
    prompts = [PROMPTS[0], *tails, *fresh]
    engine = LLMEngine(HYBRID, None, EngineConfig(page_size=8))
    groups: list[list[int]] = []
    run = engine.runner.run

    def spy(items: list) -> torch.Tensor:
        groups.append(sorted(s.num_computed for s, _ in items))
        return run(items)

    engine.runner.run = spy  # type: ignore[method-assign]
    got, cached = _run(engine, prompts)
    assert got == uncached_greedy(HYBRID, prompts, N)
    assert cached == [0, SHARED, SHARED, SHARED, 0, 0]
    assert [0, 0, SHARED, SHARED, SHARED] in groups  # one forward for the five


def test_prefix_reuse_can_be_switched_off() -> None:
    engine = LLMEngine(HYBRID, None, EngineConfig(page_size=4, enable_prefix_caching=False))
    got, cached = _run(engine, PROMPTS)
    assert got == REFERENCE and cached == [0] * len(PROMPTS)


def test_preemption_recomputes_and_still_matches() -> None:
    engine = LLMEngine(HYBRID, None, EngineConfig(page_size=4, num_pages=14))
    prompts = [PROMPTS[0][:44], PROMPTS[6], PROMPTS[7], PROMPTS[0][:20], PROMPTS[1][:22]]
    outs = engine.generate(prompts, PARAMS)
    assert [o.output_ids for o in outs] == uncached_greedy(HYBRID, prompts, N)
    assert engine.stats().preemptions > 0


def test_eviction_under_pressure_keeps_outputs_right() -> None:
    """A pool too small to keep every prefix: cached pages and state checkpoints are
    evicted (LRU) while requests run; outputs stay exact."""
    cfg = EngineConfig(page_size=4, num_pages=20, num_state_slots=3, max_num_batched_tokens=9)
    engine = LLMEngine(HYBRID, None, cfg)
    prompts = _prompts(seed=2)[:5] + _prompts(seed=3)[:5] + _prompts(seed=2)[:5]
    outs = [engine.generate([p], PARAMS)[0] for p in prompts]
    assert [o.output_ids for o in outs] == uncached_greedy(HYBRID, prompts, N)
    assert engine.stats().pages_used == 0 and engine.slots.num_used <= 3


@pytest.mark.parametrize(
    "overrides",
    [
        {"linear_attn_config": None},
        {"linear_attn_config": hybrid_layers(4, num_heads=4, head_dim=16, kind="kda")},
        {"residual": "block_attnres"},
    ],
    ids=["all-mla", "all-kda", "block-attnres"],
)
def test_other_layer_schedules(overrides: dict) -> None:
    lm = _model(**overrides)
    engine = LLMEngine(lm, None, EngineConfig(page_size=8, max_num_batched_tokens=13))
    got, cached = _run(engine, PROMPTS)
    assert got == uncached_greedy(lm, PROMPTS, N)
    assert cached[1:5] == [SHARED] * 4


def test_a_checkpoint_survives_the_decodes_that_follow_it() -> None:
    """The hit copies the checkpoint; decoding mutates the copy, never the original."""
    engine = LLMEngine(HYBRID, None, EngineConfig(page_size=8))
    engine.generate(PROMPTS[:1], PARAMS)
    ((_, slot),) = engine.slots.checkpoints.items()
    saved = engine.slots.recurrent[:, slot].clone()
    engine.generate(PROMPTS[1:3], PARAMS)
    assert torch.equal(engine.slots.recurrent[:, slot], saved)


def test_abort_frees_pages_and_slot() -> None:
    engine = LLMEngine(HYBRID, None, EngineConfig(page_size=4))
    rid = engine.add_request(PROMPTS[3], GenerationParams(max_tokens=50, temperature=0))
    engine.step()
    assert engine.stats().pages_used > 0
    assert engine.abort(rid) and not engine.abort(rid)
    stats = engine.stats()
    assert stats.running == 0 and stats.pages_used == 0 and not engine.has_unfinished()


@pytest.mark.parametrize(
    ("prompt", "kwargs", "message"),
    [
        ([], {}, "the prompt is empty"),
        ([5] * 4000, {"max_tokens": 200}, "more than max_model_len 4096"),
        ([5, 600, 7], {}, r"token ids \[600\] are outside the vocabulary \[0, 512\)"),
        ([5], {"json_schema": {"type": "object"}}, "needs a tokenizer and a grammar cache"),
    ],
)
def test_bad_requests_are_refused_with_the_value(
    prompt: list[int], kwargs: dict, message: str
) -> None:
    engine = LLMEngine(HYBRID, None)
    with pytest.raises(GenerationError, match=message):
        engine.add_request(prompt, GenerationParams(**kwargs))


def test_duplicate_ids_and_requests_that_never_fit() -> None:
    engine = LLMEngine(HYBRID, None, EngineConfig(page_size=4, num_pages=3))
    engine.add_request([5, 6], request_id="a")
    with pytest.raises(GenerationError, match="'a' is already in use"):
        engine.add_request([5, 6], request_id="a")
    engine.abort("a")
    rid = engine.add_request(list(range(3, 30)), PARAMS)  # 27 tokens need 7 pages; 3 exist
    assert engine.step() == []
    ((failed, error),) = engine.pop_failures()  # that request fails; the engine goes on
    assert failed == rid and isinstance(error, GenerationError)
    assert "does not fit the cache pools" in str(error) and not engine.has_unfinished()
    assert engine.generate([[5, 6]], GenerationParams(max_tokens=2))[0].output_ids
    with pytest.raises(GenerationError, match="does not fit the cache pools"):
        engine.generate([list(range(3, 30))], PARAMS)  # the sync API raises it


def _fail_for(engine: LLMEngine, bad: str) -> None:
    """Make request `bad`'s sampler raise on its first token (as a bug or a bad value would)."""

    def broken(token_id: int) -> tuple[str, None]:
        raise RuntimeError(f"injected failure at token {token_id}")

    engine.seqs[bad].sampler.accept = broken  # type: ignore[method-assign]


def test_a_request_that_fails_in_a_step_fails_alone() -> None:
    engine = LLMEngine(HYBRID, None, EngineConfig(page_size=4))
    ids = [engine.add_request(p, PARAMS) for p in PROMPTS[5:8]]
    _fail_for(engine, ids[1])
    failures = []
    while engine.has_unfinished():
        engine.step()
        failures += engine.pop_failures()
    assert [(rid, str(e)) for rid, e in failures] == [
        (ids[1], f"injected failure at token {REFERENCE[6][0]}")
    ]
    got = [engine.pop_output(i).output_ids for i in (ids[0], ids[2])]
    assert got == [REFERENCE[5], REFERENCE[7]]  # the others are exact
    stats = engine.stats()
    assert stats.running == stats.waiting == stats.pages_used == 0


def test_a_failing_forward_fails_its_requests_and_the_engine_goes_on() -> None:
    engine = LLMEngine(HYBRID, None, EngineConfig(page_size=4))
    run = engine.runner.run
    calls = [0]

    def flaky(items: list) -> torch.Tensor:
        calls[0] += 1
        if calls[0] == 2:  # the second forward: the first decode of both
            raise RuntimeError("CUDA error: an illegal memory access (simulated)")
        return run(items)

    engine.runner.run = flaky  # type: ignore[method-assign]
    ids = [engine.add_request(p, PARAMS) for p in ([5, 6, 7], [8, 9, 10])]  # one group
    assert len(engine.step()) == 2
    assert engine.step() == []
    assert sorted(rid for rid, _ in engine.pop_failures()) == sorted(ids)
    assert engine.stats().pages_used == 0 and not engine.has_unfinished()
    outs = engine.generate([PROMPTS[7]], PARAMS)  # later requests run, exact
    assert [o.output_ids for o in outs] == [REFERENCE[7]]
