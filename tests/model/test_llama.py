"""The Llama-family model: KV-cached generation equals recomputation, left padding, GQA."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from kimmy_swarm.model.errors import ModelConfigError
from kimmy_swarm.model.llama import (
    LlamaCache,
    LlamaConfig,
    LlamaForCausalLM,
    apply_rope,
    rope_cos_sin,
)


def _lm(**overrides: object) -> LlamaForCausalLM:
    return LlamaForCausalLM(LlamaConfig.tiny(**overrides)).eval()


@pytest.mark.parametrize("kv_heads", [1, 2, 4])
def test_greedy_with_cache_equals_without(kv_heads: int) -> None:
    lm = _lm(num_key_value_heads=kv_heads)
    ids = torch.randint(3, 64, (2, 6))
    cached = lm.generate(ids, max_new_tokens=12, eos_token_id=[])
    full = lm.generate(ids, max_new_tokens=12, eos_token_id=[], use_cache=False)
    assert cached.shape == (2, 18)
    assert torch.equal(cached, full)


def test_prefill_in_chunks_equals_one_forward() -> None:
    lm = _lm()
    ids = torch.randint(3, 64, (2, 9))
    cache = LlamaCache()
    parts = [lm(ids[:, :4], cache=cache), lm(ids[:, 4:5], cache=cache), lm(ids[:, 5:], cache=cache)]
    torch.testing.assert_close(torch.cat(parts, dim=1), lm(ids), rtol=1e-5, atol=1e-5)
    assert cache.length() == 9


def test_left_padded_row_generates_as_alone() -> None:
    lm = _lm()
    ids = torch.randint(3, 64, (2, 7))
    mask = torch.tensor([[0, 0, 0, 1, 1, 1, 1], [1] * 7])
    batch = lm.generate(ids, attention_mask=mask, max_new_tokens=8, eos_token_id=[])
    alone = lm.generate(ids[:1, 3:], max_new_tokens=8, eos_token_id=[])
    assert torch.equal(batch[0, 3:], alone[0])
    uncached = lm.generate(
        ids, attention_mask=mask, max_new_tokens=8, eos_token_id=[], use_cache=False
    )
    assert torch.equal(batch, uncached)


def test_attention_matches_a_naive_reference() -> None:
    """One layer's attention against explicit softmax with repeated KV heads."""
    lm = _lm(num_attention_heads=4, num_key_value_heads=2)
    attn = lm.model.layers[0].self_attn
    b, t, c, h, d = 2, 5, 32, 4, 8
    x = torch.randn(b, t, c)
    cos, sin = rope_cos_sin(torch.arange(t).expand(b, t), d, lm.config.rope_theta)
    q = apply_rope(attn.q_proj(x).view(b, t, h, d).transpose(1, 2), cos, sin)
    k = apply_rope(attn.k_proj(x).view(b, t, 2, d).transpose(1, 2), cos, sin)
    v = attn.v_proj(x).view(b, t, 2, d).transpose(1, 2)
    k, v = k.repeat_interleave(2, dim=1), v.repeat_interleave(2, dim=1)  # (B, H, T, D)
    scores = (q @ k.transpose(-1, -2)) / d**0.5
    scores = scores.masked_fill(~torch.ones(t, t, dtype=torch.bool).tril(), float("-inf"))
    ref = attn.o_proj((F.softmax(scores, -1) @ v).transpose(1, 2).reshape(b, t, h * d))
    torch.testing.assert_close(attn(x, cos, sin, None, None), ref, rtol=1e-5, atol=1e-5)


def test_rope_rotates_relative_positions_only() -> None:
    """q·k after RoPE depends on the distance of the positions, not on where they are."""
    q, k = torch.randn(1, 1, 1, 8), torch.randn(1, 1, 1, 8)

    def score(pq: int, pk: int) -> torch.Tensor:
        cq, sq = rope_cos_sin(torch.tensor([[pq]]), 8, 10000.0)
        ck, sk = rope_cos_sin(torch.tensor([[pk]]), 8, 10000.0)
        return (apply_rope(q, cq, sq) * apply_rope(k, ck, sk)).sum()

    torch.testing.assert_close(score(7, 3), score(104, 100))
    assert not torch.allclose(score(7, 3), score(7, 6))


def test_tied_embeddings_share_one_parameter() -> None:
    lm = _lm(tie_word_embeddings=True)
    assert lm.lm_head.weight is lm.model.embed_tokens.weight
    assert _lm().lm_head.weight is not _lm().model.embed_tokens.weight


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        ({"num_key_value_heads": 3}, "num_key_value_heads"),
        ({"head_dim": 7}, "head_dim"),
        ({"num_hidden_layers": 0}, "num_hidden_layers"),
        ({"rope_theta": 0.0}, "rope_theta"),
    ],
)
def test_config_rejects_inconsistent_values(overrides: dict[str, object], named: str) -> None:
    with pytest.raises(ModelConfigError, match=named):
        LlamaConfig.tiny(**overrides)


def test_attention_mask_of_the_wrong_length_is_refused() -> None:
    with pytest.raises(ModelConfigError, match="attention_mask"):
        _lm()(torch.ones(1, 4, dtype=torch.long), attention_mask=torch.ones(1, 3))
