"""KimiLinearConfig: the published config.json, the 1-based hybrid schedule, clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from kimmy_swarm.model import (
    KimiLinearConfig,
    KimiLinearForCausalLM,
    ModelConfigError,
    hybrid_layers,
)

KDA_48B = [1, 2, 3, 5, 6, 7, 9, 10, 11, 13, 14, 15, 17, 18, 19, 21, 22, 23, 25, 26]
FULL_48B = [4, 8, 12, 16, 20, 24, 27]


def published_config() -> dict:
    """The fields of moonshotai/Kimi-Linear-48B-A3B-Instruct's config.json (model-spec §2),
    plus keys we do not use, which must survive a round trip."""
    return {
        "architectures": ["KimiLinearForCausalLM"],
        "auto_map": {"AutoConfig": "configuration_kimi.KimiLinearConfig"},
        "model_type": "kimi_linear",
        "hidden_size": 2304,
        "num_hidden_layers": 27,
        "intermediate_size": 9216,
        "num_attention_heads": 32,
        "num_key_value_heads": 32,
        "kv_lora_rank": 512,
        "q_lora_rank": None,
        "qk_nope_head_dim": 128,
        "qk_rope_head_dim": 64,
        "v_head_dim": 128,
        "mla_use_nope": True,
        "linear_attn_config": {
            "full_attn_layers": FULL_48B,
            "kda_layers": KDA_48B,
            "num_heads": 32,
            "head_dim": 128,
            "short_conv_kernel_size": 4,
        },
        "num_experts": 256,
        "num_experts_per_token": 8,
        "num_shared_experts": 1,
        "moe_intermediate_size": 1024,
        "moe_router_activation_func": "sigmoid",
        "moe_renormalize": True,
        "first_k_dense_replace": 1,
        "moe_layer_freq": 1,
        "model_max_length": 1048576,
        "bos_token_id": 163584,
        "eos_token_id": 163586,
        "pad_token_id": 163839,
        "torch_dtype": "bfloat16",
        "vocab_size": 163840,
    }


def test_published_config_reads_as_a_3_to_1_hybrid(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(published_config()))
    cfg = KimiLinearConfig.from_pretrained(tmp_path)
    types = cfg.layer_types
    assert types.count("kda") == 20 and types.count("mla") == 7
    assert types[3] == "mla" and types[0] == "kda" and types[-1] == "mla"  # 1-based lists
    assert [cfg.is_moe_layer(i) for i in range(3)] == [False, True, True]  # first layer dense
    assert cfg.qk_head_dim == 192


def test_round_trip_keeps_unknown_keys(tmp_path: Path) -> None:
    raw = published_config()
    cfg = KimiLinearConfig.from_dict(raw)
    cfg.save_pretrained(tmp_path)
    back = json.loads((tmp_path / "config.json").read_text())
    assert back["auto_map"] == raw["auto_map"]
    assert back["linear_attn_config"]["kda_layers"] == KDA_48B
    assert KimiLinearConfig.from_pretrained(tmp_path) == cfg


def test_published_weight_names_and_shapes() -> None:
    """Names and shapes of the checkpoint (vLLM's loader) at the 48B dims, 4 layers deep."""
    cfg = KimiLinearConfig.from_dict(published_config()).replace(
        num_hidden_layers=4, linear_attn_config=hybrid_layers(4, num_heads=32, head_dim=128)
    )
    with torch.device("meta"):
        sd = KimiLinearForCausalLM(cfg).state_dict()
    expect = {
        "model.embed_tokens.weight": [163840, 2304],
        "lm_head.weight": [163840, 2304],
        "model.norm.weight": [2304],
        "model.layers.0.self_attn.q_conv1d.weight": [4096, 1, 4],
        "model.layers.0.self_attn.f_a_proj.weight": [128, 2304],
        "model.layers.0.self_attn.f_b_proj.weight": [4096, 128],
        "model.layers.0.self_attn.dt_bias": [4096],
        "model.layers.0.self_attn.A_log": [1, 1, 32, 1],
        "model.layers.0.self_attn.b_proj.weight": [32, 2304],
        "model.layers.0.self_attn.g_b_proj.weight": [4096, 128],
        "model.layers.0.self_attn.o_norm.weight": [128],
        "model.layers.0.mlp.gate_proj.weight": [9216, 2304],
        "model.layers.3.self_attn.q_proj.weight": [32 * 192, 2304],
        "model.layers.3.self_attn.kv_a_proj_with_mqa.weight": [512 + 64, 2304],
        "model.layers.3.self_attn.kv_a_layernorm.weight": [512],
        "model.layers.3.self_attn.kv_b_proj.weight": [32 * 256, 512],
        "model.layers.3.self_attn.o_proj.weight": [2304, 32 * 128],
        "model.layers.1.block_sparse_moe.gate.weight": [256, 2304],
        "model.layers.1.block_sparse_moe.gate.e_score_correction_bias": [256],
        "model.layers.1.block_sparse_moe.experts.255.w1.weight": [1024, 2304],
        "model.layers.1.block_sparse_moe.experts.0.w2.weight": [2304, 1024],
        "model.layers.1.block_sparse_moe.shared_experts.up_proj.weight": [1024, 2304],
        "model.layers.1.input_layernorm.weight": [2304],
        "model.layers.1.post_attention_layernorm.weight": [2304],
    }
    assert {k: list(sd[k].shape) for k in expect} == expect
    assert not any("attn_res" in k or "max_logits" in k or "last_load" in k for k in sd)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"model_type": "llama"}, "model_type 'llama'"),
        ({"linear_attn_config": {"kda_layers": [1, 2], "full_attn_layers": [2, 3, 4],
          "num_heads": 4, "head_dim": 16}}, "in both"),
        ({"linear_attn_config": {"kda_layers": [0, 1, 2], "full_attn_layers": [4],
          "num_heads": 4, "head_dim": 16}}, "outside 1..4"),
        ({"linear_attn_config": {"kda_layers": [1, 2], "full_attn_layers": [4],
          "num_heads": 4, "head_dim": 16}}, "layers [3] are in neither"),
        ({"linear_attn_config": {"kda_layers": [1]}}, "missing 'full_attn_layers'"),
        ({"q_lora_rank": 64}, "q_lora_rank=64"),
        ({"mla_use_nope": False}, "mla_use_nope=false"),
        ({"moe_router_activation_func": "softmax"}, "'softmax'"),
        ({"num_experts_per_token": 9}, "num_experts_per_token"),
        ({"residual": "dense"}, "residual 'dense'"),
        ({"hidden_size": 0}, "hidden_size must be ≥ 1; got 0"),
    ],
)  # fmt: skip
def test_bad_configs_name_the_value(change: dict, message: str) -> None:
    raw = KimiLinearConfig.tiny().to_dict()
    raw.update(change)
    with pytest.raises(ModelConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        KimiLinearConfig.from_dict(raw)


def test_missing_or_broken_file(tmp_path: Path) -> None:
    with pytest.raises(ModelConfigError, match=r"no config\.json"):
        KimiLinearConfig.from_pretrained(tmp_path)
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(ModelConfigError, match="not readable JSON"):
        KimiLinearConfig.from_pretrained(tmp_path)


def test_without_linear_attn_config_every_layer_is_mla() -> None:
    cfg = KimiLinearConfig.tiny(linear_attn_config=None)
    assert cfg.layer_types == ("mla",) * 4
    assert hybrid_layers(8, num_heads=2, head_dim=8).full_attn_layers == (4, 8)
    assert hybrid_layers(6, num_heads=2, head_dim=8).full_attn_layers == (4, 6)
    assert hybrid_layers(4, num_heads=2, head_dim=8, kind="kda").full_attn_layers == ()
