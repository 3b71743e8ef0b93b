"""The causal LM: Attention Residuals, gradients, padding, parameter counts."""

from __future__ import annotations

import pytest
import torch

from kimmy_swarm.model import KimiLinearConfig, KimiLinearForCausalLM
from kimmy_swarm.model.attnres import DepthMixer


def test_zero_queries_average_the_sources_uniformly() -> None:
    mixer = DepthMixer(8, eps=1e-12)
    a, b, c = (torch.randn(2, 3, 8) for _ in range(3))
    torch.testing.assert_close(mixer([a, b, c]), (a + b + c) / 3)
    with torch.no_grad():
        mixer.query.copy_(torch.full((8,), 50.0))  # a large query picks the most aligned key
    one = torch.ones(2, 3, 8)
    torch.testing.assert_close(mixer([one, -one]), one)


def test_block_attnres_with_one_sublayer_per_block_is_full_attnres() -> None:
    full = KimiLinearForCausalLM(KimiLinearConfig.tiny(residual="full_attnres")).double()
    block = KimiLinearForCausalLM(
        KimiLinearConfig.tiny(residual="block_attnres", attn_res_num_blocks=8)  # 8 sublayers
    ).double()
    with torch.no_grad():
        for p in full.parameters():
            p.normal_()  # non-zero pseudo-queries, so the mixing is not uniform
    block.load_state_dict(full.state_dict())
    ids = torch.randint(0, 512, (2, 9))
    torch.testing.assert_close(block(ids), full(ids))
    coarse = KimiLinearForCausalLM(
        KimiLinearConfig.tiny(residual="block_attnres", attn_res_num_blocks=2)
    ).double()
    coarse.load_state_dict(full.state_dict())
    assert not torch.allclose(coarse(ids), full(ids))


@pytest.mark.parametrize("residual", ["standard", "full_attnres", "block_attnres"])
def test_every_parameter_gets_a_gradient(residual: str) -> None:
    lm = KimiLinearForCausalLM(KimiLinearConfig.tiny(residual=residual, num_experts_per_token=4))
    ids = torch.randint(0, 512, (2, 70))  # > 64 tokens: the chunked KDA path
    logits = lm(ids[:, :-1])
    loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), ids[:, 1:].flatten())
    loss.backward()
    missing = [n for n, p in lm.named_parameters() if p.grad is None or not p.grad.any()]
    assert missing == []
    if residual != "standard":  # zero-initialised queries still learn; layer 0 has no mixer
        assert not hasattr(lm.model.layers[0], "attn_res")


def test_attention_residuals_change_the_function_but_add_few_parameters() -> None:
    std = KimiLinearForCausalLM(KimiLinearConfig.tiny())
    res = KimiLinearForCausalLM(KimiLinearConfig.tiny(residual="block_attnres"))
    extra = res.num_parameters() - std.num_parameters()
    assert extra == 2 * 4 * 64  # a query per sublayer but the first, and the final mix
    assert std.num_parameters(exclude_embeddings=True) == std.num_parameters() - 2 * 512 * 64


def test_tied_embeddings_share_one_tensor() -> None:
    lm = KimiLinearForCausalLM(KimiLinearConfig.tiny(tie_word_embeddings=True))
    assert lm.lm_head.weight is lm.model.embed_tokens.weight
    assert (
        lm.num_parameters()
        == KimiLinearForCausalLM(KimiLinearConfig.tiny()).num_parameters() - 512 * 64
    )
