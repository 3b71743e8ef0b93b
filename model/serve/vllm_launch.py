"""Serve a checkpoint folder with vLLM: `vllm serve <folder>` with the flags it needs.

    argv = build_vllm_command("ckpt/", port=8000, max_model_len=65536)
    rc = run_vllm("ckpt/", port=8000)   # blocks until vLLM exits; Ctrl-C stops it

A standard Kimi Linear checkpoint (`architectures: ["KimiLinearForCausalLM"]`) runs on
vLLM's built-in model. An Attention Residuals checkpoint names `KimmyAttnResForCausalLM`,
which vLLM learns from our general plugin (`model/vllm_plugin.py`): its entry point must be
installed in the environment that runs vLLM, which `build_vllm_command` checks. Both kinds
bind 127.0.0.1 unless told otherwise (vLLM's own default is every interface).

Nothing here imports torch or vLLM: the `kimmy` CLI can build the command, and say plainly
what is missing, on a machine without either.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from kimmy_swarm.model.config import KimiLinearConfig
from kimmy_swarm.model.errors import CheckpointError, KimiModelError, ModelConfigError
from kimmy_swarm.model.vllm_plugin import ENTRY_POINT, ENTRY_POINT_GROUP, ENTRY_POINT_NAME

__all__ = [
    "VLLMNotAvailableError",
    "build_vllm_command",
    "plugin_installed",
    "run_forwarding_signals",
    "run_vllm",
    "vllm_available",
]

NOT_INSTALLED = (
    "vLLM is not installed: pip install vllm (needs a CUDA GPU; its wheel brings a CUDA build "
    "of torch) into this environment. Without it, `kimmy serve` serves the model with the "
    "built-in engine."
)
_TOKENIZER_FILES = ("tokenizer.json", "tiktoken.model", "tokenizer.model")
_FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_STOP_GRACE_S = 30.0  # vLLM's own shutdown of its workers, before it is killed


class VLLMNotAvailableError(KimiModelError):
    """vLLM, or our vLLM plugin, is not installed where the command would run."""


def vllm_available() -> bool:
    """Whether the `vllm` package is importable here and its `vllm` command is found."""
    return importlib.util.find_spec("vllm") is not None and _vllm_executable() is not None


def _vllm_executable() -> str | None:
    """The `vllm` script of this interpreter's environment first (the one the plugin's entry
    point is installed in), else the first on PATH."""
    beside = Path(sys.executable).parent / "vllm"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("vllm")


def plugin_installed() -> bool:
    """Whether this environment declares our entry point in `vllm.general_plugins`."""
    eps = importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
    return any(ep.value.replace(" ", "") == ENTRY_POINT for ep in eps)


def build_vllm_command(
    model_dir: Path | str,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    api_key: str | None = None,
    max_model_len: int | None = None,
    served_model_name: str | None = None,
    tensor_parallel_size: int = 1,
    enforce_eager: bool | None = None,
    extra_args: Sequence[str] = (),
) -> list[str]:
    """The `vllm serve` argv for a checkpoint folder saved by `model/`.

    Args:
        model_dir: the checkpoint folder (config.json, safetensors, tokenizer files).
        host: the interface to bind; 127.0.0.1 keeps the server off the network.
        port: the TCP port.
        api_key: required from clients as a bearer token when given.
        max_model_len: context limit; None lets vLLM take the config's.
        served_model_name: the model name clients send; None lets vLLM use `model_dir`.
        tensor_parallel_size: GPUs to split each layer over; must divide the head counts.
        enforce_eager: pass `--enforce-eager`. None: only for Attention Residuals
            checkpoints, whose vLLM forward is not set up for vLLM's torch.compile.
        extra_args: further `vllm serve` flags, appended as given.

    Raises:
        CheckpointError: the folder or its config.json is missing, config.json names an
            architecture that does not match its `residual`, or there is no tokenizer.
        ModelConfigError: config.json is invalid, or an option is out of range.
        VLLMNotAvailableError: an Attention Residuals checkpoint, and our plugin's entry
            point is not installed (or `VLLM_PLUGINS` leaves it out).
    """
    folder = Path(model_dir)
    config, raw = _read_config(folder)
    _check_options(config, port=port, tp=tensor_parallel_size, max_model_len=max_model_len)
    attnres = config.residual != "standard"
    if attnres:
        _check_plugin(folder)
    flags = list(extra_args)
    if not (_has_flag(flags, "--tokenizer") or _has_flag(flags, "--skip-tokenizer-init")):
        _check_tokenizer(folder)
    argv = ["vllm", "serve", str(model_dir), "--host", host, "--port", str(port)]
    if served_model_name is not None:
        argv += ["--served-model-name", served_model_name]
    if api_key is not None:
        argv += ["--api-key", api_key]
    if max_model_len is not None:
        argv += ["--max-model-len", str(max_model_len)]
    if tensor_parallel_size != 1:
        argv += ["--tensor-parallel-size", str(tensor_parallel_size)]
    if _needs_remote_code(folder, raw):
        argv.append("--trust-remote-code")
    eager = attnres if enforce_eager is None else enforce_eager
    if eager:
        argv.append("--enforce-eager")
    return argv + flags


def _has_flag(flags: Sequence[str], name: str) -> bool:
    return any(f == name or f.startswith(name + "=") for f in flags)


def _read_config(folder: Path) -> tuple[KimiLinearConfig, dict[str, Any]]:
    """The validated config and the raw config.json of a checkpoint folder."""
    file = folder / "config.json"
    if not folder.is_dir():
        raise CheckpointError(f"checkpoint folder {folder} does not exist or is not a folder")
    if not file.is_file():
        raise CheckpointError(
            f"{folder} has no config.json: vLLM serves a checkpoint folder written by "
            "KimiLinearForCausalLM.save_pretrained"
        )
    try:
        raw = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CheckpointError(f"{file}: not readable JSON ({e})") from e
    if not isinstance(raw, dict):
        raise CheckpointError(f"{file}: expected a JSON object")
    config = KimiLinearConfig.from_dict(raw)
    expected = config.to_dict()["architectures"]
    if raw.get("architectures") != expected:
        raise CheckpointError(
            f"{file}: architectures {raw.get('architectures')!r} do not match residual "
            f"{config.residual!r}, which needs {expected!r} (vLLM picks the model class by "
            "this name and would otherwise ignore or reject the Attention Residuals weights); "
            "re-save the config: KimiLinearConfig.from_pretrained(folder).save_pretrained(folder)"
        )
    return config, raw


def _check_options(
    config: KimiLinearConfig, *, port: int, tp: int, max_model_len: int | None
) -> None:
    if not 1 <= port <= 65535:
        raise ModelConfigError(f"port must be in 1..65535; got {port}")
    if max_model_len is not None and max_model_len < 1:
        raise ModelConfigError(f"max_model_len must be ≥ 1; got {max_model_len}")
    heads = {"num_attention_heads": config.num_attention_heads}
    if config.linear_attn_config is not None:
        heads["linear_attn_config.num_heads"] = config.linear_attn_config.num_heads
    bad = {k: v for k, v in heads.items() if tp < 1 or v % tp}
    if bad:
        raise ModelConfigError(
            f"tensor_parallel_size {tp} must be ≥ 1 and divide the head counts {bad} "
            "(vLLM splits heads across GPUs)"
        )


def _check_plugin(folder: Path) -> None:
    """An AttnRes checkpoint needs our plugin in the environment that runs vLLM."""
    if not plugin_installed():
        raise VLLMNotAvailableError(
            f"{folder} is an Attention Residuals checkpoint (KimmyAttnResForCausalLM), which "
            f"vLLM only knows through the Kimmy plugin, and its entry point "
            f"({ENTRY_POINT_GROUP}: {ENTRY_POINT_NAME} = {ENTRY_POINT}) is not installed here: "
            "install this project into the environment that runs vLLM (pip install -e "
            "'.[model]' from the repository)"
        )
    allowed = os.environ.get("VLLM_PLUGINS")
    if allowed is not None and ENTRY_POINT_NAME not in allowed.split(","):
        raise VLLMNotAvailableError(
            f"VLLM_PLUGINS={allowed!r} leaves out the {ENTRY_POINT_NAME!r} plugin that "
            f"{folder} needs: add {ENTRY_POINT_NAME} to it, or unset VLLM_PLUGINS"
        )


def _check_tokenizer(folder: Path) -> None:
    if not any((folder / name).is_file() for name in _TOKENIZER_FILES):
        raise CheckpointError(
            f"{folder} holds no tokenizer (looked for {', '.join(_TOKENIZER_FILES)}); vLLM "
            "needs one: save it with save_pretrained(..., tokenizer=tok), or pass "
            "extra_args=['--tokenizer', PATH]"
        )


def _needs_remote_code(folder: Path, config: dict[str, Any]) -> bool:
    """`auto_map` in config.json or tokenizer_config.json points at Python files shipped
    with the checkpoint (Kimi's tiktoken tokenizer is one), which vLLM only runs with
    `--trust-remote-code`; our own files need none."""
    if "auto_map" in config:
        return True
    tok_config = folder / "tokenizer_config.json"
    if not tok_config.is_file():
        return False
    try:
        data = json.loads(tok_config.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CheckpointError(f"{tok_config}: not readable JSON ({e})") from e
    return isinstance(data, dict) and "auto_map" in data


def run_vllm(
    model_dir: Path | str,
    *,
    api_key: str | None = None,
    **options: Any,
) -> int:
    """Run `vllm serve` on a checkpoint folder until it exits; returns its exit status.

    Keyword options are those of `build_vllm_command`. The API key travels in the
    `VLLM_API_KEY` environment variable rather than on the command line, where any local
    user could read it in the process list. SIGINT, SIGTERM and SIGHUP received here are
    passed on to vLLM, which shuts down its workers itself.

    Raises:
        VLLMNotAvailableError: vLLM (or, for an AttnRes checkpoint, our plugin) is missing.
        CheckpointError, ModelConfigError: as `build_vllm_command`.
    """
    exe = _vllm_executable()
    if importlib.util.find_spec("vllm") is None or exe is None:
        raise VLLMNotAvailableError(NOT_INSTALLED)
    argv = build_vllm_command(model_dir, **options)
    env = dict(os.environ)
    if api_key is not None:
        env["VLLM_API_KEY"] = api_key
    return run_forwarding_signals([exe, *argv[1:]], env=env)


def run_forwarding_signals(argv: Sequence[str], *, env: dict[str, str] | None = None) -> int:
    """Run `argv` in its own process group and pass SIGINT/SIGTERM/SIGHUP on to it.

    The child's own group keeps a terminal's Ctrl-C from reaching it twice (once from the
    terminal, once forwarded). The handlers are in place before the child starts, and a
    signal that comes before it exists is sent to it once it does. Returns its exit status,
    128 + N when signal N ended it (as a shell reports it).
    """
    started: list[subprocess.Popen[bytes]] = []
    pending: list[int] = []

    def forward(signum: int, _frame: FrameType | None) -> None:
        if not started:
            pending.append(signum)
        elif started[0].poll() is None:
            started[0].send_signal(signum)

    previous = _install_handlers(forward)
    try:
        proc = subprocess.Popen(list(argv), env=env, process_group=0)
        started.append(proc)
        for signum in pending:
            proc.send_signal(signum)
        try:
            rc = proc.wait()
        finally:
            _stop(proc)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 128 - rc if rc < 0 else rc


def _install_handlers(handler: Callable[[int, FrameType | None], None]) -> dict[int, Any]:
    """Install `handler` for the forwarded signals; returns the previous handlers. Only the
    main thread may set handlers: elsewhere the signals stay with whoever handles them."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {sig: signal.signal(sig, handler) for sig in _FORWARDED}


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Leaving while the child still runs (an exception here): do not orphan the server."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=_STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
