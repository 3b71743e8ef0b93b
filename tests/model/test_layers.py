"""KDA, MLA and MoE layers: cached decoding equals the full pass, padding is exact, the
router follows its formula, QK-Clip's logit recording sees the true maximum."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from kimmy_swarm.model import KDAState, KimiLinearConfig, MLAState
from kimmy_swarm.model.kda_layer import KimiDeltaAttention
from kimmy_swarm.model.mla import MLAttention
from kimmy_swarm.model.moe import SparseMoE, balance_router_biases_

CFG = KimiLinearConfig.tiny()


def _stepwise(
    layer: torch.nn.Module, x: torch.Tensor, state: object, splits: list[int]
) -> torch.Tensor:
    outs, start = [], 0
    with torch.no_grad():
        for n in splits:
            outs.append(layer(x[:, start : start + n], cache=state))
            start += n
    return torch.cat(outs, dim=1)


def test_kda_layer_cache_matches_full_pass() -> None:
    layer = KimiDeltaAttention(CFG).double()
    x = torch.randn(2, 80, CFG.hidden_size, dtype=torch.float64)
    full = layer(x)  # with grad: the chunked path
    state = KDAState()
    got = _stepwise(layer, x, state, [70, 3, 1, 1, 5])  # chunked prefill, then decode steps
    torch.testing.assert_close(got, full, rtol=1e-9, atol=1e-10)
    assert state.recurrent is not None and state.recurrent.shape == (2, 4, 16, 16)
    assert state.conv_q is not None and state.conv_q.shape == (2, 64, 3)


def test_kda_layer_left_padding_is_exact() -> None:
    layer = KimiDeltaAttention(CFG).double()
    x = torch.randn(1, 9, CFG.hidden_size, dtype=torch.float64)
    padded = torch.cat([torch.randn(1, 5, CFG.hidden_size, dtype=torch.float64), x], dim=1)
    mask = torch.tensor([[0] * 5 + [1] * 9])
    torch.testing.assert_close(layer(padded, token_mask=mask)[:, 5:], layer(x), rtol=0, atol=1e-12)


def test_kda_gate_initialisation_follows_fla() -> None:
    layer = KimiDeltaAttention(CFG)
    a = layer.A_log.exp()
    assert bool(((a >= 1) & (a <= 16)).all())
    dt = F.softplus(layer.dt_bias)  # inverse softplus at init
    assert bool(((dt >= 1e-4) & (dt <= 0.1 + 1e-6)).all())


def test_mla_cache_matches_full_pass_and_stores_latents_only() -> None:
    layer = MLAttention(CFG).double()
    x = torch.randn(2, 12, CFG.hidden_size, dtype=torch.float64)
    full = layer(x)
    state = MLAState()
    got = _stepwise(layer, x, state, [5, 4, 1, 1, 1])
    torch.testing.assert_close(got, full, rtol=1e-9, atol=1e-10)
    assert state.latent is not None and state.latent.shape == (2, 12, CFG.kv_lora_rank)
    assert state.k_rope is not None and state.k_rope.shape == (2, 12, CFG.qk_rope_head_dim)


def test_mla_records_the_largest_pre_softmax_logit_per_head() -> None:
    layer = MLAttention(CFG).double()
    layer.record_max_logits = True
    x = torch.randn(2, 7, CFG.hidden_size, dtype=torch.float64) * 10
    layer(x)
    h, dn, dr = CFG.num_attention_heads, CFG.qk_nope_head_dim, CFG.qk_rope_head_dim
    q = layer.q_proj(x).view(2, 7, h, dn + dr)
    latent, k_rope = layer.compress(x)
    k_nope = layer.kv_b_proj(latent).view(2, 7, h, dn + CFG.v_head_dim)[..., :dn]
    k = torch.cat([k_nope, k_rope[:, :, None].expand(2, 7, h, dr)], dim=-1)
    s = torch.einsum("bthd,bshd->bhts", q, k) / math.sqrt(dn + dr)
    s = s.masked_fill(~torch.ones(7, 7, dtype=torch.bool).tril(), float("-inf"))
    torch.testing.assert_close(layer.max_logits, s.amax(dim=(0, 2, 3)).clamp(min=0))
    layer.reset_max_logits()
    assert float(layer.max_logits.abs().sum()) == 0.0


def _moe_reference(moe: SparseMoE, x: torch.Tensor, cfg: KimiLinearConfig) -> torch.Tensor:
    """One token at a time, straight from the formula."""
    out = []
    for tok in x.reshape(-1, x.shape[-1]):
        s = torch.sigmoid(moe.gate.weight @ tok)  # (E,)
        chosen = (s + moe.gate.e_score_correction_bias).topk(cfg.num_experts_per_token).indices
        w = s[chosen] / s[chosen].sum() * cfg.routed_scaling_factor
        y = sum(w[j] * moe.experts[int(e)](tok) for j, e in enumerate(chosen))
        assert moe.shared_experts is not None
        out.append(y + moe.shared_experts(tok))
    return torch.stack(out).view_as(x)


def test_moe_matches_the_per_token_formula_with_a_bias() -> None:
    cfg = CFG.replace(routed_scaling_factor=2.5)
    moe = SparseMoE(cfg).double()
    moe.gate.e_score_correction_bias.copy_(torch.tensor([0.0, 5.0, 0.0, -5.0]))
    x = torch.randn(2, 6, CFG.hidden_size, dtype=torch.float64)
    torch.testing.assert_close(moe(x), _moe_reference(moe, x, cfg))
    # the +5 bias forces expert 1 into every token's top-2, −5 keeps expert 3 out
    assert moe.last_load[1] == 12 and moe.last_load[3] == 0


def test_router_bias_balancing_moves_towards_even_load() -> None:
    moe = SparseMoE(CFG)
    moe.last_load.copy_(torch.tensor([10.0, 0.0, 4.0, 2.0]))  # mean 4
    assert balance_router_biases_(moe, rate=0.01) == 1
    torch.testing.assert_close(
        moe.gate.e_score_correction_bias, torch.tensor([-0.01, 0.01, 0.0, 0.01])
    )


def test_mla_latent_norm_uses_the_published_eps_not_rms_norm_eps() -> None:
    """The official modeling code builds `kv_a_layernorm` with its default eps (1e-6); ours
    used the config's `rms_norm_eps` (1e-5 in the tiny configs)."""
    config = KimiLinearConfig.tiny()
    assert config.rms_norm_eps == 1e-5
    layer = MLAttention(config)
    assert layer.kv_a_layernorm.eps == 1e-6
    x = torch.randn(2, 8, config.kv_lora_rank, dtype=torch.float64) * 1e-3
    w = layer.kv_a_layernorm.weight.detach().double()
    want = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
    got = layer.kv_a_layernorm.double()(x)
    assert torch.allclose(got, want, rtol=1e-12, atol=0)
