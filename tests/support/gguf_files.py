"""Tiny GGUF files for the loader's tests, written with `gguf.GGUFWriter` (llama.cpp's own
writer): a Llama or Qwen2 model's weights under llama.cpp's tensor names, Q/K rows permuted
for Llama as llama.cpp's converter does, and a byte-level BPE tokenizer's metadata.

    write_gguf(path, lm, vocab, merges)                        # "llama", or "qwen2" for Qwen2
    write_gguf(path, qwen, vocab, merges, pre="qwen2", drop=("output.weight",))  # tied head
    write_tokenizer_gguf(path, vocab, merges, pre="qwen2")      # metadata only, no tensors
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from gguf import GGMLQuantizationType, GGUFWriter
from gguf.quants import dequantize, quantize

from kimmy_swarm.model.llama import LlamaForCausalLM

__all__ = ["TEMPLATE", "add_tokenizer", "llama_cpp_permute", "write_gguf", "write_tokenizer_gguf"]

Q = GGMLQuantizationType
TEMPLATE = "{% for m in messages %}<|bos|>{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
_LAYER_PARTS = {
    "attn_norm": "input_layernorm", "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj", "ffn_norm": "post_attention_layernorm",
    "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj",
}  # fmt: skip


def llama_cpp_permute(w: np.ndarray, n_head: int) -> np.ndarray:
    """`LlamaModel.permute` of llama.cpp's convert_hf_to_gguf.py, copied as it is there."""
    return (
        w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
        .swapaxes(1, 2)
        .reshape(w.shape)
    )


def gguf_tensors(lm: LlamaForCausalLM) -> dict[str, np.ndarray]:
    """The model's weights (and q/k/v biases, when it has them) under GGUF names; Q/K rows
    permuted for a plain Llama only, as llama.cpp's converter does (not for Qwen2)."""
    cfg = lm.config
    permute = type(lm) is LlamaForCausalLM
    sd = {k: v.detach().numpy() for k, v in lm.state_dict().items()}
    out = {
        "token_embd.weight": sd["model.embed_tokens.weight"],
        "output_norm.weight": sd["model.norm.weight"],
        "output.weight": sd["lm_head.weight"],
    }
    heads = {"attn_q": cfg.num_attention_heads, "attn_k": cfg.num_key_value_heads}
    for i in range(cfg.num_hidden_layers):
        for g, h in _LAYER_PARTS.items():
            w = sd[f"model.layers.{i}.{h}.weight"]
            out[f"blk.{i}.{g}.weight"] = (
                llama_cpp_permute(w, heads[g]) if permute and g in heads else w
            )
            if f"model.layers.{i}.{h}.bias" in sd:
                out[f"blk.{i}.{g}.bias"] = sd[f"model.layers.{i}.{h}.bias"]
    return out


def add_tokenizer(
    w: GGUFWriter,
    vocab: Sequence[str],
    merges: Sequence[str],
    *,
    pre: str = "gpt2",
    types: Sequence[int] | None = None,
) -> None:
    """Byte-level BPE metadata: tokens, merges, types (default: the first three CONTROL —
    pad, bos, eos — the rest NORMAL), special ids 0/1/2 and `TEMPLATE`."""
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(pre)
    w.add_token_list(list(vocab))
    w.add_token_types(list(types) if types is not None else [3, 3, 3] + [1] * (len(vocab) - 3))
    w.add_token_merges(list(merges))
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_pad_token_id(0)
    w.add_chat_template(TEMPLATE)


def _finish(w: GGUFWriter) -> None:
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def write_gguf(
    path: Path,
    lm: LlamaForCausalLM,
    vocab: list[str],
    merges: list[str],
    *,
    arch: str | None = None,
    pre: str = "gpt2",
    qtypes: dict[str, Any] | None = None,
    drop: tuple[str, ...] = (),
) -> dict[str, np.ndarray]:
    """Write `lm` as a GGUF file of architecture `arch` (default: the model's, "llama" or
    "qwen2"); `qtypes` quantizes matrices by part name ("attn_q": Q.Q4_1; biases and norms
    stay F32, as llama.cpp keeps them); `drop` leaves tensors out. Returns the float32
    values a loader must read back."""
    cfg = lm.config
    w = GGUFWriter(path, arch or cfg.model_types[0])
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_block_count(cfg.num_hidden_layers)
    w.add_head_count(cfg.num_attention_heads)
    w.add_head_count_kv(cfg.num_key_value_heads)
    w.add_rope_freq_base(cfg.rope_theta)
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    add_tokenizer(w, vocab, merges, pre=pre)
    expected = {}
    for name, value in gguf_tensors(lm).items():
        if name in drop:
            continue
        qtype = (qtypes or {}).get(name.split(".")[-2], Q.F32) if value.ndim == 2 else Q.F32
        if qtype == Q.F32:
            w.add_tensor(name, value)
            expected[name] = value
        else:
            data = quantize(value, qtype)
            w.add_tensor(name, data, raw_dtype=qtype)
            expected[name] = dequantize(data, qtype).reshape(value.shape)
    _finish(w)
    return expected


def write_tokenizer_gguf(
    path: Path,
    vocab: Sequence[str],
    merges: Sequence[str],
    *,
    pre: str = "gpt2",
    types: Sequence[int] | None = None,
) -> Path:
    """A GGUF file with a tokenizer's metadata and no tensors (for `load_gguf_tokenizer`)."""
    w = GGUFWriter(path, "llama")
    add_tokenizer(w, vocab, merges, pre=pre, types=types)
    _finish(w)
    return path
