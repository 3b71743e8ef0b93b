"""Qwen2: Llama's layers with q/k/v biases; its config (HF `Qwen2Config` keys, the sliding
window it refuses), checkpoint folders, and the serving factory picking it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch

from kimmy_swarm.model.errors import ModelConfigError
from kimmy_swarm.model.llama import LlamaConfig, LlamaForCausalLM
from kimmy_swarm.model.qwen2 import Qwen2Config, Qwen2ForCausalLM
from kimmy_swarm.model.serve.factory import load_model_dir
from kimmy_swarm.model.tokenizer import train_bpe_tokenizer

# The published config.json of Qwen2.5-Coder-0.5B-Instruct (transformers 4.43 wrote it).
QWEN25_CODER_05B: dict[str, Any] = {
    "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0,
    "bos_token_id": 151643, "eos_token_id": 151645, "hidden_act": "silu",
    "hidden_size": 896, "initializer_range": 0.02, "intermediate_size": 4864,
    "max_position_embeddings": 32768, "max_window_layers": 24, "model_type": "qwen2",
    "num_attention_heads": 14, "num_hidden_layers": 24, "num_key_value_heads": 2,
    "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 1000000.0,
    "sliding_window": 32768, "tie_word_embeddings": True, "torch_dtype": "bfloat16",
    "transformers_version": "4.43.1", "use_cache": True, "use_sliding_window": False,
    "vocab_size": 151936,
}  # fmt: skip


def _qwen(**overrides: Any) -> Qwen2ForCausalLM:
    lm = Qwen2ForCausalLM(Qwen2Config.tiny(**overrides)).eval()
    with torch.no_grad():  # zeros at init, as in transformers: make them count
        for name, p in lm.named_parameters():
            if name.endswith(".bias"):
                p.normal_(std=0.5)
    return lm


def test_only_q_k_v_have_biases_under_hf_names() -> None:
    names = {n for n, _ in _qwen().named_parameters() if n.endswith(".bias")}
    assert names == {f"model.layers.{i}.self_attn.{p}_proj.bias" for i in range(2) for p in "qkv"}
    assert not any(
        n.endswith(".bias") for n, _ in LlamaForCausalLM(LlamaConfig.tiny()).named_parameters()
    )


def test_the_biases_are_in_the_function() -> None:
    lm = _qwen()
    ids = torch.randint(3, 64, (1, 7))
    before = lm(ids)
    with torch.no_grad():
        lm.model.layers[0].self_attn.k_proj.bias.zero_()
    assert not torch.allclose(lm(ids), before)


def test_greedy_with_cache_equals_without_and_left_padding() -> None:
    lm = _qwen()
    ids = torch.randint(3, 64, (2, 7))
    mask = torch.tensor([[0, 0, 1, 1, 1, 1, 1], [1] * 7])
    cached = lm.generate(ids, attention_mask=mask, max_new_tokens=10, eos_token_id=[])
    full = lm.generate(
        ids, attention_mask=mask, max_new_tokens=10, eos_token_id=[], use_cache=False
    )
    assert torch.equal(cached, full)
    alone = lm.generate(ids[:1, 2:], max_new_tokens=10, eos_token_id=[])
    assert torch.equal(cached[0, 2:], alone[0])


def test_a_published_config_json_reads() -> None:
    c = Qwen2Config.from_dict(QWEN25_CODER_05B)
    assert (c.hidden_size, c.num_hidden_layers, c.head_dim, c.num_key_value_heads) == (
        896,
        24,
        64,
        2,
    )
    assert (c.rope_theta, c.rms_norm_eps, c.tie_word_embeddings) == (1e6, 1e-6, True)
    assert (c.eos_token_id, c.use_sliding_window, c.sliding_window) == (151645, False, 32768)
    d = c.to_dict()
    assert (d["model_type"], d["architectures"], d["hidden_act"]) == (
        "qwen2",
        ["Qwen2ForCausalLM"],
        "silu",
    )
    assert "attention_bias" not in d  # transformers' Qwen2 has none: q/k/v always have biases
    assert Qwen2Config.from_dict(d) == c


def test_defaults_are_transformers_qwen2_ones() -> None:
    """A config.json that omits them gets what transformers would use."""
    sizes = {k: QWEN25_CODER_05B[k] for k in ("model_type", "vocab_size", "hidden_size",
             "intermediate_size", "num_hidden_layers", "num_attention_heads",
             "num_key_value_heads")}  # fmt: skip
    c = Qwen2Config.from_dict(sizes)
    assert (c.rope_theta, c.rms_norm_eps, c.max_position_embeddings) == (10000.0, 1e-6, 32768)
    assert (c.tie_word_embeddings, c.use_sliding_window, c.max_window_layers) == (False, False, 28)


@pytest.mark.parametrize(("cls", "model_type"), [(Qwen2Config, "llama"), (LlamaConfig, "qwen2")])
def test_the_other_model_type_is_refused(cls: type[LlamaConfig], model_type: str) -> None:
    d = {**QWEN25_CODER_05B, "model_type": model_type}
    with pytest.raises(
        ModelConfigError, match=f"model_type '{model_type}' is not one of {cls.__name__}'s"
    ):
        cls.from_dict(d)


@pytest.mark.parametrize(
    "window",
    [
        {"use_sliding_window": True, "sliding_window": 4096, "max_window_layers": 21},
        {"use_sliding_window": True, "sliding_window": 4096, "max_window_layers": 0},
        {"use_sliding_window": True, "sliding_window": 4096, "max_window_layers": 99,
         "layer_types": ["full_attention"] * 23 + ["sliding_attention"]},
    ],
    ids=["from-max-window-layers", "all-layers", "from-layer-types"],
)  # fmt: skip
def test_a_window_shorter_than_the_context_is_refused(window: dict[str, Any]) -> None:
    with pytest.raises(
        ModelConfigError, match=r"sliding_window=4096 < max_position_embeddings=32768"
    ):
        Qwen2Config.from_dict({**QWEN25_CODER_05B, **window})


@pytest.mark.parametrize(
    "window",
    [
        {"use_sliding_window": False, "sliding_window": 4096, "max_window_layers": 0},
        {"use_sliding_window": True, "sliding_window": 32768, "max_window_layers": 0},
        {"use_sliding_window": True, "sliding_window": 4096, "max_window_layers": 24},
        {"use_sliding_window": True, "sliding_window": None, "max_window_layers": 0},
    ],
    ids=["switched-off", "window-covers-context", "no-layer-slides", "no-window"],
)
def test_a_window_that_never_drops_a_key_is_accepted(window: dict[str, Any]) -> None:
    assert Qwen2Config.from_dict({**QWEN25_CODER_05B, **window}).num_hidden_layers == 24


def test_each_model_class_wants_its_own_config() -> None:
    with pytest.raises(
        ModelConfigError, match="LlamaForCausalLM is built from a LlamaConfig; got a Qwen2Config"
    ):
        LlamaForCausalLM(Qwen2Config.tiny())
    with pytest.raises(ModelConfigError, match="Qwen2ForCausalLM is built from a Qwen2Config"):
        Qwen2ForCausalLM(LlamaConfig.tiny())


@pytest.mark.parametrize("tie", [True, False], ids=["tied", "untied"])
def test_checkpoint_folder_round_trips_and_serves(tmp_path: Path, tie: bool) -> None:
    tok = train_bpe_tokenizer(["def f(x): return x + 1"] * 10, vocab_size=280)
    lm = _qwen(vocab_size=tok.vocab_size, tie_word_embeddings=tie)
    lm.save_pretrained(tmp_path, tokenizer=tok)
    written = json.loads((tmp_path / "config.json").read_text())
    assert (written["model_type"], written["architectures"]) == ("qwen2", ["Qwen2ForCausalLM"])
    loaded, tokenizer = load_model_dir(tmp_path)  # the serving factory picks Qwen2
    assert type(loaded) is Qwen2ForCausalLM and loaded.config == lm.config
    assert (loaded.lm_head.weight is loaded.model.embed_tokens.weight) == tie
    ids = torch.tensor([tokenizer.encode("def f(x):")])
    torch.testing.assert_close(loaded.cpu()(ids), lm(ids), rtol=0, atol=0)
