"""`KimiLinearConfig`: the published Kimi Linear `config.json`, validated, plus tiny presets.

Field names are the checkpoint's (`model_type: "kimi_linear"`). Layer indices in
`linear_attn_config` are 1-based, as in the published file and vLLM's loader: layer `i`
(0-based) is KDA when `i + 1` is in `kda_layers` and MLA when it is in `full_attn_layers`.
Keys this project does not use (`auto_map`, …) are kept in `extra` and written back
unchanged; `architectures` is written from `residual` (see `KimiLinearConfig.to_dict`).
Two keys are our own: `residual` (Attention Residuals) and `attn_res_num_blocks`; a
checkpoint without them is a standard-residual model.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from kimmy_swarm.model.config_json import read_config_json, write_config_json
from kimmy_swarm.model.errors import ModelConfigError

__all__ = ["KimiLinearConfig", "LayerType", "LinearAttnConfig", "Residual", "hybrid_layers"]

LayerType = Literal["kda", "mla"]
Residual = Literal["standard", "full_attnres", "block_attnres"]
RESIDUALS = ("standard", "full_attnres", "block_attnres")
MODEL_TYPE = "kimi_linear"


@dataclass(frozen=True)
class LinearAttnConfig:
    """The `linear_attn_config` block: which layers are KDA/MLA and the KDA head shape."""

    kda_layers: tuple[int, ...]
    full_attn_layers: tuple[int, ...]
    num_heads: int
    head_dim: int
    short_conv_kernel_size: int = 4
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        for name in ("num_heads", "head_dim", "short_conv_kernel_size"):
            if getattr(self, name) < 1:
                raise ModelConfigError(
                    f"linear_attn_config.{name} must be ≥ 1; got {getattr(self, name)}"
                )

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LinearAttnConfig:
        known = {f.name for f in dataclasses.fields(cls)} - {"extra"}
        for key in ("kda_layers", "full_attn_layers", "num_heads", "head_dim"):
            if key not in d:
                raise ModelConfigError(f"linear_attn_config is missing {key!r}")
        kw = {k: v for k, v in d.items() if k in known}
        kw["kda_layers"] = tuple(int(i) for i in kw["kda_layers"])
        kw["full_attn_layers"] = tuple(int(i) for i in kw["full_attn_layers"])
        return cls(**kw, extra={k: v for k, v in d.items() if k not in known})

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = dict(self.extra)
        d.update(
            kda_layers=list(self.kda_layers),
            full_attn_layers=list(self.full_attn_layers),
            num_heads=self.num_heads,
            head_dim=self.head_dim,
            short_conv_kernel_size=self.short_conv_kernel_size,
        )
        return d


@dataclass(frozen=True)
class KimiLinearConfig:
    """Hyper-parameters of a Kimi Linear causal LM (defaults: the 48B-A3B checkpoint)."""

    vocab_size: int = 163840
    hidden_size: int = 2304
    intermediate_size: int = 9216
    num_hidden_layers: int = 27
    num_attention_heads: int = 32
    num_key_value_heads: int = 32
    hidden_act: str = "silu"
    rms_norm_eps: float = 1e-5
    initializer_range: float = 0.02
    tie_word_embeddings: bool = False
    model_max_length: int = 1048576
    # MLA (full attention), NoPE
    kv_lora_rank: int = 512
    q_lora_rank: int | None = None
    qk_nope_head_dim: int = 128
    qk_rope_head_dim: int = 64
    v_head_dim: int = 128
    mla_use_nope: bool = True
    # KDA; None means every layer is MLA
    linear_attn_config: LinearAttnConfig | None = None
    # MoE; num_experts None means every FFN is dense
    num_experts: int | None = 256
    num_experts_per_token: int = 8
    num_shared_experts: int | None = 1
    moe_intermediate_size: int = 1024
    moe_renormalize: bool = True
    moe_router_activation_func: str = "sigmoid"
    routed_scaling_factor: float = 2.446
    first_k_dense_replace: int = 1
    moe_layer_freq: int = 1
    use_grouped_topk: bool = False
    num_expert_group: int = 1
    topk_group: int = 1
    # tokens
    bos_token_id: int | None = 163584
    eos_token_id: int | None = 163586
    pad_token_id: int | None = 163839
    torch_dtype: str = "bfloat16"
    # Attention Residuals (ours)
    residual: Residual = "standard"
    attn_res_num_blocks: int = 8
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        self._check_sizes()
        self._check_supported()
        self.layer_types  # noqa: B018 — validates the layer lists

    def _check_sizes(self) -> None:
        positive = (
            "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
            "num_attention_heads", "kv_lora_rank", "qk_nope_head_dim", "v_head_dim",
            "attn_res_num_blocks",
        )  # fmt: skip
        for name in positive:
            if getattr(self, name) < 1:
                raise ModelConfigError(f"{name} must be ≥ 1; got {getattr(self, name)}")
        if self.qk_rope_head_dim < 0:
            raise ModelConfigError(f"qk_rope_head_dim must be ≥ 0; got {self.qk_rope_head_dim}")
        if self.num_experts is not None:
            if self.num_experts < 1 or not 1 <= self.num_experts_per_token <= self.num_experts:
                raise ModelConfigError(
                    f"num_experts_per_token must be in [1, num_experts={self.num_experts}]; "
                    f"got {self.num_experts_per_token}"
                )
            if self.moe_layer_freq < 1 or self.first_k_dense_replace < 0:
                raise ModelConfigError(
                    f"moe_layer_freq must be ≥ 1 and first_k_dense_replace ≥ 0; got "
                    f"{self.moe_layer_freq} and {self.first_k_dense_replace}"
                )

    def _check_supported(self) -> None:
        if self.hidden_act != "silu":
            raise ModelConfigError(f"hidden_act {self.hidden_act!r} is not supported; use 'silu'")
        if self.q_lora_rank is not None:
            raise ModelConfigError(
                f"q_lora_rank={self.q_lora_rank} is not supported: Kimi Linear projects "
                "queries directly (q_lora_rank null)"
            )
        if not self.mla_use_nope:
            raise ModelConfigError(
                "mla_use_nope=false (RoPE in MLA) is not supported: Kimi Linear's MLA uses NoPE"
            )
        if self.moe_router_activation_func != "sigmoid":
            raise ModelConfigError(
                f"moe_router_activation_func {self.moe_router_activation_func!r} is not "
                "supported; use 'sigmoid'"
            )
        if self.use_grouped_topk and self.num_expert_group > 1:
            raise ModelConfigError(
                f"grouped top-k routing (num_expert_group={self.num_expert_group}) is not "
                "supported; Kimi Linear routes over all experts"
            )
        if self.residual not in RESIDUALS:
            raise ModelConfigError(
                f"residual {self.residual!r} is not one of {', '.join(map(repr, RESIDUALS))}"
            )

    # ---- derived ------------------------------------------------------------------------
    @property
    def layer_types(self) -> tuple[LayerType, ...]:
        """'kda' or 'mla' per layer (0-based), from the 1-based lists of the config."""
        n = self.num_hidden_layers
        lac = self.linear_attn_config
        if lac is None:
            return ("mla",) * n
        kda, full = set(lac.kda_layers), set(lac.full_attn_layers)
        bad = sorted(i for i in kda | full if not 1 <= i <= n)
        if bad:
            raise ModelConfigError(
                f"linear_attn_config layer indices {bad} are outside 1..{n} (they are 1-based)"
            )
        both = sorted(kda & full)
        if both:
            raise ModelConfigError(f"layers {both} are in both kda_layers and full_attn_layers")
        missing = sorted(set(range(1, n + 1)) - kda - full)
        if missing:
            raise ModelConfigError(
                f"layers {missing} are in neither kda_layers nor full_attn_layers "
                "(each layer must be one type; indices are 1-based)"
            )
        return tuple("kda" if i + 1 in kda else "mla" for i in range(n))

    def is_moe_layer(self, layer_idx: int) -> bool:
        """Whether layer `layer_idx` (0-based) has a MoE FFN (else a dense MLP)."""
        return (
            self.num_experts is not None
            and layer_idx >= self.first_k_dense_replace
            and layer_idx % self.moe_layer_freq == 0
        )

    @property
    def qk_head_dim(self) -> int:
        return self.qk_nope_head_dim + self.qk_rope_head_dim

    # ---- (de)serialization --------------------------------------------------------------
    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> KimiLinearConfig:
        """Build from a `config.json` dict; unknown keys go to `extra`.

        Raises:
            ModelConfigError: `model_type` is not "kimi_linear", or a value is invalid.
        """
        mt = d.get("model_type", MODEL_TYPE)
        if mt != MODEL_TYPE:
            raise ModelConfigError(f"model_type {mt!r} is not {MODEL_TYPE!r}")
        known = {f.name for f in dataclasses.fields(cls)} - {"extra"}
        kw = {k: v for k, v in d.items() if k in known}
        lac = kw.get("linear_attn_config")
        if isinstance(lac, dict):
            kw["linear_attn_config"] = LinearAttnConfig.from_dict(lac)
        extra = {k: v for k, v in d.items() if k not in known and k != "model_type"}
        try:
            return cls(**kw, extra=extra)
        except TypeError as e:  # a wrongly typed value that the dataclass could not take
            raise ModelConfigError(f"config.json: {e}") from e

    def to_dict(self) -> dict[str, Any]:
        """The `config.json` dict (extra keys first, then ours; `model_type` included).

        `architectures` follows `residual`, whatever was read: vLLM picks the model class by
        it, and serves "KimiLinearForCausalLM" natively, so an Attention Residuals model must
        name a class that only our vLLM plugin registers (`model/vllm_plugin.py`) rather than
        be loaded silently as a standard-residual one.
        """
        arch = "KimiLinearForCausalLM" if self.residual == "standard" else "KimmyAttnResForCausalLM"
        d: dict[str, Any] = {"architectures": [arch]}
        d.update((k, v) for k, v in self.extra.items() if k != "architectures")
        for f in dataclasses.fields(self):
            if f.name == "extra":
                continue
            v = getattr(self, f.name)
            d[f.name] = v.to_dict() if isinstance(v, LinearAttnConfig) else v
        d["model_type"] = MODEL_TYPE
        return d

    @classmethod
    def from_pretrained(cls, path: str | Path) -> KimiLinearConfig:
        """Read `config.json` from a checkpoint folder (or the file itself).

        Raises:
            ModelConfigError: the file is missing, not a JSON object, or invalid.
        """
        return cls.from_dict(read_config_json(path))

    def save_pretrained(self, path: str | Path) -> Path:
        """Write `path/config.json`; returns the file."""
        return write_config_json(self.to_dict(), path)

    def replace(self, **changes: Any) -> KimiLinearConfig:
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)

    # ---- presets ------------------------------------------------------------------------
    @classmethod
    def tiny(cls, **overrides: Any) -> KimiLinearConfig:
        """A 4-layer 3:1 hybrid (KDA, KDA, KDA, MLA) with a small MoE, for tests and CPU.

        Keyword arguments override fields; `layers=` is not a field — use
        `hybrid_layers(n)` to build a `linear_attn_config` for another depth.
        """
        base: dict[str, Any] = dict(
            vocab_size=512,
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=4,
            num_attention_heads=4,
            num_key_value_heads=4,
            kv_lora_rank=32,
            qk_nope_head_dim=16,
            qk_rope_head_dim=8,
            v_head_dim=16,
            linear_attn_config=hybrid_layers(4, num_heads=4, head_dim=16),
            num_experts=4,
            num_experts_per_token=2,
            num_shared_experts=1,
            moe_intermediate_size=32,
            routed_scaling_factor=1.0,
            model_max_length=4096,
            bos_token_id=1,
            eos_token_id=2,
            pad_token_id=0,
            torch_dtype="float32",
        )
        base.update(overrides)
        return cls(**base)


def hybrid_layers(
    n: int, *, num_heads: int, head_dim: int, every: int = 4, kind: str = "hybrid"
) -> LinearAttnConfig:
    """A `linear_attn_config` for `n` layers: `kind` "hybrid" puts MLA at every `every`-th
    layer and at the last (the 3:1 schedule for every=4), "kda" makes all layers KDA."""
    if kind == "kda":
        full: list[int] = []
    elif kind == "hybrid":
        full = sorted({i for i in range(every, n + 1, every)} | {n})
    else:
        raise ModelConfigError(f"kind {kind!r} is not one of 'hybrid', 'kda'")
    kda = [i for i in range(1, n + 1) if i not in full]
    return LinearAttnConfig(
        kda_layers=tuple(kda), full_attn_layers=tuple(full), num_heads=num_heads, head_dim=head_dim
    )
