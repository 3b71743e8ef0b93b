"""`kimmy serve`: an OpenAI-compatible server for a checkpoint folder or a tiny test model.

    kimmy serve runs/tiny/checkpoint-000200            # a folder of `save_pretrained`
    kimmy serve --tiny --port 8001                     # random weights: a wiring check
    kimmy serve /models/kimi-linear --engine vllm      # hand the folder to `vllm serve`

`--tiny` builds a 4-layer KimiLinear model with seeded random weights and a byte-level BPE
tokenizer trained on the Python documentation shipped with the interpreter (a few seconds,
offline); its answers are noise, but every API feature works, structured output included.
The tokenizer has Kimi's chat tokens (`<|im_system|>` … `<|im_end|>`, the turn end being
the EOS), so the default chat template applies. Only typer is imported at the top: torch
loads when the command runs, so the rest of `kimmy` starts fast.
"""

from __future__ import annotations

import functools
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from model.modeling import KimiLinearForCausalLM
    from model.serve.engine import LLMEngine
    from model.tokenizer import Tokenizer

__all__ = [
    "TINY_MODEL_NAME",
    "TINY_SPECIAL_TOKENS",
    "build_engine",
    "load_model_dir",
    "register",
    "serve_cmd",
    "tiny_model",
    "tiny_tokenizer",
]

TINY_MODEL_NAME = "kimmy-tiny"
DEFAULT_NUM_PAGES = 4096
#: (pad, bos, eos, …): the EOS is Kimi's turn end, so a reply stops where its turn would.
TINY_SPECIAL_TOKENS = (
    "<|pad|>", "<|bos|>", "<|im_end|>", "<|im_system|>", "<|im_user|>", "<|im_assistant|>",
    "<|im_middle|>",
)  # fmt: skip


class EngineName(StrEnum):
    kimmy = "kimmy"
    vllm = "vllm"


@functools.lru_cache(maxsize=4)
def tiny_tokenizer(*, vocab_size: int = 512, num_docs: int | None = None) -> Tokenizer:
    """The `--tiny` tokenizer: BPE trained on the Python docs (the first `num_docs` topics,
    all by default), cached per process (training takes seconds)."""
    from model.tokenizer import train_bpe_tokenizer
    from model.train.data import python_docs_texts

    texts = python_docs_texts()
    return train_bpe_tokenizer(
        texts[:num_docs], vocab_size=vocab_size, special_tokens=TINY_SPECIAL_TOKENS
    )


