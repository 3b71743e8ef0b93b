"""`kimmy serve` in a subprocess on a free loopback port (`--tiny`, or a real model such as
the bundled `smollm2`), for tests that need a real server process (the same `OpenAIChat`
client reaches it as any server)."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]


@contextlib.contextmanager
def tiny_server(*flags: str) -> Iterator[str]:
    """Start `kimmy serve --tiny FLAGS…`; yields its API root (`http://127.0.0.1:PORT/v1`)."""
    with kimmy_server("--tiny", *flags) as url:
        yield url


@contextlib.contextmanager
def kimmy_server(*args: str) -> Iterator[str]:
    """Start `kimmy serve ARGS…` (a model or `--tiny`, then flags); yields its API root."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    cmd = [sys.executable, "-P", "-m", "kimmy_swarm.cli", "serve", *args, "--port", str(port)]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120  # a bound for a hung start, not a speed check
        while True:
            assert proc.poll() is None, proc.communicate()[0].decode()
            try:
                httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).raise_for_status()
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, f"kimmy serve {' '.join(args)} did not start"
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        proc.communicate(timeout=60)


__all__ = ["kimmy_server", "tiny_server"]
