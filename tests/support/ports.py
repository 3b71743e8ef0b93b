"""Loopback ports for servers a test starts as a process: a free one, and waiting until the
server listens on it."""

from __future__ import annotations

import socket
import time


def free_port() -> int:
    """A port nothing listens on now (the OS's pick)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, timeout_s: float = 60.0) -> None:
    """Return once something accepts connections on 127.0.0.1:`port`.

    Raises:
        TimeoutError: nothing did within `timeout_s`.
    """
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {timeout_s:g} s")


__all__ = ["free_port", "wait_for_port"]
