"""The Kimi Linear hybrid-attention model: config, layers (KDA, MLA, MoE, Attention
Residuals), the causal LM with its hybrid cache and generation, HF-format checkpoints,
tokenizers, the MuonClip optimizer (`model.optim`) and training (`model.train`).

    from model import KimiLinearConfig, KimiLinearForCausalLM, MuonClip
    lm = KimiLinearForCausalLM(KimiLinearConfig.tiny())
    out = lm.generate(torch.tensor([[1, 5, 9]]), max_new_tokens=8)

Heavy kernels live in `kernels/`; this package only assembles the model. Names load on
first access, so `import model` (and the `kimmy` CLI that registers `kimmy train`) does not
import torch until a model object is used.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "CheckpointError": "model.errors",
    "GGUFError": "model.errors",
    "GenerationError": "model.errors",
    "KimiModelError": "model.errors",
    "ModelConfigError": "model.errors",
    "HybridCache": "model.cache",
    "KDAState": "model.cache",
    "MLAState": "model.cache",
    "cache_bytes_per_sequence": "model.cache",
    "KimiLinearConfig": "model.config",
    "LinearAttnConfig": "model.config",
    "hybrid_layers": "model.config",
    "SamplingParams": "model.generation",
    "generate": "model.generation",
    "KimiLinearForCausalLM": "model.modeling",
    "LlamaCache": "model.llama",
    "LlamaConfig": "model.llama",
    "LlamaForCausalLM": "model.llama",
    "load_gguf": "model.gguf_loader",
    "MuonClip": "model.optim",
    "Tokenizer": "model.tokenizer",
    "load_tokenizer": "model.tokenizer",
    "train_bpe_tokenizer": "model.tokenizer",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'model' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
