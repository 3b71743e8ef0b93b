"""`split_params` and `MuonClip`: grouping by checkpoint name, agreement with
`torch.optim.Muon` / `torch.optim.AdamW`, QK-Clip inside `step`, resume, LR schedulers."""

from __future__ import annotations

import io
import math

import pytest
import torch
from torch import nn

from kimmy_swarm.model.config import KimiLinearConfig
from kimmy_swarm.model.errors import CheckpointError, ModelConfigError
from kimmy_swarm.model.mla import MLAttention
from kimmy_swarm.model.optim import MuonClip, newton_schulz, split_params

HIDDEN = 64  # KimiLinearConfig.tiny().hidden_size


def _module(**children: nn.Module | nn.Parameter) -> nn.Module:
    m = nn.Module()
    for name, child in children.items():
        setattr(m, name, child)
    return m


def _p(*shape: int) -> nn.Parameter:
    return nn.Parameter(torch.randn(*shape) * 0.1)


def _checkpoint_like(seed: int = 0) -> nn.Module:
    """A small module whose parameter names follow the Kimi Linear checkpoint."""
    torch.manual_seed(seed)
    d = HIDDEN
    kda = _module(
        q_proj=nn.Linear(d, d, bias=False),
        q_conv1d=_module(weight=_p(d, 1, 4)),
        A_log=_p(1, 1, 4, 1),
        dt_bias=_p(d),
        o_norm=_module(weight=_p(16)),
        f_a_proj=nn.Linear(d, 16, bias=False),
    )
    moe = _module(
        gate=_module(weight=_p(4, d), e_score_correction_bias=_p(4)),
        experts=nn.ModuleList([_module(w1=nn.Linear(d, 32, bias=False)) for _ in range(2)]),
        shared_experts=_module(down_proj=nn.Linear(32, d, bias=False)),
    )
    layer0 = _module(input_layernorm=_module(weight=_p(d)), self_attn=kda, block_sparse_moe=moe)
    layer1 = _module(
        self_attn=MLAttention(KimiLinearConfig.tiny()),
        attn_res=_module(query=_p(d), key_norm=_module(weight=_p(d))),
        mlp=_module(up_proj=nn.Linear(d, 128, bias=True)),
    )
    frozen = _p(d, d)
    frozen.requires_grad_(False)
    inner = _module(
        embed_tokens=nn.Embedding(100, d),
        layers=nn.ModuleList([layer0, layer1]),
        norm=_module(weight=_p(d)),
        frozen=frozen,
    )
    return _module(model=inner, lm_head=nn.Linear(d, 100, bias=False))


MUON_NAMES = {
    "model.layers.0.self_attn.q_proj.weight",
    "model.layers.0.self_attn.f_a_proj.weight",
    "model.layers.0.block_sparse_moe.experts.0.w1.weight",
    "model.layers.0.block_sparse_moe.experts.1.w1.weight",
    "model.layers.0.block_sparse_moe.shared_experts.down_proj.weight",
    "model.layers.1.self_attn.q_proj.weight",
    "model.layers.1.self_attn.kv_a_proj_with_mqa.weight",
    "model.layers.1.self_attn.kv_b_proj.weight",
    "model.layers.1.self_attn.o_proj.weight",
    "model.layers.1.mlp.up_proj.weight",
}
ADAMW_DECAY = {
    "model.embed_tokens.weight",
    "lm_head.weight",
    "model.layers.0.block_sparse_moe.gate.weight",
    "model.layers.0.self_attn.q_conv1d.weight",
}
ADAMW_NO_DECAY = {
    "model.norm.weight",
    "model.layers.0.input_layernorm.weight",
    "model.layers.0.self_attn.A_log",
    "model.layers.0.self_attn.dt_bias",
    "model.layers.0.self_attn.o_norm.weight",
    "model.layers.0.block_sparse_moe.gate.e_score_correction_bias",
    "model.layers.1.self_attn.kv_a_layernorm.weight",
    "model.layers.1.attn_res.query",
    "model.layers.1.attn_res.key_norm.weight",
    "model.layers.1.mlp.up_proj.bias",
}


def test_split_params_by_checkpoint_name() -> None:
    split = split_params(_checkpoint_like())
    assert {n for n, _ in split.muon} == MUON_NAMES
    assert {n for n, _ in split.adamw} == ADAMW_DECAY | ADAMW_NO_DECAY  # frozen one left out
    assert all(p.ndim == 2 for _, p in split.muon)


