"""Qwen2 (Qwen2, Qwen2.5, Qwen2.5-Coder): a Llama with biases on q_proj, k_proj and v_proj.

Everything else is Llama's (`model.llama`): RMSNorm, HF half-split RoPE, GQA attention,
SwiGLU, the same module and weight names (`model.layers.N.self_attn.q_proj.bias`, …), so HF
Qwen2 safetensors load as they are. These classes only change what is fixed for the
architecture (`qkv_bias`, `model_type` "qwen2", the config.json keys transformers reads)
and the defaults of HF's `Qwen2Config`; the layers are `LlamaAttention` & co.

Sliding-window attention (`use_sliding_window`) is not implemented: a config whose window
would actually cut the context (window < `max_position_embeddings` on some layer) is
refused. Published Qwen2.5 configs set `use_sliding_window: false`.

    lm = Qwen2ForCausalLM(Qwen2Config.tiny())
    out = lm.generate(torch.tensor([[1, 5, 9]]), max_new_tokens=8)
    lm = Qwen2ForCausalLM.from_pretrained("Qwen2.5-Coder-0.5B-Instruct/")
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Self

from kimmy_swarm.model.errors import ModelConfigError
from kimmy_swarm.model.llama import LlamaConfig, LlamaForCausalLM

__all__ = ["QWEN2_MODEL_TYPES", "Qwen2Config", "Qwen2ForCausalLM"]

#: `config.json` `model_type`s of this architecture.
QWEN2_MODEL_TYPES = ("qwen2",)
# transformers' `Qwen2Config.max_position_embeddings` default
_HF_MAX_POSITIONS = 32768


def _window_problem(
    layer_types: Sequence[str], use_sliding_window: bool, window: int | None, context: int
) -> str | None:
    """What is wrong with a sliding window we would have to implement, None when nothing.

    transformers slides a layer when its `layer_types` entry is "sliding_attention" and the
    config has a window, which it has only with `use_sliding_window`. A window of at least
    `context` tokens never drops a key, so such a layer computes full attention.
    """
    if not use_sliding_window or window is None or window >= context:
        return None
    layers = [i for i, kind in enumerate(layer_types) if kind == "sliding_attention"]
    if not layers:
        return None
    return (
        f"use_sliding_window with sliding_window={window} < max_position_embeddings="
        f"{context} on layers {layers}"
    )


@dataclass(frozen=True)
class Qwen2Config(LlamaConfig):
    """Sizes and constants of a Qwen2 model (HF `Qwen2Config` field meanings and defaults).

    `rope_theta` defaults to 10,000 as in transformers when config.json omits it; Qwen2.5
    files say 1,000,000. `max_window_layers`: layers from this index on would slide (with
    `use_sliding_window`); a window that would drop keys is refused.
    """

    model_types: ClassVar[tuple[str, ...]] = QWEN2_MODEL_TYPES
    architecture: ClassVar[str] = "Qwen2ForCausalLM"
    qkv_bias: ClassVar[bool] = True

    rms_norm_eps: float = 1e-6
    max_position_embeddings: int = _HF_MAX_POSITIONS
    use_sliding_window: bool = False
    sliding_window: int | None = None
    max_window_layers: int = 28

    def __post_init__(self) -> None:
        super().__post_init__()
        kinds = [
            "sliding_attention" if i >= self.max_window_layers else "full_attention"
            for i in range(self.num_hidden_layers)
        ]  # how transformers fills `layer_types` when config.json has none
        context = self.max_position_embeddings
        problem = _window_problem(kinds, self.use_sliding_window, self.sliding_window, context)
        if problem is not None:
            raise ModelConfigError(
                f"Qwen2 sliding-window attention is not implemented: {problem}; allowed: "
                "use_sliding_window false, or a window ≥ max_position_embeddings"
            )

    @classmethod
    def _unsupported_keys(cls, d: dict[str, Any]) -> list[str]:
        """transformers' Qwen2 has no attention_bias/mlp_bias switch (q/k/v always have
        biases); explicit `layer_types` (newer transformers write them) may slide."""
        layer_types = d.get("layer_types")
        if not isinstance(layer_types, list):
            return []  # `__post_init__` checks the layers `max_window_layers` slides
        context = int(d.get("max_position_embeddings", _HF_MAX_POSITIONS))
        window = d.get("sliding_window")
        problem = _window_problem(layer_types, bool(d.get("use_sliding_window")), window, context)
        return [] if problem is None else [problem]

    def _constant_keys(self) -> dict[str, Any]:
        return {"hidden_act": "silu"}

    @classmethod
    def tiny(cls, **overrides: Any) -> Self:
        """`LlamaConfig.tiny` with Qwen2.5's RoPE base (1e6) and tied embeddings."""
        return super().tiny(**({"rope_theta": 1e6, "tie_word_embeddings": True} | overrides))


class Qwen2ForCausalLM(LlamaForCausalLM):
    """The Qwen2 decoder with its LM head: `LlamaForCausalLM` built from a `Qwen2Config`
    (its attention layers get q/k/v biases); same forward, cache, `generate`,
    `from_pretrained` and `save_pretrained`."""

    config_class: ClassVar[type[LlamaConfig]] = Qwen2Config
    config: Qwen2Config
