"""Which hosts the dashboard answers: a guard against DNS rebinding.

A web page on `attacker.example` can make its own name resolve to 127.0.0.1 and then read
`http://attacker.example:8765/api/runs` as same-origin: the browser sends
`Host: attacker.example:8765`. A server that answers any `Host` hands it the runs. So the
dashboard answers only requests whose `Host` is a loopback name (`localhost`, `127.x.x.x`,
`[::1]`) or one the user allowed (`kimmy dashboard --allowed-host NAME`; a `--host` that is a
specific address is allowed by itself); others get 400 naming the host and how to allow it.
A request that changes state (any method but GET, HEAD, OPTIONS) must also come from an
allowed `Origin`, when the browser sends one (403 otherwise).

    app = HostGuard(app, allowed=["dash.lab.internal"])
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any
from urllib.parse import urlsplit

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: Methods that only read (no Origin check).
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
#: Addresses that stand for "any address of this machine" (not a host a browser names).
_WILDCARDS = frozenset({"0.0.0.0", "::", ""})


def host_name(header: str) -> str:
    """The host of a `Host` header or of a URL's netloc, lower-case, without the port or an
    IPv6 address's brackets: `[::1]:8765` → `::1`, `Localhost:80` → `localhost`."""
    value = header.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        return value[1:end] if end > 0 else value
    if value.count(":") == 1:
        value = value.split(":", 1)[0]
    return value.rstrip(".")


def is_loopback(host: str) -> bool:
    """Whether `host` (as `host_name` gives it) names this machine's loopback."""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def allowed_hosts(bound: str, extra: Iterable[str] = ()) -> frozenset[str]:
    """The non-loopback hosts to answer: `extra` (the user's `--allowed-host`s) and the bound
    address when it is a specific one (`--host 192.168.1.5`; not 0.0.0.0 or ::)."""
    names = {host_name(h) for h in extra if host_name(h)}
    if host_name(bound) not in _WILDCARDS:
        names.add(host_name(bound))
    return frozenset(names)


class HostGuard:
    """ASGI middleware: answer only requests to an allowed host (see the module's text).

    Args:
        app: the application guarded.
        allowed: host names answered beside the loopback ones (any case, ports ignored).
    """

    def __init__(self, app: ASGIApp, allowed: Iterable[str] = ()) -> None:
        self.app = app
        self.allowed = frozenset(host_name(h) for h in allowed)

    def allows(self, host: str) -> bool:
        """Whether a request naming `host` (a header's value, port and all) is answered."""
        name = host_name(host)
        return bool(name) and (is_loopback(name) or name in self.allowed)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        host = headers.get("host", "")
        if not self.allows(host):
            await _refuse(send, 400, f"host {host!r} is not served: the dashboard answers "
                          "loopback hosts and those given with --allowed-host")  # fmt: skip
            return
        origin = headers.get("origin")
        method = scope.get("method", "GET")
        foreign = origin is not None and (
            origin == "null" or not self.allows(urlsplit(origin).netloc)
        )
        if method not in SAFE_METHODS and foreign:
            await _refuse(send, 403, f"origin {origin!r} may not change state here")
            return
        await self.app(scope, receive, send)


async def _refuse(send: Send, status: int, detail: str) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode())]})  # fmt: skip
    await send({"type": "http.response.body", "body": body})


__all__ = ["SAFE_METHODS", "HostGuard", "allowed_hosts", "host_name", "is_loopback"]
