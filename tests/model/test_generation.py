"""Generation with the hybrid cache equals recomputing the sequence; batches, padding,
sampling and stopping behave."""

from __future__ import annotations

import pytest
import torch

from kimmy_swarm.model import (
    GenerationError,
    KimiLinearConfig,
    KimiLinearForCausalLM,
    hybrid_layers,
)


def _lm(**overrides: object) -> KimiLinearForCausalLM:
    return KimiLinearForCausalLM(KimiLinearConfig.tiny(**overrides)).double().eval()


SCHEDULES = {
    "hybrid": {},
    "all_mla": {"linear_attn_config": None},
    "all_kda": {"linear_attn_config": hybrid_layers(4, num_heads=4, head_dim=16, kind="kda")},
    "block_attnres": {"residual": "block_attnres", "attn_res_num_blocks": 3},
}


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_cached_logits_equal_the_full_pass(schedule: str) -> None:
    lm = _lm(**SCHEDULES[schedule])
    ids = torch.randint(3, 512, (2, 75))
    full = lm(ids)  # (B, T, V)
    cache = lm.new_cache()
    with torch.no_grad():
        parts = [lm(ids[:, :66], cache=cache)] + [
            lm(ids[:, i : i + 1], cache=cache) for i in range(66, 75)
        ]
    torch.testing.assert_close(torch.cat(parts, 1), full, rtol=1e-9, atol=1e-9)
    assert cache.seen_tokens == 75 and cache.nbytes() > 0


@pytest.mark.parametrize("schedule", ["hybrid", "block_attnres"])
def test_greedy_with_cache_equals_without(schedule: str) -> None:
    lm = _lm(**SCHEDULES[schedule])
    ids = torch.randint(3, 512, (3, 10))
    mask = torch.ones_like(ids)
    mask[1, :3] = 0
    mask[2, :6] = 0
    kw = {"max_new_tokens": 12, "attention_mask": mask, "eos_token_id": []}
    cached = lm.generate(ids, **kw)
    assert torch.equal(cached, lm.generate(ids, use_cache=False, **kw))
    assert cached.shape == (3, 22)
    for row in range(3):  # a left-padded row continues exactly as it would alone
        start = int((mask[row] == 0).sum())
        alone = lm.generate(ids[row : row + 1, start:], max_new_tokens=12, eos_token_id=[])
        assert torch.equal(alone[0, -12:], cached[row, -12:])


def test_sampling_is_seeded_and_top_k_1_is_greedy() -> None:
    lm = _lm()
    ids = torch.randint(3, 512, (2, 5))
    kw = {"max_new_tokens": 15, "do_sample": True, "temperature": 1.5, "eos_token_id": []}
    a = lm.generate(ids, generator=torch.Generator().manual_seed(1), **kw)
    b = lm.generate(ids, generator=torch.Generator().manual_seed(1), **kw)
    c = lm.generate(ids, generator=torch.Generator().manual_seed(2), **kw)
    assert torch.equal(a, b) and not torch.equal(a, c)
    greedy = lm.generate(ids, max_new_tokens=15, eos_token_id=[])
    assert torch.equal(lm.generate(ids, top_k=1, **kw), greedy)
    assert torch.equal(lm.generate(ids, top_p=1e-9, **kw), greedy)  # only the top token left


def test_eos_stops_rows_and_pads_after() -> None:
    lm = _lm()
    ids = torch.randint(3, 512, (2, 4))
    first = lm.generate(ids, max_new_tokens=1, eos_token_id=[])[:, -1]
    eos = int(first[0])  # row 0 stops at once; row 1 goes on unless it picks the same token
    out = lm.generate(ids, max_new_tokens=6, eos_token_id=eos, pad_token_id=0)
    assert int(out[0, 4]) == eos and bool((out[0, 5:] == 0).all())
    if int(first[1]) != eos:
        assert out.shape[1] > 5


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"attention_mask": torch.tensor([[1, 1, 0]])}, "left-padded"),
        ({"attention_mask": torch.tensor([[1, 1]])}, "attention_mask has shape"),
        ({"temperature": 0.0, "do_sample": True}, "temperature must be > 0; got 0.0"),
        ({"top_p": 1.5}, "top_p must be in"),
        ({"top_k": 0}, "top_k must be ≥ 1"),
        ({"max_new_tokens": -1}, "max_new_tokens must be ≥ 0; got -1"),
    ],
)
def test_bad_arguments_are_named(kwargs: dict, message: str) -> None:
    with pytest.raises(GenerationError, match=message):
        _lm().generate(torch.tensor([[5, 6, 7]]), **kwargs)
