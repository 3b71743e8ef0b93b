"""A Llama-family causal LM (Llama 2/3, SmolLM2, …): RMSNorm, RoPE, GQA attention, SwiGLU.

Module and weight names follow Hugging Face's `LlamaForCausalLM` (`model.layers.N.self_attn.
q_proj`, …), and Q/K use HF's RoPE layout (rotate the two halves of each head), so HF
safetensors load as they are; `model.gguf_loader` undoes llama.cpp's Q/K row permutation.
Architectures that differ from Llama only in constants of the config (`model.qwen2`: biases
on q/k/v) subclass `LlamaConfig` and `LlamaForCausalLM` and share these layers.

The forward signature matches `KimiLinearForCausalLM` (`input_ids, attention_mask, cache`, plus
`new_cache()` and `config.eos_token_id`/`pad_token_id`), so `model.generation.generate` drives
both: greedy or sampled, batched with left padding, with or without the KV cache.

    lm = LlamaForCausalLM(LlamaConfig.tiny())
    out = lm.generate(torch.tensor([[1, 5, 9]]), max_new_tokens=8)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Self

import torch
import torch.nn.functional as F
from torch import nn

from kimmy_swarm.model.config_json import read_config_json, write_config_json
from kimmy_swarm.model.errors import ModelConfigError
from kimmy_swarm.model.norm import RMSNorm

__all__ = ["LLAMA_MODEL_TYPES", "LlamaCache", "LlamaConfig", "LlamaForCausalLM"]

#: `config.json` `model_type`s of this architecture (SmolLM2 and TinyLlama say "llama").
LLAMA_MODEL_TYPES = ("llama",)


@dataclass(frozen=True)
class LlamaConfig:
    """Sizes and constants of a Llama-family model (HF `LlamaConfig` field meanings).

    The class variables say what is fixed for the architecture rather than per checkpoint;
    a subclass (`Qwen2Config`) changes them.
    """

    #: `config.json` `model_type`s read; the first is written.
    model_types: ClassVar[tuple[str, ...]] = LLAMA_MODEL_TYPES
    #: `config.json` `architectures` entry (transformers' class name).
    architecture: ClassVar[str] = "LlamaForCausalLM"
    #: Whether q_proj, k_proj and v_proj have biases (o_proj and the MLP never do).
    qkv_bias: ClassVar[bool] = False

    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    rope_theta: float = 10000.0
    rms_norm_eps: float = 1e-5
    max_position_embeddings: int = 2048
    tie_word_embeddings: bool = False
    bos_token_id: int | None = None
    eos_token_id: int | None = None
    pad_token_id: int | None = None
    torch_dtype: str | None = None

    def __post_init__(self) -> None:
        sizes = {
            "vocab_size": self.vocab_size,
            "hidden_size": self.hidden_size,
            "intermediate_size": self.intermediate_size,
            "num_hidden_layers": self.num_hidden_layers,
            "num_attention_heads": self.num_attention_heads,
            "num_key_value_heads": self.num_key_value_heads,
            "head_dim": self.head_dim,
            "max_position_embeddings": self.max_position_embeddings,
        }
        for name, value in sizes.items():
            if not isinstance(value, int) or value < 1:
                raise ModelConfigError(
                    f"{type(self).__name__}.{name} must be an int ≥ 1; got {value!r}"
                )
        if self.num_attention_heads % self.num_key_value_heads:
            raise ModelConfigError(
                f"num_attention_heads ({self.num_attention_heads}) must be a multiple of "
                f"num_key_value_heads ({self.num_key_value_heads})"
            )
        if self.head_dim % 2:
            raise ModelConfigError(f"head_dim must be even for RoPE; got {self.head_dim}")
        if not self.rope_theta > 0 or not self.rms_norm_eps > 0:
            raise ModelConfigError(
                f"rope_theta and rms_norm_eps must be > 0; got {self.rope_theta}, "
                f"{self.rms_norm_eps}"
            )

    # ---- (de)serialization --------------------------------------------------------------
    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Self:
        """Build from an HF `config.json` dict (`head_dim` defaults to hidden / heads, KV
        heads to the heads); other keys are ignored.

        Raises:
            ModelConfigError: `model_type` is not one of this class's, the config asks for
                what this model does not do (RoPE scaling, attention or MLP biases), or a
                value is missing or invalid.
        """
        mt = d.get("model_type")
        if mt not in cls.model_types:
            raise ModelConfigError(
                f"model_type {mt!r} is not one of {cls.__name__}'s ({', '.join(cls.model_types)})"
            )
        # transformers ≥ 5 writes RoPE as `rope_parameters`; older files `rope_scaling`
        rope = d.get("rope_parameters") or d.get("rope_scaling") or {}
        rope_type = rope.get("rope_type", rope.get("type", "default"))
        unsupported = cls._unsupported_keys(d)
        if rope_type != "default":
            unsupported.append(f"RoPE type {rope_type!r}")
        if unsupported:
            raise ModelConfigError(
                f"config.json sets {', '.join(unsupported)}, which {cls.architecture} here "
                "does not implement"
            )
        known = {f.name for f in dataclasses.fields(cls)}
        kw = {k: v for k, v in d.items() if k in known}
        kw.setdefault("num_key_value_heads", d.get("num_attention_heads"))
        if kw.get("head_dim") is None and d.get("num_attention_heads"):
            kw["head_dim"] = d.get("hidden_size", 0) // d["num_attention_heads"]
        if isinstance(kw.get("eos_token_id"), list):  # HF allows several; the first is ours
            kw["eos_token_id"] = kw["eos_token_id"][0] if kw["eos_token_id"] else None
        kw.setdefault("torch_dtype", d.get("dtype"))
        if "rope_theta" in rope:
            kw.setdefault("rope_theta", rope["rope_theta"])
        try:
            return cls(**kw)
        except TypeError as e:  # a required size is missing
            raise ModelConfigError(f"config.json: {e}") from e

    @classmethod
    def _unsupported_keys(cls, d: dict[str, Any]) -> list[str]:
        """What `d` turns on that this architecture does not implement (RoPE aside)."""
        return [k for k in ("attention_bias", "mlp_bias") if d.get(k)]

    def to_dict(self) -> dict[str, Any]:
        """The HF `config.json` dict (`architectures`, `model_type`, our fields)."""
        d: dict[str, Any] = {
            "architectures": [self.architecture],
            "model_type": self.model_types[0],
        }
        d.update(dataclasses.asdict(self))
        d.update(self._constant_keys())
        return d

    def _constant_keys(self) -> dict[str, Any]:
        """HF keys whose value is fixed for the architecture (written for transformers)."""
        return {"hidden_act": "silu", "attention_bias": False, "mlp_bias": False}

    @classmethod
    def from_pretrained(cls, path: str | Path) -> Self:
        """Read `config.json` from a checkpoint folder (or the file itself).

        Raises:
            ModelConfigError: the file is missing, not a JSON object, or invalid.
        """
        return cls.from_dict(read_config_json(path))

    def save_pretrained(self, path: str | Path) -> Path:
        """Write `path/config.json`; returns the file."""
        return write_config_json(self.to_dict(), path)

    def replace(self, **changes: Any) -> Self:
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)

    @classmethod
    def tiny(cls, **overrides: Any) -> Self:
        """A few-thousand-parameter config for tests (GQA: 4 heads, 2 KV heads)."""
        base: dict[str, Any] = dict(
            vocab_size=64,
            hidden_size=32,
            intermediate_size=48,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=8,
            max_position_embeddings=128,
            bos_token_id=1,
            eos_token_id=2,
        )
        return cls(**(base | overrides))


@dataclass
class LlamaCache:
    """Per-layer keys and values of the tokens seen so far, `[B, H_kv, L, D]` each.

    A plain concatenating cache: enough for `generate`; the serving engine's paged cache is
    a different object.
    """

    keys: list[torch.Tensor | None] = field(default_factory=list)
    values: list[torch.Tensor | None] = field(default_factory=list)

    def length(self) -> int:
        """Tokens already cached (0 before the first forward)."""
        k = self.keys[0] if self.keys else None
        return 0 if k is None else k.shape[2]

    def update(
        self, layer: int, k: torch.Tensor, v: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:  # (B, Hkv, L + T, D) each
        """Append this step's `k`, `v` (`[B, H_kv, T, D]`) to layer `layer`; all of them."""
        while len(self.keys) <= layer:
            self.keys.append(None)
            self.values.append(None)
        old_k, old_v = self.keys[layer], self.values[layer]
        if old_k is not None and old_v is not None:
            k = torch.cat([old_k, k], dim=2)
            v = torch.cat([old_v, v], dim=2)
        self.keys[layer], self.values[layer] = k, v
        return k, v


