"""Building a serving engine: a checkpoint folder's (or the tiny preset's) model and
tokenizer, and an `LLMEngine` with structured output for them (what `kimmy serve` and
`swarm.llm.LocalModel` run).

    model, tokenizer = load_model_dir(Path("runs/lm/checkpoint-000200"))
    engine = build_engine(model, tokenizer, max_num_seqs=64)

torch loads when a function runs, so importing this is light.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from model.modeling import KimiLinearForCausalLM
    from model.serve.engine import LLMEngine
    from model.tokenizer import Tokenizer

__all__ = ["DEFAULT_NUM_PAGES", "build_engine", "load_model_dir", "load_tiny", "on_gpu_if_any"]

#: KV-cache pages of an engine unless told otherwise.
DEFAULT_NUM_PAGES = 4096


def load_model_dir(folder: Path) -> tuple[KimiLinearForCausalLM, Tokenizer]:
    """Model and tokenizer of a checkpoint folder (on the GPU when there is one).

    Raises:
        CheckpointError: the folder is missing, or has no weights or tokenizer.
        ModelConfigError: its config.json is missing or invalid.
    """
    import torch

    from model.errors import CheckpointError, ModelConfigError
    from model.modeling import KimiLinearForCausalLM
    from model.tokenizer import load_tokenizer

    if not folder.is_dir():
        raise CheckpointError(f"MODEL_DIR {folder} is not a folder")
    try:
        device = "cuda" if torch.cuda.is_available() else "cpu"
        model = KimiLinearForCausalLM.from_pretrained(folder, device=device)
        tokenizer = load_tokenizer(folder)
    except (CheckpointError, ModelConfigError) as e:
        raise type(e)(f"MODEL_DIR {folder}: {e}") from e
    return model, tokenizer


def load_tiny(*, seed: int = 0) -> tuple[KimiLinearForCausalLM, Tokenizer, str]:
    """The `kimmy serve --tiny` model (`model.presets.tiny_model`, weights from `seed`, on
    the CPU), its tokenizer and its served name."""
    from model.presets import TINY_MODEL_NAME, tiny_model, tiny_tokenizer

    tokenizer = tiny_tokenizer()
    return tiny_model(tokenizer, seed=seed), tokenizer, TINY_MODEL_NAME


def on_gpu_if_any(model: KimiLinearForCausalLM) -> KimiLinearForCausalLM:
    """`model` moved to the GPU when there is one."""
    import torch

    return model.to("cuda") if torch.cuda.is_available() else model


def build_engine(
    model: KimiLinearForCausalLM,
    tokenizer: Tokenizer,
    *,
    max_num_seqs: int = 256,
    max_model_len: int | None = None,
    page_size: int = 16,
    num_pages: int = DEFAULT_NUM_PAGES,
    **options: Any,
) -> LLMEngine:
    """An `LLMEngine` with structured output (a `GrammarCache` for the tokenizer).

    `max_model_len` defaults to the smaller of the model's context and 4,096 tokens; there
    is a KDA state slot per running sequence plus 64 for shared-prefix checkpoints. Other
    `options` are `EngineConfig` fields.
    """
    from model.serve.engine import LLMEngine
    from model.serve.structured import GrammarCache
    from model.serve.types import EngineConfig

    context = model.config.model_max_length
    config = EngineConfig(
        max_num_seqs=max_num_seqs,
        max_model_len=max_model_len or min(context or 4096, 4096),
        page_size=page_size,
        num_pages=num_pages,
        num_state_slots=options.pop("num_state_slots", max_num_seqs + 64),
        **options,
    )
    grammars = GrammarCache(tokenizer, vocab_size=model.config.vocab_size)
    return LLMEngine(model, tokenizer, config, grammars=grammars)
