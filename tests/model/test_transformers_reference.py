"""Cross-checks of our model code against the Hugging Face `transformers` implementations.

Our `model.LlamaForCausalLM`, `model.Qwen2ForCausalLM` and `model.KimiLinearForCausalLM`
claim to be the same functions as transformers' classes of the same names on the same
weights, and to read and write the same checkpoint folders. These tests check both claims,
both ways, in float32, on tiny random models:

* transformers model → `save_pretrained` → our `from_pretrained`: same logits;
* our model → `save_pretrained` → transformers' `from_pretrained` (no missing, unexpected or
  mismatched keys): same logits;
* each on an unpadded batch and on a left-padded one (attention_mask [B, T], 1 = real
  token). Our models derive positions from the mask (`cumsum − 1`); transformers gets the
  same `position_ids`. Padded positions are not compared (their outputs are never used);
* greedy generation: the same 8 new tokens (ours `generate(eos_token_id=[])`, transformers
  `generate(do_sample=False)` with its EOS stop disabled), on a left-padded batch, and the
  logits transformers computes step by step with its KV / recurrent cache equal our
  full-sequence forward over the generated ids.

Tolerance: the relative error `max|ours − ref| / max|ref|` over the compared logits must be
≤ 1e-5 (`REL_TOL`); measured values are ~1e-7 (Llama), ~2e-7 (Qwen2) and ~1e-6 (Kimi Linear).

Llama: GQA (4 heads, 2 KV heads, head_dim 8), rope_theta 50000 (not the default),
rms_norm_eps 1e-6, with tied and untied embeddings.

Qwen2: the Llama sizes (head_dim from hidden / heads, as transformers' Qwen2 derives it),
rope_theta 1e6 (Qwen2.5's), random q/k/v biases (zeros at init on both sides, which would
hide a missing one), tied and untied; `use_sliding_window` false, as Qwen2.5 ships.

Kimi Linear: our `KimiLinearConfig.tiny()` layout (KDA, KDA, KDA, MLA; dense first FFN, then
a 4-expert top-2 MoE with a shared expert), routed_scaling_factor 2.446, random RMSNorm
scales and router score-correction biases (so that norms and routing bias count), and 80
tokens, more than one 64-token KDA chunk. transformers' Kimi Linear runs without
flash-linear-attention (fla) or causal-conv1d: it falls back to its own PyTorch chunked /
recurrent KDA and convolution, which is the reference here. Its default initializer range
(0.02) is kept on purpose: at that scale the MLA latent is small, so a wrong
`kv_a_layernorm` eps (1e-5 instead of 1e-6) moves the logits by ~8e-5 relative, which this
tolerance catches.

Requires `transformers>=5.24` (verified with 5.24.0); skipped without it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

transformers = pytest.importorskip("transformers", minversion="5.24")
pytest.importorskip("transformers.models.kimi_linear")

from kimmy_swarm.model import KimiLinearConfig, KimiLinearForCausalLM  # noqa: E402
from kimmy_swarm.model.config import hybrid_layers  # noqa: E402
from kimmy_swarm.model.llama import LlamaConfig, LlamaForCausalLM  # noqa: E402
from kimmy_swarm.model.qwen2 import Qwen2Config, Qwen2ForCausalLM  # noqa: E402

REL_TOL = 1e-5
TIED = pytest.mark.parametrize("tie", [True, False], ids=["tied", "untied"])


# ---- helpers ----------------------------------------------------------------------------
def assert_rel_close(what: str, ours: torch.Tensor, ref: torch.Tensor) -> float:
    """`max|ours − ref| / max|ref|` ≤ REL_TOL; returns it (printed for the record)."""
    assert ours.shape == ref.shape, f"{what}: shapes {tuple(ours.shape)} vs {tuple(ref.shape)}"
    assert torch.isfinite(ours).all() and torch.isfinite(ref).all(), f"{what}: non-finite"
    err = float((ours.double() - ref.double()).abs().max() / ref.double().abs().max())
    print(f"{what}: max rel diff {err:.2e}")
    assert err <= REL_TOL, f"{what}: max|Δ| / max|ref| = {err:.2e} > {REL_TOL:.0e}"
    return err


def left_padded(
    vocab: int, t: int, pads: tuple[int, ...], pad_id: int = 0
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Random ids `[B, t]` (ids ≥ 3), row b left-padded by `pads[b]`: (ids, mask, positions)."""
    ids = torch.randint(3, vocab, (len(pads), t))
    mask = torch.ones(len(pads), t, dtype=torch.long)
    for row, n in enumerate(pads):
        mask[row, :n] = 0
    ids = ids.masked_fill(mask == 0, pad_id)
    positions = (mask.cumsum(-1) - 1).clamp(min=0)  # what our models derive from the mask
    return ids, mask, positions