# ---- RoPE ----------------------------------------------------------------------------------
def rope_cos_sin(
    positions: torch.Tensor,  # (B, T) int
    head_dim: int,
    theta: float,
) -> tuple[torch.Tensor, torch.Tensor]:  # (B, 1, T, D) each, fp32
    """cos/sin of angle `pos · theta^(-2i/D)`, each frequency written for both halves."""
    inv_freq = theta ** -(torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
    angles = positions.float()[..., None] * inv_freq.to(positions.device)  # (B, T, D/2)
    emb = torch.cat([angles, angles], dim=-1)[:, None]  # (B, 1, T, D)
    return emb.cos(), emb.sin()


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate pairs (x[i], x[i + D/2]) of `x` `[B, H, T, D]` (HF's half-split layout)."""
    x1, x2 = x.float().chunk(2, dim=-1)  # (B, H, T, D/2) each
    rotated = torch.cat([-x2, x1], dim=-1)  # (B, H, T, D)
    return (x.float() * cos + rotated * sin).to(x.dtype)


# ---- layers --------------------------------------------------------------------------------
class LlamaMLP(nn.Module):
    """SwiGLU: `down(silu(gate(x)) ⊙ up(x))`, no biases."""

    def __init__(self, config: LlamaConfig) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.up_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.down_proj = nn.Linear(config.intermediate_size, config.hidden_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, T, C)
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))  # (B, T, C)


