"""Running the dashboard: `serve` in the foreground (`kimmy dashboard`), `BackgroundServer`
in a thread (tests, notebooks), both uvicorn on loopback unless told otherwise."""

from __future__ import annotations

import errno
import socket
import threading
import time
from types import TracebackType
from typing import Any, Self

import uvicorn

from kimmy_swarm.swarm.errors import ConfigError

#: Seconds open streams get to end when the server stops.
_GRACE_S = 1


def bind(host: str = "127.0.0.1", port: int = 8765) -> socket.socket:
    """A listening socket on `host:port` (port 0: a free one), bound before the server starts
    so that a port in use is one clear error, not a server log line after start-up.

    Raises:
        ConfigError: the address cannot be bound (in use, not an address of this machine).
    """
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise ConfigError(f"--host {host!r} is not an address or host name: {exc}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        reason = "is in use" if exc.errno == errno.EADDRINUSE else f"cannot be bound ({exc})"
        raise ConfigError(f"port {port} on {host} {reason}: choose another with --port") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def serve(app: Any, sock: socket.socket) -> None:
    """Serve `app` on the bound `sock` (`bind`) until interrupted (Ctrl-C)."""
    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=_GRACE_S)
    uvicorn.Server(config).run(sockets=[sock])


class BackgroundServer:
    """`app` served by uvicorn in a daemon thread, on a free loopback port by default.

    with BackgroundServer(create_app(runs_dir)) as srv:
        httpx.get(srv.url + "/api/runs")
    """

    def __init__(self, app: Any, *, host: str = "127.0.0.1", port: int = 0) -> None:
        config = uvicorn.Config(
            app, host=host, port=port, log_level="warning", lifespan="off",
            timeout_graceful_shutdown=_GRACE_S,
        )  # fmt: skip
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True, name="dashboard")
        self.host = host
        self.port = port

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def __enter__(self) -> Self:
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the dashboard server did not start on {self.host}")
            time.sleep(0.01)
        (sock,) = [s for srv in self._server.servers for s in srv.sockets][:1]
        self.port = sock.getsockname()[1]
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)


__all__ = ["BackgroundServer", "bind", "serve"]