@torch.no_grad()
def perturb_norms_(model: nn.Module, *, std: float = 0.2) -> None:
    """Random RMSNorm scales (all are initialised to ones, which would hide a swap)."""
    for name, p in model.named_parameters():
        if "norm" in name and name.endswith("weight"):
            p.add_(std * torch.randn_like(p))


@torch.no_grad()
def perturb_router_biases_(model: nn.Module, *, std: float = 0.05) -> None:
    """Random `e_score_correction_bias` (zeros at init), so that it steers the top-k."""
    for mod in model.modules():
        bias = getattr(mod, "e_score_correction_bias", None)
        if isinstance(bias, torch.Tensor):
            bias.normal_(std=std)


def hf_from_pretrained(cls: Any, folder: Path) -> Any:
    model, info = cls.from_pretrained(folder, dtype=torch.float32, output_loading_info=True)
    for kind in ("missing_keys", "unexpected_keys", "mismatched_keys"):
        assert not info[kind], f"transformers loading {folder}: {kind} {sorted(info[kind])}"
    return model.eval()


def check_logits(
    name: str, ours: nn.Module, hf: Any, vocab: int, t: int, pads: tuple[int, ...]
) -> None:
    """Same logits unpadded and (on real tokens) left-padded."""
    ids, mask, positions = left_padded(vocab, t, pads)
    with torch.no_grad():
        assert_rel_close(f"{name} unpadded", ours(ids), hf(ids).logits)
        mine = ours(ids, attention_mask=mask)
        ref = hf(ids, attention_mask=mask, position_ids=positions).logits
    real = mask.bool()
    assert_rel_close(f"{name} left-padded", mine[real], ref[real])


def check_greedy(name: str, ours: Any, hf: Any, vocab: int, pads: tuple[int, ...]) -> None:
    """Same 8 greedy tokens on a left-padded batch; transformers' cached step logits equal
    our full forward over the result."""
    ids, mask, _ = left_padded(vocab, 10, pads)
    hf.generation_config.eos_token_id = None  # ours runs with eos_token_id=[]: never stop
    with torch.no_grad():
        mine = ours.generate(ids, attention_mask=mask, max_new_tokens=8, eos_token_id=[])
        out = hf.generate(
            ids,
            attention_mask=mask,
            do_sample=False,
            max_new_tokens=8,
            return_dict_in_generate=True,
            output_logits=True,
        )
        assert torch.equal(mine, out.sequences), f"{name}: {mine} vs {out.sequences}"
        full_mask = torch.cat([mask, torch.ones(len(pads), 8, dtype=mask.dtype)], dim=1)
        logits = ours(mine, attention_mask=full_mask)[:, ids.shape[1] - 1 : -1]  # (B, 8, V)
    assert_rel_close(f"{name} cached decode", logits, torch.stack(out.logits, dim=1))


# ---- Llama ------------------------------------------------------------------------------
LLAMA_SIZES: dict[str, Any] = dict(
    vocab_size=64,
    hidden_size=32,
    intermediate_size=48,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=8,
    rms_norm_eps=1e-6,
    max_position_embeddings=128,
    bos_token_id=1,
    eos_token_id=2,
    pad_token_id=0,
)
LLAMA_ROPE_THETA = 50000.0


@TIED
def test_llama_transformers_checkpoint_loads_into_ours(tmp_path: Path, tie: bool) -> None:
    config = transformers.LlamaConfig(
        **LLAMA_SIZES,
        rope_parameters={"rope_type": "default", "rope_theta": LLAMA_ROPE_THETA},
        tie_word_embeddings=tie,
    )
    hf = transformers.LlamaForCausalLM(config).eval()
    perturb_norms_(hf)
    hf.save_pretrained(tmp_path)

    ours = LlamaForCausalLM.from_pretrained(tmp_path)
    c = ours.config
    assert (c.rope_theta, c.rms_norm_eps, c.tie_word_embeddings) == (LLAMA_ROPE_THETA, 1e-6, tie)
    assert (c.num_attention_heads, c.num_key_value_heads, c.head_dim) == (4, 2, 8)
    assert (ours.lm_head.weight is ours.model.embed_tokens.weight) == tie
    check_logits("llama hf→ours", ours, hf, 64, 12, (0, 3, 6))
    check_greedy("llama hf→ours", ours, hf, 64, (0, 4))


