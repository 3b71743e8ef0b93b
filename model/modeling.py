"""The Kimi Linear causal LM: embedding → hybrid decoder layers (KDA or MLA attention, dense
or MoE FFN, chosen per layer from the config) → norm → LM head.

Residual streams: the standard pre-norm residual, or Attention Residuals
(`config.residual`, see `model/attnres.py`). Parameter names match the published
checkpoint (`model.layers.{i}.self_attn.q_proj.weight`, …), so its weights load as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from torch import nn

from kimmy_swarm.model.attnres import DepthMixer, DepthSources, block_size
from kimmy_swarm.model.cache import HybridCache, KDAState, MLAState
from kimmy_swarm.model.config import KimiLinearConfig
from kimmy_swarm.model.kda_layer import KimiDeltaAttention
from kimmy_swarm.model.mla import MLAttention
from kimmy_swarm.model.mlp import MLP
from kimmy_swarm.model.moe import SparseMoE
from kimmy_swarm.model.norm import RMSNorm

__all__ = ["DecoderLayer", "KimiLinearForCausalLM", "KimiLinearModel"]


class DecoderLayer(nn.Module):
    """Two sublayers: attention (KDA or MLA) and FFN (dense `mlp` or `block_sparse_moe`)."""

    def __init__(self, config: KimiLinearConfig, layer_idx: int) -> None:
        super().__init__()
        self.layer_type = config.layer_types[layer_idx]
        eps = config.rms_norm_eps
        self.input_layernorm = RMSNorm(config.hidden_size, eps=eps)
        self.post_attention_layernorm = RMSNorm(config.hidden_size, eps=eps)
        self.self_attn: KimiDeltaAttention | MLAttention = (
            KimiDeltaAttention(config) if self.layer_type == "kda" else MLAttention(config)
        )
        if config.is_moe_layer(layer_idx):
            self.block_sparse_moe = SparseMoE(config)
        else:
            self.mlp = MLP(config.hidden_size, config.intermediate_size)
        if config.residual != "standard":
            if layer_idx > 0:  # the first sublayer's only source is the embedding
                self.attn_res = DepthMixer(config.hidden_size, eps)
            self.mlp_res = DepthMixer(config.hidden_size, eps)

    @property
    def ffn(self) -> nn.Module:
        return self.block_sparse_moe if hasattr(self, "block_sparse_moe") else self.mlp

    def attention(
        self,
        h: torch.Tensor,  # (B, T, D)
        *,
        attention_mask: torch.Tensor | None,  # (B, S) over past + current tokens
        cache: KDAState | MLAState | None,
    ) -> torch.Tensor:
        x = self.input_layernorm(h)
        if isinstance(self.self_attn, KimiDeltaAttention):
            assert cache is None or isinstance(cache, KDAState)
            mask = None if attention_mask is None else attention_mask[:, -h.shape[1] :]
            return self.self_attn(x, token_mask=mask, cache=cache)
        assert cache is None or isinstance(cache, MLAState)
        return self.self_attn(x, key_padding=attention_mask, cache=cache)

    def feed_forward(self, h: torch.Tensor) -> torch.Tensor:  # (B, T, D)
        return self.ffn(self.post_attention_layernorm(h))


class KimiLinearModel(nn.Module):
    """The decoder stack (`model.*` in the checkpoint)."""

    def __init__(self, config: KimiLinearConfig) -> None:
        super().__init__()
        self.config = config
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(
            DecoderLayer(config, i) for i in range(config.num_hidden_layers)
        )
        self.norm = RMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        if config.residual != "standard":
            self.final_res = DepthMixer(config.hidden_size, config.rms_norm_eps)
        self.block_size = block_size(
            config.residual, 2 * config.num_hidden_layers, config.attn_res_num_blocks
        )

    def forward(
        self,
        input_ids: torch.Tensor,  # (B, T)
        *,
        attention_mask: torch.Tensor | None = None,  # (B, S)
        cache: HybridCache | None = None,
    ) -> torch.Tensor:  # (B, T, D) after the final norm
        h = self.embed_tokens(input_ids)  # (B, T, D)
        depth = DepthSources(h, residual=self.config.residual, block_size=self.block_size)
        for i, layer in enumerate(self.layers):
            state = None if cache is None else cache.layers[i]
            x = depth.inputs(getattr(layer, "attn_res", None))
            depth.add(layer.attention(x, attention_mask=attention_mask, cache=state))
            depth.add(layer.feed_forward(depth.inputs(getattr(layer, "mlp_res", None))))
        if cache is not None:
            cache.seen_tokens += input_ids.shape[1]
        return self.norm(depth.inputs(getattr(self, "final_res", None)))


class KimiLinearForCausalLM(nn.Module):
    """Kimi Linear with its LM head. `forward(input_ids) -> logits [B, T, vocab]`.

    Example:
        >>> lm = KimiLinearForCausalLM(KimiLinearConfig.tiny())
        >>> lm(torch.tensor([[1, 5, 9]])).shape
        torch.Size([1, 3, 512])
    """

    def __init__(self, config: KimiLinearConfig) -> None:
        super().__init__()
        self.config = config
        self.model = KimiLinearModel(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.apply(self._init_weights)
        if config.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight

    def _init_weights(self, module: nn.Module) -> None:
        std = self.config.initializer_range
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=std)
        # RMSNorm (ones), ShortConv (Conv1d default), KDA gates (fla's init), DepthMixer
        # (zero queries) and the router (normal) initialise themselves.

    def forward(
        self,
        input_ids: torch.Tensor,  # (B, T)
        *,
        attention_mask: torch.Tensor | None = None,  # (B, S), 1 = real token, left padding
        cache: HybridCache | None = None,
    ) -> torch.Tensor:  # (B, T, vocab)
        h = self.model(input_ids, attention_mask=attention_mask, cache=cache)
        return self.lm_head(h)

    def new_cache(self) -> HybridCache:
        """An empty hybrid cache (KDA states + MLA latent KV) for `forward`/`generate`."""
        return HybridCache.empty(self.config)

    def num_parameters(self, *, exclude_embeddings: bool = False) -> int:
        skip = {id(self.model.embed_tokens.weight), id(self.lm_head.weight)}
        return sum(
            p.numel()
            for p in {id(p): p for p in self.parameters()}.values()
            if not (exclude_embeddings and id(p) in skip)
        )

    def generate(self, input_ids: torch.Tensor, **kwargs: Any) -> torch.Tensor:
        """Greedy or sampled continuation with the hybrid cache; see `model.generation`."""
        from kimmy_swarm.model.generation import generate

        return generate(self, input_ids, **kwargs)

    # ---- checkpoints --------------------------------------------------------------------
    def save_pretrained(self, path: str | Path, **kwargs: Any) -> Path:
        """Write an HF-format folder: config.json, (sharded) safetensors + index, tokenizer.

        Keyword arguments go to `model.checkpoint.save_checkpoint` (`tokenizer=`,
        `max_shard_bytes=`, `dtype=`).
        """
        from kimmy_swarm.model.checkpoint import save_checkpoint

        return save_checkpoint(self, path, **kwargs)

    @classmethod
    def from_pretrained(
        cls,
        path: str | Path,
        *,
        dtype: torch.dtype | None = None,
        device: str | torch.device = "cpu",
    ) -> KimiLinearForCausalLM:
        """Load a folder written by `save_pretrained` (or a published Kimi Linear checkpoint).

        Raises:
            ModelConfigError: config.json is missing or invalid.
            CheckpointError: weights are missing or do not fit the config.
        """
        from kimmy_swarm.model.checkpoint import load_pretrained_weights

        model = cls(KimiLinearConfig.from_pretrained(path))
        return load_pretrained_weights(
            model, path, dtype=dtype, device=device, rename=_dense_ffn_names
        )


def _dense_ffn_names(
    state: dict[str, torch.Tensor], expected: Mapping[str, torch.Tensor]
) -> dict[str, torch.Tensor]:
    """Accept the dense-FFN names that transformers' `KimiLinearForCausalLM.save_pretrained`
    writes: it keeps every FFN under `mlp.` and, saving, renames `.mlp.` back to
    `.block_sparse_moe.` for dense layers too, so a dense layer's
    `model.layers.{i}.block_sparse_moe.{gate,up,down}_proj.weight` is the published
    `model.layers.{i}.mlp.*` (vLLM's names, and ours). Renamed only where the model has the
    `mlp.` name and the state lacks it."""
    out: dict[str, torch.Tensor] = {}
    for name, t in state.items():
        alias = name.replace(".block_sparse_moe.", ".mlp.", 1)
        if alias != name and name not in expected and alias in expected and alias not in state:
            name = alias
        out[name] = t
    return out