def test_param_groups_and_weight_decay() -> None:
    opt = MuonClip(_checkpoint_like(), lr=0.01, adamw_lr=0.003, weight_decay=0.1)
    by_kind = {
        (g["use_muon"], g["weight_decay"]): (g["lr"], set(g["param_names"]))
        for g in opt.param_groups
    }
    assert by_kind == {
        (True, 0.1): (0.01, MUON_NAMES),
        (False, 0.1): (0.003, ADAMW_DECAY),
        (False, 0.0): (0.003, ADAMW_NO_DECAY),
    }
    assert opt.mla_layers[0][0] == "model.layers.1.self_attn"
    assert opt.mla_layers[0][1].record_max_logits  # enabled because τ is set


def test_split_params_on_full_model() -> None:
    modeling = pytest.importorskip("kimmy_swarm.model.modeling")
    model = modeling.KimiLinearForCausalLM(KimiLinearConfig.tiny())
    split = split_params(model)
    names = [n for n, _ in split.muon + split.adamw]
    assert sorted(names) == sorted(n for n, _ in model.named_parameters())
    adamw = {n for n, _ in split.adamw}
    for n, p in split.adamw:
        assert p.ndim != 2 or n.endswith(("embed_tokens.weight", "lm_head.weight", "gate.weight"))
    assert "model.embed_tokens.weight" in adamw
    assert any(n.endswith("self_attn.A_log") for n in adamw)
    assert any(n.endswith("q_conv1d.weight") for n in adamw)
    assert any(n.endswith("block_sparse_moe.gate.weight") for n in adamw)