@TIED
def test_our_llama_checkpoint_loads_into_transformers(tmp_path: Path, tie: bool) -> None:
    config = LlamaConfig.tiny(
        rope_theta=LLAMA_ROPE_THETA, rms_norm_eps=1e-6, tie_word_embeddings=tie
    )
    ours = LlamaForCausalLM(config).eval()
    perturb_norms_(ours)
    ours.save_pretrained(tmp_path)

    hf = hf_from_pretrained(transformers.LlamaForCausalLM, tmp_path)
    hc = hf.config
    assert hc.rope_parameters["rope_theta"] == LLAMA_ROPE_THETA
    assert (hc.rms_norm_eps, hc.tie_word_embeddings, hc.head_dim) == (1e-6, tie, 8)
    assert (hc.num_attention_heads, hc.num_key_value_heads) == (4, 2)
    tied_hf = hf.lm_head.weight.data_ptr() == hf.model.embed_tokens.weight.data_ptr()
    assert tied_hf == tie
    check_logits("llama ours→hf", ours, hf, 64, 12, (0, 3, 6))
    check_greedy("llama ours→hf", ours, hf, 64, (0, 4))


# ---- Qwen2 ------------------------------------------------------------------------------
QWEN2_ROPE_THETA = 1e6  # Qwen2.5's


@torch.no_grad()
def perturb_biases_(model: nn.Module, *, std: float = 0.5) -> None:
    """Random q/k/v biases (zeros at init in both implementations, which would hide a
    missing or misplaced one)."""
    for name, p in model.named_parameters():
        if name.endswith(".bias"):
            p.normal_(std=std)


@TIED
def test_qwen2_transformers_checkpoint_loads_into_ours(tmp_path: Path, tie: bool) -> None:
    sizes = {k: v for k, v in LLAMA_SIZES.items() if k != "head_dim"}  # hidden / heads = 8
    config = transformers.Qwen2Config(
        **sizes,
        rope_parameters={"rope_type": "default", "rope_theta": QWEN2_ROPE_THETA},
        tie_word_embeddings=tie,
        use_sliding_window=False,
    )
    hf = transformers.Qwen2ForCausalLM(config).eval()
    perturb_norms_(hf)
    perturb_biases_(hf)
    hf.save_pretrained(tmp_path)

    ours = Qwen2ForCausalLM.from_pretrained(tmp_path)
    c = ours.config
    assert type(c) is Qwen2Config and not c.use_sliding_window
    assert (c.rope_theta, c.rms_norm_eps, c.tie_word_embeddings) == (QWEN2_ROPE_THETA, 1e-6, tie)
    assert (c.num_attention_heads, c.num_key_value_heads, c.head_dim) == (4, 2, 8)
    assert (ours.lm_head.weight is ours.model.embed_tokens.weight) == tie
    bias = ours.model.layers[1].self_attn.v_proj.bias
    assert torch.equal(bias, hf.model.layers[1].self_attn.v_proj.bias)
    check_logits("qwen2 hf→ours", ours, hf, 64, 12, (0, 3, 6))
    check_greedy("qwen2 hf→ours", ours, hf, 64, (0, 4))


@TIED
def test_our_qwen2_checkpoint_loads_into_transformers(tmp_path: Path, tie: bool) -> None:
    config = Qwen2Config.tiny(rope_theta=QWEN2_ROPE_THETA, tie_word_embeddings=tie)
    ours = Qwen2ForCausalLM(config).eval()
    perturb_norms_(ours)
    perturb_biases_(ours)
    ours.save_pretrained(tmp_path)

    hf = hf_from_pretrained(transformers.Qwen2ForCausalLM, tmp_path)
    hc = hf.config
    assert hc.model_type == "qwen2" and hc.rope_parameters["rope_theta"] == QWEN2_ROPE_THETA
    assert (hc.rms_norm_eps, hc.tie_word_embeddings, hc.head_dim) == (1e-6, tie, 8)
    assert (hc.num_attention_heads, hc.num_key_value_heads) == (4, 2)
    assert hc.layer_types == ["full_attention"] * 2 and hc.sliding_window is None
    tied_hf = hf.lm_head.weight.data_ptr() == hf.model.embed_tokens.weight.data_ptr()
    assert tied_hf == tie
    check_logits("qwen2 ours→hf", ours, hf, 64, 12, (0, 3, 6))
    check_greedy("qwen2 ours→hf", ours, hf, 64, (0, 4))