class LlamaAttention(nn.Module):
    """Causal grouped-query attention with RoPE; each KV head serves H / H_kv query heads.

    q/k/v have biases when the config's architecture says so (`qkv_bias`: Qwen2).
    """

    def __init__(self, config: LlamaConfig, layer_idx: int) -> None:
        super().__init__()
        self.layer_idx = layer_idx
        self.n_head, self.n_kv = config.num_attention_heads, config.num_key_value_heads
        self.head_dim = config.head_dim
        c, d = config.hidden_size, config.head_dim
        bias = config.qkv_bias
        self.q_proj = nn.Linear(c, self.n_head * d, bias=bias)
        self.k_proj = nn.Linear(c, self.n_kv * d, bias=bias)
        self.v_proj = nn.Linear(c, self.n_kv * d, bias=bias)
        self.o_proj = nn.Linear(self.n_head * d, c, bias=False)

    def forward(
        self,
        x: torch.Tensor,  # (B, T, C)
        cos: torch.Tensor,  # (B, 1, T, D)
        sin: torch.Tensor,  # (B, 1, T, D)
        mask: torch.Tensor | None,  # (B, 1, T, L) bool, True = attend; None = plain causal
        cache: LlamaCache | None,
    ) -> torch.Tensor:  # (B, T, C)
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, self.n_head, self.head_dim).transpose(1, 2)  # (B, H, T, D)
        k = self.k_proj(x).view(b, t, self.n_kv, self.head_dim).transpose(1, 2)  # (B, Hkv, T, D)
        v = self.v_proj(x).view(b, t, self.n_kv, self.head_dim).transpose(1, 2)  # (B, Hkv, T, D)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        if cache is not None:
            k, v = cache.update(self.layer_idx, k, v)  # (B, Hkv, L, D)
        y = F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, is_causal=mask is None, enable_gqa=self.n_kv != self.n_head
        )  # (B, H, T, D)
        return self.o_proj(y.transpose(1, 2).reshape(b, t, self.n_head * self.head_dim))


class LlamaDecoderLayer(nn.Module):
    """Pre-norm block: `x + attn(norm(x))`, then `x + mlp(norm(x))`."""

    def __init__(self, config: LlamaConfig, layer_idx: int) -> None:
        super().__init__()
        self.input_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.self_attn = LlamaAttention(config, layer_idx)
        self.post_attention_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.mlp = LlamaMLP(config)

    def forward(
        self,
        x: torch.Tensor,  # (B, T, C)
        cos: torch.Tensor,
        sin: torch.Tensor,
        mask: torch.Tensor | None,
        cache: LlamaCache | None,
    ) -> torch.Tensor:  # (B, T, C)
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask, cache)
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaModel(nn.Module):
    """Embeddings, the decoder layers and the final norm (HF's `model.` prefix)."""

    def __init__(self, config: LlamaConfig) -> None:
        super().__init__()
        self.config = config
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(
            LlamaDecoderLayer(config, i) for i in range(config.num_hidden_layers)
        )
        self.norm = RMSNorm(config.hidden_size, config.rms_norm_eps)

    def forward(
        self,
        input_ids: torch.Tensor,  # (B, T)
        attention_mask: torch.Tensor | None = None,  # (B, L) 1 = real token, left padding
        cache: LlamaCache | None = None,
    ) -> torch.Tensor:  # (B, T, C)
        b, t = input_ids.shape
        past = 0 if cache is None else cache.length()
        positions, mask = _positions_and_mask(b, t, past, attention_mask, input_ids.device)
        cos, sin = rope_cos_sin(positions, self.config.head_dim, self.config.rope_theta)
        x = self.embed_tokens(input_ids)  # (B, T, C)
        for layer in self.layers:
            x = layer(x, cos, sin, mask, cache)
        return self.norm(x)