def _two_matrices(seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return _module(wide=nn.Linear(48, 24, bias=False), tall=nn.Linear(16, 40, bias=False))


def _set_grads(model: nn.Module, gen: torch.Generator) -> None:
    for p in model.parameters():
        p.grad = torch.randn(p.shape, generator=gen)


def _reference_muon(model: nn.Module) -> torch.optim.Muon:
    return torch.optim.Muon(
        model.parameters(),
        lr=0.02,
        weight_decay=0.1,
        momentum=0.95,
        nesterov=True,
        ns_coefficients=(3.4445, -4.7750, 2.0315),
        eps=1e-7,
        ns_steps=5,
        adjust_lr_fn="match_rms_adamw",
    )


def _muon_pair(ns_dtype: torch.dtype) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Per step and param, (torch.optim.Muon's update, ours) from identical grads."""
    ref_model, our_model = _two_matrices(), _two_matrices()
    ref = _reference_muon(ref_model)
    ours = MuonClip(our_model, lr=0.02, weight_decay=0.1, ns_dtype=ns_dtype, qk_clip_tau=None)
    deltas = []
    g_ref, g_ours = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    for _ in range(3):
        before = [p.detach().clone() for p in ref_model.parameters()]
        assert all(torch.equal(a, b) for a, b in zip(before, our_model.parameters(), strict=True))
        _set_grads(ref_model, g_ref)
        _set_grads(our_model, g_ours)
        ref.step()
        ours.step()
        for b, p, q in zip(before, ref_model.parameters(), our_model.parameters(), strict=True):
            deltas.append((p.detach() - b, q.detach() - b))
        with torch.no_grad():  # restart both from the same point (ours) for the next step
            for p, q in zip(ref_model.parameters(), our_model.parameters(), strict=True):
                p.copy_(q)
    return deltas


def test_muon_matches_torch_muon_bitwise_in_bf16() -> None:
    """torch.optim.Muon runs Newton–Schulz in bf16 with ‖G‖ clamped at eps instead of
    ‖G‖ + eps (same value in bf16 for any non-tiny gradient); with `ns_dtype=bf16` our update
    is the same computation, so the parameters agree bit for bit."""
    for ref_delta, our_delta in _muon_pair(torch.bfloat16):
        assert torch.equal(ref_delta, our_delta)


def test_muon_fp32_agrees_with_torch_muon_to_bf16_precision() -> None:
    """Our default fp32 Newton–Schulz differs from torch's bf16 one only by bf16 rounding
    (measured ≈ 1.5 % relative on the update), and is the more accurate of the two."""
    for ref_delta, our_delta in _muon_pair(torch.float32):
        rel = ((ref_delta - our_delta).norm() / ref_delta.norm()).item()
        assert rel < 4e-2, rel
    # Accuracy: our fp32 NS is ~1e-6 from an fp64 one; the bf16 one is ~1e-2 away.
    G = torch.randn(24, 48, generator=torch.Generator().manual_seed(9))
    exact = newton_schulz(G.double())
    assert (newton_schulz(G).double() - exact).norm() < 1e-3 * exact.norm()
    assert (newton_schulz(G, dtype=torch.bfloat16).double() - exact).norm() > 3e-3 * exact.norm()


def _adamw_module(seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return _module(
        embed_tokens=nn.Embedding(30, 8),
        lm_head=nn.Linear(8, 30, bias=False),
        conv=_module(weight=_p(8, 1, 4)),
        norm=_module(weight=_p(8)),
        A_log=_p(1, 1, 2, 1),
    )


def test_adamw_part_matches_torch_adamw() -> None:
    ref_model, our_model = _adamw_module(), _adamw_module()
    decay = [p for n, p in ref_model.named_parameters() if "weight" in n and p.ndim >= 2]
    no_decay = [ref_model.norm.weight, ref_model.A_log]
    ref = torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
        lr=3e-3,
        betas=(0.9, 0.95),
        eps=1e-8,
    )
    ours = MuonClip(our_model, lr=3e-3, weight_decay=0.1, qk_clip_tau=None)
    assert not any(g["use_muon"] for g in ours.param_groups)
    g_ref, g_ours = torch.Generator().manual_seed(1), torch.Generator().manual_seed(1)
    for _ in range(3):
        _set_grads(ref_model, g_ref)
        _set_grads(our_model, g_ours)
        ref.step()
        ours.step()
        for (name, p), q in zip(ref_model.named_parameters(), our_model.parameters(), strict=True):
            torch.testing.assert_close(q, p, rtol=1e-6, atol=1e-7, msg=name)


def _train(model: nn.Module, opt: MuonClip, steps: range, x: torch.Tensor) -> list[int]:
    """Deterministic steps: the MLA forward (records max logits) plus a quadratic pull of
    every parameter toward a fixed target, so each one gets a gradient. Returns the number
    of heads QK-Clip rescaled at each step."""
    attn = model.model.layers[1].self_attn
    clipped = []
    for step in steps:
        opt.zero_grad()
        loss = attn(x).square().mean()
        gen = torch.Generator().manual_seed(100 + step)
        for p in model.parameters():
            if p.requires_grad:
                loss = loss + (p - torch.randn(p.shape, generator=gen)).square().sum() * 0.01
        loss.backward()
        opt.step()
        clipped.append(opt.last_qk_clip["model.layers.1.self_attn"].num_clipped)
    return clipped


def _boosted_queries(model: nn.Module) -> nn.Module:
    """Large MLA query weights: logits ≈ 16 ≫ τ = 1 at the first step."""
    with torch.no_grad():
        model.model.layers[1].self_attn.q_proj.weight.mul_(20.0)
    return model


@pytest.mark.parametrize("save_after", [1, 2])
def test_resume_is_bit_exact_with_qk_clip_active(save_after: int) -> None:
    """3 steps == `save_after` steps + save/load of model and optimizer into fresh objects
    + the remaining steps, bit for bit (2 + 1 is the brief's case; 1 + 2 makes QK-Clip fire
    after the resume, which needs the fresh optimizer to have re-armed the MLA recording)."""
    x = torch.randn(2, 8, HIDDEN, generator=torch.Generator().manual_seed(5))  # (B, T, hidden)
    kwargs = {"lr": 0.02, "qk_clip_tau": 1.0}
    straight = _boosted_queries(_checkpoint_like(seed=0))
    opt = MuonClip(straight, **kwargs)
    clipped = _train(straight, opt, range(3), x)
    assert clipped[:2] == [4, 1]  # all heads at step 1, head 2 again at step 2

    first = _boosted_queries(_checkpoint_like(seed=0))
    opt1 = MuonClip(first, **kwargs)
    _train(first, opt1, range(save_after), x)
    buf = io.BytesIO()
    torch.save({"model": first.state_dict(), "optim": opt1.state_dict()}, buf)
    buf.seek(0)
    saved = torch.load(buf, weights_only=True)

    resumed = _checkpoint_like(seed=123)  # different init: everything must come from the file
    resumed.load_state_dict(saved["model"])
    opt2 = MuonClip(resumed, **kwargs)
    opt2.load_state_dict(saved["optim"])
    assert _train(resumed, opt2, range(save_after, 3), x) == clipped[save_after:]

    for (name, p), q in zip(straight.named_parameters(), resumed.parameters(), strict=True):
        assert torch.equal(p, q), name
    for p, q in zip(straight.parameters(), resumed.parameters(), strict=True):
        for key, value in opt.state[p].items():
            assert torch.equal(torch.as_tensor(value), torch.as_tensor(opt2.state[q][key])), key
    assert opt2.last_qk_clip == opt.last_qk_clip


def test_load_state_dict_rejects_other_parameters() -> None:
    saved = MuonClip(_checkpoint_like()).state_dict()
    with pytest.raises(CheckpointError, match="param groups"):
        MuonClip(_two_matrices()).load_state_dict(saved)
    other = _checkpoint_like()
    other.lm_head.weight.requires_grad_(False)
    with pytest.raises(CheckpointError, match="other parameters"):
        MuonClip(other).load_state_dict(saved)


def test_lr_scheduler_scales_both_groups() -> None:
    model = _checkpoint_like()
    opt = MuonClip(model, lr=0.02, adamw_lr=0.004, qk_clip_tau=None)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: 0.5**step)
    assert sorted(set(sched.get_last_lr())) == [0.004, 0.02]
    opt.step()
    sched.step()
    assert sorted(set(sched.get_last_lr())) == [0.002, 0.01]
    zero = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: 0.0)  # lr 0: nothing moves
    assert {g["lr"] for g in opt.param_groups} == {0.0}
    before = [p.detach().clone() for p in model.parameters()]
    _set_grads(model, torch.Generator().manual_seed(0))
    opt.step()
    zero.step()
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))


