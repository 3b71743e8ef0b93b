"""Attention Residuals Kimi Linear inside vLLM: `KimmyAttnResForCausalLM`.

`model/vllm_plugin.py` registers this class with vLLM as
"kimmy_swarm.model.vllm_model:KimmyAttnResForCausalLM"; vLLM builds it for checkpoints whose
`config.json` names that architecture (`residual` "full_attnres" or "block_attnres").

Design. Attention Residuals change only how a sublayer's input is formed: a softmax over
depth of the embedding and earlier sublayer outputs, per token (`model/attnres.py`). The
sublayers (KDA, MLA, MoE, dense MLP), their weight names and their caches are those of the
standard model. So the class subclasses vLLM's own `KimiLinearForCausalLM`
(`vllm.model_executor.models.kimi_linear`) and changes two things:

- `__init__` adds the depth mixers under the checkpoint's names
  (`model.layers.{i}.attn_res.query` for i ≥ 1, `model.layers.{i}.mlp_res.query`,
  `model.final_res.query`); vLLM's inherited `load_weights` loads them with its default
  loader, as it does every name it has no special mapping for.
- `forward` calls each layer's sublayers itself, in place of vLLM's fused residual-add
  RMSNorm, with the same `DepthSources` bookkeeping as `model/modeling.py`. The mixing runs
  over depth within one token, so nothing is carried between steps: vLLM's KV cache, KDA
  states, scheduling and sampling are used as they are. vLLM flattens tokens to `[N, D]`;
  the mixer works on any leading shape.

Everything else (the hybrid cache specs, MoE, tensor parallelism, `compute_logits`,
`load_weights`) is inherited, and `depth_forward` is shared with the tests.

Limits. Pipeline parallelism is refused: the depth sources would have to cross stages. The
forward does not go through vLLM's `@support_torch_compile` model, so
`model.serve.vllm_launch.build_vllm_command` passes `--enforce-eager` for these checkpoints
unless told otherwise.

Tested here, without vLLM (tests/model/serve/test_vllm_launch.py): `attach_depth_mixers`
creates exactly the checkpoint's mixer names, and `depth_forward` driven by our own model's
sublayers reproduces `KimiLinearForCausalLM` for full and block AttnRes. Not tested here (vLLM
needs a CUDA GPU and cannot be installed on this machine): the subclass itself, which relies
on these vLLM internals of its Kimi Linear model file: `self.config` (the HF config, with our
extra keys as attributes), `self.model.{embed_tokens, layers, norm}`, and per layer
`input_layernorm`, `self_attn(hidden_states=, positions=, output=)`,
`post_attention_layernorm` and `mlp`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import nn

from kimmy_swarm.model.attnres import DepthMixer, DepthSources, block_size
from kimmy_swarm.model.errors import ModelConfigError

__all__ = ["CLASS_NAME", "Sublayer", "attach_depth_mixers", "attnres_settings", "depth_forward"]

CLASS_NAME = "KimmyAttnResForCausalLM"
ATTNRES = ("full_attnres", "block_attnres")

Sublayer = Callable[[torch.Tensor], torch.Tensor]


def attnres_settings(hf_config: Any) -> tuple[str, int]:
    """`(residual, sublayers per depth block)` of an Attention Residuals config.

    `hf_config` is vLLM's HF config object: our `residual` and `attn_res_num_blocks` keys are
    plain attributes on it.

    Raises:
        ModelConfigError: `residual` is missing or not an Attention Residuals scheme (such a
            checkpoint should name KimiLinearForCausalLM, which vLLM serves natively).
    """
    residual = getattr(hf_config, "residual", None)
    if residual not in ATTNRES:
        raise ModelConfigError(
            f"{CLASS_NAME} needs config residual in {ATTNRES}; got {residual!r}. A "
            "standard-residual checkpoint names KimiLinearForCausalLM (vLLM's built-in class)"
        )
    num_blocks = getattr(hf_config, "attn_res_num_blocks", None)
    if residual == "block_attnres" and (not isinstance(num_blocks, int) or num_blocks < 1):
        raise ModelConfigError(
            f"block_attnres needs attn_res_num_blocks ≥ 1 in config.json; got {num_blocks!r}"
        )
    layers = int(hf_config.num_hidden_layers)
    return residual, block_size(residual, 2 * layers, num_blocks or 1)


def attach_depth_mixers(
    model: nn.Module, layers: Sequence[nn.Module], *, hidden_size: int, eps: float
) -> None:
    """Add the depth mixers to a decoder stack, named as in our checkpoints.

    Layer i gets `attn_res` (i ≥ 1: the first sublayer reads the embedding alone) and
    `mlp_res`; `model` gets `final_res`, the mix that feeds the final norm. New parameters take
    the default dtype and device, which vLLM sets while it builds a model.
    """
    for i, layer in enumerate(layers):
        if i > 0:
            layer.add_module("attn_res", DepthMixer(hidden_size, eps))
        layer.add_module("mlp_res", DepthMixer(hidden_size, eps))
    model.add_module("final_res", DepthMixer(hidden_size, eps))


def depth_forward(
    embedding: torch.Tensor,  # (..., D)
    layers: Sequence[nn.Module],
    sublayers: Callable[[int, nn.Module], tuple[Sublayer, Sublayer]],
    final_mixer: DepthMixer,
    *,
    residual: str,
    block_size: int,
) -> torch.Tensor:  # (..., D), the input of the final norm
    """Run the decoder stack with Attention Residuals between its sublayers.

    Args:
        embedding: the token embeddings, the first depth source.
        layers: the decoder layers, each holding its `attn_res` (not layer 0) and `mlp_res`.
        sublayers: `(index, layer) -> (attention, ffn)`, each a function of its input that
            applies the sublayer's own pre-norm and returns its output.
        final_mixer: the mix that feeds the final norm.
        residual: "full_attnres" or "block_attnres".
        block_size: sublayers per depth block (`attnres_settings`).
    """
    depth = DepthSources(embedding, residual=residual, block_size=block_size)
    for i, layer in enumerate(layers):
        attention, ffn = sublayers(i, layer)
        attn_mixer = layer.get_submodule("attn_res") if i > 0 else None
        depth.add(attention(depth.inputs(attn_mixer)))  # (..., D)
        depth.add(ffn(depth.inputs(layer.get_submodule("mlp_res"))))  # (..., D)
    return depth.inputs(final_mixer)


def _vllm_sublayers(layer: Any, positions: torch.Tensor) -> tuple[Sublayer, Sublayer]:
    """The two sublayers of a vLLM `KimiDecoderLayer`, without its fused residual add."""

    def attention(h: torch.Tensor) -> torch.Tensor:  # (N, D)
        x = layer.input_layernorm(h)  # one argument: vLLM's RMSNorm returns the norm only
        out = torch.empty_like(x)  # (N, D); KDA and MLA write their output into it
        layer.self_attn(hidden_states=x, positions=positions, output=out)
        return out

    def ffn(h: torch.Tensor) -> torch.Tensor:  # (N, D)
        return layer.mlp(layer.post_attention_layernorm(h))

    return attention, ffn


def _build_class() -> type:
    """Subclass vLLM's Kimi Linear; only possible where vLLM is installed."""
    try:
        from vllm.distributed import get_pp_group
        from vllm.model_executor.models.kimi_linear import KimiLinearForCausalLM as VllmKimi
    except ImportError as e:
        raise ImportError(
            f"kimmy_swarm.model.vllm_model.{CLASS_NAME} runs inside vLLM: install a vLLM "
            "release with "
            f"Kimi Linear support (pip install vllm; needs a CUDA GPU) ({e})"
        ) from e

    class KimmyAttnResForCausalLM(VllmKimi):  # type: ignore[misc, valid-type]
        """vLLM's Kimi Linear with Attention Residuals between its sublayers."""

        def __init__(self, *, vllm_config: Any, prefix: str = "") -> None:
            super().__init__(vllm_config=vllm_config, prefix=prefix)
            if get_pp_group().world_size > 1:
                raise ModelConfigError(
                    f"{CLASS_NAME} does not support pipeline parallelism (got "
                    f"{get_pp_group().world_size} stages): use --tensor-parallel-size instead"
                )
            cfg = self.config
            self.residual, self.depth_block_size = attnres_settings(cfg)
            attach_depth_mixers(
                self.model, self.model.layers, hidden_size=cfg.hidden_size, eps=cfg.rms_norm_eps
            )

        def forward(
            self,
            input_ids: torch.Tensor | None,  # (N,)
            positions: torch.Tensor,  # (N,)
            intermediate_tensors: Any = None,
            inputs_embeds: torch.Tensor | None = None,  # (N, D)
            **kwargs: Any,
        ) -> torch.Tensor:  # (N, D)
            h = self.model.embed_tokens(input_ids) if inputs_embeds is None else inputs_embeds
            x = depth_forward(
                h,
                self.model.layers,
                lambda _i, layer: _vllm_sublayers(layer, positions),
                self.model.final_res,
                residual=self.residual,
                block_size=self.depth_block_size,
            )  # (N, D)
            return self.model.norm(x)

    KimmyAttnResForCausalLM.__module__ = __name__
    KimmyAttnResForCausalLM.__qualname__ = CLASS_NAME  # pickles by reference to this module
    return KimmyAttnResForCausalLM


def __getattr__(name: str) -> Any:
    """Build the vLLM class on first access: vLLM resolves the plugin's lazy
    "kimmy_swarm.model.vllm_model:KimmyAttnResForCausalLM" with `getattr`, and importing this module
    must not need vLLM (the tests import it)."""
    if name == CLASS_NAME:
        cls = _build_class()
        globals()[name] = cls
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
