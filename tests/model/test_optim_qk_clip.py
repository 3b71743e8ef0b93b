"""QK-Clip on a real `MLAttention`: clipped heads hit τ exactly on the next forward pass,
other heads and every non-query/key weight stay as they were."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from kimmy_swarm.model.config import KimiLinearConfig
from kimmy_swarm.model.errors import ModelConfigError
from kimmy_swarm.model.mla import MLAttention
from kimmy_swarm.model.optim import QKClipResult, find_mla_layers, qk_clip_

CLIPPED = (0, 2)  # heads blown up so their logits are ≫ τ


def _attn_and_input() -> tuple[MLAttention, torch.Tensor]:
    """Tiny MLA (H=4, dn=16, dr=8, dv=16) whose heads 0 and 2 have huge q weights, and whose
    shared k_rope is also large, so both the nope and the rope terms matter."""
    torch.manual_seed(0)
    attn = MLAttention(KimiLinearConfig.tiny())
    dn, dr = attn.qk_nope_head_dim, attn.qk_rope_head_dim
    with torch.no_grad():
        for h in CLIPPED:
            attn.q_proj.weight[h * (dn + dr) : (h + 1) * (dn + dr)].mul_(40.0)
        attn.kv_b_proj.weight.mul_(4.0)
        attn.kv_a_proj_with_mqa.weight[-dr:].mul_(30.0)  # the shared k_rope rows
    x = torch.randn(2, 12, 64, generator=torch.Generator().manual_seed(1))  # (B, T, hidden)
    return attn, x


def _max_logits(attn: MLAttention, x: torch.Tensor) -> torch.Tensor:
    attn.record_max_logits = True
    attn.reset_max_logits()
    with torch.no_grad():
        attn(x)
    return attn.max_logits.clone()  # (H,)


def _rope_share(attn: MLAttention, x: torch.Tensor, head: int) -> float:
    """|q_rope·k_rope| / |q_nope·k_nope| summed over positions, for one head."""
    dn, dr, dv = attn.qk_nope_head_dim, attn.qk_rope_head_dim, attn.v_head_dim
    with torch.no_grad():
        q = attn.q_proj(x)[..., head * (dn + dr) : (head + 1) * (dn + dr)]  # (B, T, dn + dr)
        latent, k_rope = attn.compress(x)  # (B, T, r), (B, T, dr)
        k_nope = attn.kv_b_proj(latent)[..., head * (dn + dv) : head * (dn + dv) + dn]
        nope = (q[..., :dn] @ k_nope.mT).abs().sum()
        rope = (q[..., dn:] @ k_rope.mT).abs().sum()
    return (rope / nope).item()


def test_clip_bounds_next_max_logit_at_tau() -> None:
    attn, x = _attn_and_input()
    assert _rope_share(attn, x, 0) > 0.2  # the rope term is a real part of the logit
    before = _max_logits(attn, x)
    tau = 0.5 * min(before[h].item() for h in CLIPPED)
    assert all(before[h] < tau for h in (1, 3))  # the other heads stay below τ
    weights = {n: p.detach().clone() for n, p in attn.named_parameters()}

    result = qk_clip_(attn, tau)

    assert result.clipped_heads == CLIPPED
    assert result.max_logits == pytest.approx(before.tolist())
    assert result.gammas == pytest.approx([tau / before[h].item() for h in CLIPPED])
    assert result.max_logit == pytest.approx(before.max().item())
    assert result.num_clipped == 2
    assert torch.equal(attn.max_logits, before)  # the record is the caller's to reset
    after = _max_logits(attn, x)
    for h in CLIPPED:
        assert after[h].item() == pytest.approx(tau, rel=1e-4)
    torch.testing.assert_close(after[[1, 3]], before[[1, 3]], rtol=1e-6, atol=0)
    # Latent, shared k_rope, values, output projection and norms untouched.
    for name in ("kv_a_proj_with_mqa.weight", "o_proj.weight", "kv_a_layernorm.weight"):
        assert torch.equal(dict(attn.named_parameters())[name], weights[name]), name
    dn, dv = attn.qk_nope_head_dim, attn.v_head_dim
    kv_b = attn.kv_b_proj.weight.view(attn.num_heads, dn + dv, -1)  # (H, dn + dv, r)
    assert torch.equal(kv_b[:, dn:], weights["kv_b_proj.weight"].view_as(kv_b)[:, dn:])


def test_clip_scales_nope_by_sqrt_gamma_and_rope_by_gamma() -> None:
    attn, x = _attn_and_input()
    before = _max_logits(attn, x)
    tau = 0.5 * min(before[h].item() for h in CLIPPED)
    h_, dn = attn.num_heads, attn.qk_nope_head_dim
    q_old = attn.q_proj.weight.detach().clone().view(h_, dn + attn.qk_rope_head_dim, -1)
    kv_old = attn.kv_b_proj.weight.detach().clone().view(h_, dn + attn.v_head_dim, -1)
    result = qk_clip_(attn, tau)
    q_new = attn.q_proj.weight.view_as(q_old)  # (H, dn + dr, hidden)
    kv_new = attn.kv_b_proj.weight.view_as(kv_old)  # (H, dn + dv, r)
    gammas = dict(zip(result.clipped_heads, result.gammas, strict=True))
    for h in range(h_):
        gamma = gammas.get(h, 1.0)
        torch.testing.assert_close(q_new[h, :dn], q_old[h, :dn] * math.sqrt(gamma))  # q_nope
        torch.testing.assert_close(q_new[h, dn:], q_old[h, dn:] * gamma)  # q_rope
        torch.testing.assert_close(kv_new[h, :dn], kv_old[h, :dn] * math.sqrt(gamma))  # k_nope
        assert torch.equal(kv_new[h, dn:], kv_old[h, dn:])  # v rows


def test_no_clip_when_all_heads_below_tau() -> None:
    attn, x = _attn_and_input()
    before = _max_logits(attn, x)
    q = attn.q_proj.weight.detach().clone()
    result = qk_clip_(attn, before.max().item() * 2)
    assert result.clipped_heads == () and result.gammas == ()
    assert torch.equal(attn.q_proj.weight, q)
    attn.reset_max_logits()  # nothing recorded: zeros, never above τ > 0
    assert qk_clip_(attn, 1e-3).clipped_heads == ()


@pytest.mark.parametrize("tau", [0.0, -1.0, math.nan, math.inf, True])
def test_bad_tau_is_rejected(tau: float) -> None:
    attn, _ = _attn_and_input()
    with pytest.raises(ModelConfigError, match="tau"):
        qk_clip_(attn, tau)


def test_find_mla_layers() -> None:
    cfg = KimiLinearConfig.tiny()
    model = nn.Module()
    model.layers = nn.ModuleList([nn.Linear(4, 4), MLAttention(cfg), MLAttention(cfg)])
    found = find_mla_layers(model)
    assert [name for name, _ in found] == ["layers.1", "layers.2"]
    assert found[0][1] is model.layers[1]
    attn = MLAttention(cfg)
    assert find_mla_layers(attn) == [("", attn)]
    assert find_mla_layers(nn.Linear(2, 2)) == []


def test_result_of_empty_layer() -> None:
    assert QKClipResult(max_logits=(), clipped_heads=(), gammas=()).max_logit == -math.inf


def test_optim_package_exports() -> None:
    from kimmy_swarm.model import optim

    assert sorted(optim.__all__) == sorted(
        [
            "MuonClip",
            "ParamSplit",
            "QKClipResult",
            "find_mla_layers",
            "muon_update",
            "newton_schulz",
            "qk_clip_",
            "rms_match_scale",
            "split_params",
        ]
    )
    assert all(hasattr(optim, name) for name in optim.__all__)