def tiny_model(tokenizer: Tokenizer, *, seed: int = 0) -> KimiLinearForCausalLM:
    """`KimiLinearConfig.tiny()` sized to `tokenizer`, float32, weights drawn from `seed`
    (the caller's random state is left as it was)."""
    import torch

    from model.config import KimiLinearConfig
    from model.modeling import KimiLinearForCausalLM

    config = KimiLinearConfig.tiny(
        vocab_size=tokenizer.vocab_size,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return KimiLinearForCausalLM(config).eval()


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


def _on_gpu_if_any(model: KimiLinearForCausalLM) -> KimiLinearForCausalLM:
    import torch

    return model.to("cuda") if torch.cuda.is_available() else model


def _fail(message: str) -> typer.Exit:
    typer.echo(f"kimmy: error: {message}", err=True)
    return typer.Exit(2)


def _run_vllm(
    model_dir: Path,
    host: str,
    port: int,
    api_key: str | None,
    length: int | None,
    *,
    max_num_seqs: int,
    page_size: int,
    tensor_parallel_size: int,
) -> int:
    """`vllm serve MODEL_DIR` in the foreground (served under the folder's name, as here);
    `--max-num-seqs` and `--page-size` go to vLLM as `--max-num-seqs` and `--block-size`."""
    from model.errors import KimiModelError
    from model.serve.vllm_launch import run_vllm

    flags = ["--max-num-seqs", str(max_num_seqs), "--block-size", str(page_size)]
    try:
        return run_vllm(
            model_dir, host=host, port=port, api_key=api_key, max_model_len=length,
            served_model_name=model_dir.name, extra_args=flags,
            tensor_parallel_size=tensor_parallel_size,
        )  # fmt: skip
    except KimiModelError as e:  # VLLMNotAvailableError says what to install
        raise _fail(str(e)) from e


def _int(help_text: str) -> Any:
    return typer.Option(help=help_text, min=1)


ModelDir = Annotated[
    Path | None,
    typer.Argument(
        help="Checkpoint folder (config.json, safetensors, tokenizer).", show_default=False
    ),
]


def serve_cmd(
    model_dir: ModelDir = None,
    tiny: Annotated[bool, typer.Option(help="Serve a tiny random model (tests).")] = False,
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port.", min=1, max=65535)] = 8000,
    api_key: Annotated[
        str | None,
        typer.Option("--api-key", envvar="KIMMY_API_KEY", help="Require this bearer token."),
    ] = None,
    max_num_seqs: Annotated[int, _int("Most sequences decoded at once.")] = 256,
    max_model_len: Annotated[int | None, _int("Longest prompt + output, tokens.")] = None,
    page_size: Annotated[int, _int("Tokens per KV-cache page.")] = 16,
    num_pages: Annotated[int, _int("KV-cache pages (kimmy engine only).")] = 4096,
    engine: Annotated[EngineName, typer.Option(help="Inference engine.")] = EngineName.kimmy,
    tensor_parallel_size: Annotated[
        int, typer.Option("--tensor-parallel-size", help="GPUs per model (vllm only).", min=1)
    ] = 1,
) -> None:
    """Serve a model over the OpenAI API (/v1/chat/completions, /v1/completions, /metrics)."""
    if tiny == (model_dir is not None):
        raise _fail("give either MODEL_DIR or --tiny (exactly one)")
    if engine is EngineName.kimmy and tensor_parallel_size != 1:
        raise _fail(f"--tensor-parallel-size {tensor_parallel_size} needs --engine vllm")
    if engine is EngineName.vllm:
        if model_dir is None:
            raise _fail("--engine vllm serves a MODEL_DIR; --tiny needs --engine kimmy")
        if num_pages != DEFAULT_NUM_PAGES:
            raise _fail(
                f"--num-pages {num_pages} sizes kimmy's own cache; vLLM sizes its KV cache from "
                "GPU memory (its --gpu-memory-utilization)"
            )
        code = _run_vllm(
            model_dir, host, port, api_key, max_model_len, max_num_seqs=max_num_seqs,
            page_size=page_size, tensor_parallel_size=tensor_parallel_size,
        )  # fmt: skip
        raise typer.Exit(code)
    from model.errors import KimiModelError

    try:
        if model_dir is None:
            tokenizer = tiny_tokenizer()
            model, name = _on_gpu_if_any(tiny_model(tokenizer)), TINY_MODEL_NAME
            what = "a tiny KimiLinear with random weights (seed 0) and a BPE tokenizer trained "
            what += "on the Python docs: its answers are noise"
        else:
            model, tokenizer = load_model_dir(model_dir)
            name, what = model_dir.name, f"from {model_dir}"
        llm = build_engine(
            model, tokenizer, max_num_seqs=max_num_seqs, max_model_len=max_model_len,
            page_size=page_size, num_pages=num_pages,
        )  # fmt: skip
    except KimiModelError as e:
        raise _fail(str(e)) from e
    from model.serve.async_engine import AsyncEngine
    from model.serve.server import create_app, serve

    app = create_app(AsyncEngine(llm, model_name=name), model_name=name, api_key=api_key)
    key = ", API key required" if api_key else ""
    typer.echo(f"kimmy: serving {name} ({what}) at http://{host}:{port}/v1{key}")
    serve(app, host=host, port=port)


def register(app: typer.Typer) -> None:
    """Add `serve` to the `kimmy` app."""
    app.command("serve")(serve_cmd)