def _positions_and_mask(
    b: int, t: int, past: int, attention_mask: torch.Tensor | None, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor | None]:  # (B, T), (B, 1, T, past + T) | None
    """RoPE positions of the new tokens and the attention mask (None: plain causal, no cache).

    Left padding shifts positions so that each row's first real token is at 0, and padded
    keys are masked out; with a cache, new queries see every cached key (bottom-right causal).
    """
    total = past + t
    if attention_mask is None:
        positions = torch.arange(past, total, device=device).expand(b, t)  # (B, T)
        if past == 0:
            return positions, None
        keep = torch.ones(b, total, dtype=torch.bool, device=device)  # (B, L)
    else:
        if attention_mask.shape != (b, total):
            raise ModelConfigError(
                f"attention_mask must be [batch, cached + new] = {[b, total]}; got "
                f"{list(attention_mask.shape)}"
            )
        keep = attention_mask.bool()  # (B, L)
        positions = (keep.long().cumsum(-1) - 1).clamp(min=0)[:, past:]  # (B, T)
    q_idx = torch.arange(past, total, device=device)[:, None]  # (T, 1)
    k_idx = torch.arange(total, device=device)[None, :]  # (1, L)
    mask = (k_idx <= q_idx)[None] & keep[:, None, :]  # (B, T, L)
    # a fully padded query row would give NaN: let it see itself (its output is never used)
    mask = mask | (k_idx == q_idx)[None]
    return positions, mask[:, None]  # (B, 1, T, L)


class LlamaForCausalLM(nn.Module):
    """The Llama decoder with its LM head (tied to the embeddings when the config says so)."""

    #: The config class this model is built from (exactly: a subclass is another model).
    config_class: ClassVar[type[LlamaConfig]] = LlamaConfig

    def __init__(self, config: LlamaConfig) -> None:
        super().__init__()
        if type(config) is not self.config_class:
            raise ModelConfigError(
                f"{type(self).__name__} is built from a {self.config_class.__name__}; got a "
                f"{type(config).__name__}"
            )
        self.config = config
        self.model = LlamaModel(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        if config.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, nn.Linear | nn.Embedding):
            nn.init.normal_(module.weight, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(
        self,
        input_ids: torch.Tensor,  # (B, T)
        attention_mask: torch.Tensor | None = None,  # (B, L)
        cache: LlamaCache | None = None,
    ) -> torch.Tensor:  # (B, T, vocab)
        """Logits of every position; with `cache`, `input_ids` are only the new tokens."""
        return self.lm_head(self.model(input_ids, attention_mask, cache))

    def save_pretrained(self, path: str | Path, **kwargs: Any) -> Path:
        """Write an HF-format folder (config.json, safetensors; `tokenizer=`, `dtype=`,
        `max_shard_bytes=` as for `model.checkpoint.save_checkpoint`)."""
        from kimmy_swarm.model.checkpoint import save_checkpoint

        return save_checkpoint(self, path, **kwargs)

    @classmethod
    def from_pretrained(
        cls,
        path: str | Path,
        *,
        dtype: torch.dtype | None = None,
        device: str | torch.device = "cpu",
    ) -> Self:
        """Load an HF folder of this architecture (config.json + safetensors, e.g. a
        `save_pretrained` one of transformers' class of the same name).

        Raises:
            ModelConfigError: config.json is missing, invalid or of another architecture.
            CheckpointError: weights are missing or do not fit the config.
        """
        from kimmy_swarm.model.checkpoint import load_pretrained_weights

        config = cls.config_class.from_pretrained(path)
        with torch.device("meta"):  # no random init: every weight comes from the folder
            model = cls(config)
        model.to_empty(device="cpu")
        if config.tie_word_embeddings:  # `to_empty` gave the head its own storage
            model.lm_head.weight = model.model.embed_tokens.weight
        return load_pretrained_weights(model, path, dtype=dtype, device=device)

    def new_cache(self) -> LlamaCache:
        """An empty KV cache for `forward(…, cache=)` / `generate`."""
        return LlamaCache()

    def generate(self, input_ids: torch.Tensor, **kwargs: Any) -> torch.Tensor:
        """`model.generation.generate(self, input_ids, **kwargs)`: greedy unless
        `do_sample=True`, KV-cached unless `use_cache=False`; returns prompt + new ids."""
        from kimmy_swarm.model.generation import generate

        return generate(self, input_ids, **kwargs)