def test_step_clips_mla_and_resets_its_record() -> None:
    model = _checkpoint_like()
    attn = model.model.layers[1].self_attn
    x = torch.randn(2, 8, HIDDEN, generator=torch.Generator().manual_seed(6))  # (B, T, hidden)
    opt = MuonClip(model, lr=0.0, qk_clip_tau=1e9)  # lr 0: only QK-Clip can move weights
    attn(x).sum().backward()
    seen = attn.max_logits.clone()  # (H,)
    tau = seen.median().item()
    opt.qk_clip_tau = tau
    opt.step()
    result = opt.last_qk_clip["model.layers.1.self_attn"]
    assert result.max_logits == pytest.approx(seen.tolist())
    assert set(result.clipped_heads) == {h for h in range(4) if seen[h] > tau}
    assert torch.equal(attn.max_logits, torch.zeros(4))  # reset for the next window
    with torch.no_grad():
        attn(x)
    assert attn.max_logits.max().item() <= tau * (1 + 1e-4)


def test_closure_and_params_without_grad() -> None:
    model = _two_matrices()
    opt = MuonClip(model, qk_clip_tau=None)
    tall_before = model.tall.weight.detach().clone()
    wide_before = model.wide.weight.detach().clone()
    expected_loss = model.wide.weight.sum().item()  # ones @ Wᵀ summed, before the step

    def closure() -> float:
        loss = model.wide(torch.ones(1, 48)).sum()
        loss.backward()
        return loss.item()

    assert opt.step(closure) == pytest.approx(expected_loss)
    assert not torch.equal(model.wide.weight, wide_before)  # wide had a grad: it moved
    assert torch.equal(model.tall.weight, tall_before)  # no grad: not updated, no state
    assert model.tall.weight not in opt.state
    assert not MuonClip(_checkpoint_like(), qk_clip_tau=None).mla_layers[0][1].record_max_logits


BAD_ARGS: list[tuple[dict[str, object], str]] = [
    ({"lr": -1e-3}, "lr"),
    ({"lr": math.nan}, "lr"),
    ({"adamw_lr": -1.0}, "adamw_lr"),
    ({"weight_decay": -0.1}, "weight_decay"),
    ({"momentum": 1.0}, "momentum"),
    ({"momentum": -0.5}, "momentum"),
    ({"ns_steps": 0}, "ns_steps"),
    ({"adamw_betas": (0.9, 1.0)}, "adamw_betas"),
    ({"adamw_betas": (0.9,)}, "adamw_betas"),
    ({"adamw_eps": 0.0}, "adamw_eps"),
    ({"qk_clip_tau": 0.0}, "qk_clip_tau"),
    ({"qk_clip_tau": -5.0}, "qk_clip_tau"),
    ({"qk_clip_tau": math.inf}, "qk_clip_tau"),
]


@pytest.mark.parametrize(("kwargs", "field"), BAD_ARGS, ids=[f for _, f in BAD_ARGS])
def test_bad_hyper_parameters_are_rejected(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(ModelConfigError, match=field):
        MuonClip(_two_matrices(), **kwargs)  # type: ignore[arg-type]


def test_model_without_trainable_parameters_is_rejected() -> None:
    frozen = nn.Linear(3, 3).requires_grad_(False)
    with pytest.raises(ModelConfigError, match="no trainable parameters"):
        MuonClip(frozen)