# ---- Kimi Linear ------------------------------------------------------------------------
KIMI_T = 80  # > one 64-token KDA chunk, in ours and in transformers' fallback


def hf_kimi_config(**overrides: Any) -> Any:
    """transformers' `KimiLinearConfig` with the layout of our `KimiLinearConfig.tiny()`,
    given the published `config.json` way (`linear_attn_config`, `first_k_dense_replace`)."""
    lac = hybrid_layers(4, num_heads=4, head_dim=16).to_dict()
    kw: dict[str, Any] = dict(
        vocab_size=512,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=4,
        kv_lora_rank=32,
        q_lora_rank=None,
        qk_nope_head_dim=16,
        qk_rope_head_dim=8,
        v_head_dim=16,
        linear_attn_config=lac,
        num_experts=4,
        num_experts_per_token=2,
        num_shared_experts=1,
        moe_intermediate_size=32,
        moe_renormalize=True,
        routed_scaling_factor=2.446,
        first_k_dense_replace=1,
        rms_norm_eps=1e-5,
        model_max_length=4096,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=0,
    )
    return transformers.KimiLinearConfig(**(kw | overrides))


def test_hf_kimi_config_has_our_tiny_layout() -> None:
    hc = hf_kimi_config()
    assert hc.layer_types == ["linear_attention"] * 3 + ["full_attention"]
    assert hc.mlp_layer_types == ["dense"] + ["sparse"] * 3
    ours = KimiLinearConfig.tiny()
    assert ours.layer_types == ("kda", "kda", "kda", "mla")
    assert [ours.is_moe_layer(i) for i in range(4)] == [False, True, True, True]
    assert (hc.num_local_experts, hc.num_experts_per_tok, hc.n_shared_experts) == (4, 2, 1)
    assert (hc.linear_num_heads, hc.linear_head_dim, hc.linear_conv_kernel_dim) == (4, 16, 4)


def test_kimi_transformers_checkpoint_loads_into_ours(tmp_path: Path) -> None:
    hf = transformers.KimiLinearForCausalLM(hf_kimi_config()).eval()
    perturb_norms_(hf)
    perturb_router_biases_(hf)
    hf.save_pretrained(tmp_path)

    ours = KimiLinearForCausalLM.from_pretrained(tmp_path)
    c = ours.config
    assert c.layer_types == ("kda", "kda", "kda", "mla")
    assert (c.num_experts, c.num_experts_per_token, c.routed_scaling_factor) == (4, 2, 2.446)
    check_logits("kimi hf→ours", ours, hf, 512, KIMI_T, (0, 7, 30))
    check_greedy("kimi hf→ours", ours, hf, 512, (0, 4))


def test_our_kimi_checkpoint_loads_into_transformers(tmp_path: Path) -> None:
    ours = KimiLinearForCausalLM(KimiLinearConfig.tiny(routed_scaling_factor=2.446)).eval()
    perturb_norms_(ours)
    perturb_router_biases_(ours)
    ours.save_pretrained(tmp_path)

    hf = hf_from_pretrained(transformers.KimiLinearForCausalLM, tmp_path)
    hc = hf.config
    assert hc.layer_types == ["linear_attention"] * 3 + ["full_attention"]
    assert hc.mlp_layer_types == ["dense"] + ["sparse"] * 3
    assert (hc.num_local_experts, hc.num_experts_per_tok, hc.routed_scaling_factor) == (
        4,
        2,
        2.446,
    )
    assert hc.norm_topk_prob and hc.rms_norm_eps == 1e-5
    check_logits("kimi ours→hf", ours, hf, 512, KIMI_T, (0, 7, 30))
    check_greedy("kimi ours→hf", ours, hf, 512, (0, 4))
