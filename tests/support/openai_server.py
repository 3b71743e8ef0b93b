"""A real OpenAI-compatible HTTP server on 127.0.0.1 for tests (no model behind it).

It runs `http.server.ThreadingHTTPServer` in a background thread (one thread per
connection, HTTP/1.1 keep-alive, a deep accept backlog), so hundreds of requests can be in
flight at once. Each `POST /v1/chat/completions` is answered by the next *behaviour* in the
queue, in arrival order; once the queue is empty, `default` answers. `GET /v1/models` lists
`models` (each card with `card_fields` added, e.g. vLLM's `max_model_len`). Every request is
recorded in `srv.requests`, and `srv.max_in_flight` is the most requests that were in flight
at once.

Example:
    with OpenAIServer([status(429, headers={"Retry-After": "2"}), reply("hi")]) as srv:
        model = OpenAIChat(srv.base_url, "test-model")
        ...                                  # first call: 429, second: "hi", then echo
        assert srv.chat_requests[1].body["messages"][-1]["content"] == "..."

A behaviour is any function `ServerRequest -> Reply`; `tests.support.openai_behaviours`
builds the common ones (`reply`, `tool_call`, `status`, `malformed`, `delay`, `disconnect`,
`echo`, `computed`, `busy_above`, `together`, `honouring`, `probes_honoured`), re-exported
here. They run in server threads: keep
hand-written ones thread-safe. The default, `echo()`, answers a `json_schema` response format
with a JSON object that fits the schema, as a constrained server would.
"""

from __future__ import annotations

import json
import socket
import socketserver
import sys
import threading
import time
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

from tests.support.openai_behaviours import (
    Behaviour,
    Reply,
    ServerRequest,
    busy_above,
    completion,
    computed,
    delay,
    disconnect,
    echo,
    honouring,
    json_reply,
    malformed,
    probes_honoured,
    reply,
    status,
    together,
    tool_call,
)


class OpenAIServer:
    """A loopback OpenAI-compatible server; use it as a context manager.

    Args:
        behaviours: Answers for the first chat requests, in arrival order.
        default: Answers every chat request after those (default: `echo()`).
        models: Ids listed by `GET /v1/models`.
        card_fields: Extra fields of every model card there (`{"max_model_len": 4096}`).
        api_key: When set, requests without `Authorization: Bearer <api_key>` get 401.
    """

    def __init__(
        self,
        behaviours: Iterable[Behaviour] = (),
        *,
        default: Behaviour | None = None,
        models: Sequence[str] = ("test-model",),
        card_fields: Mapping[str, Any] | None = None,
        api_key: str | None = None,
    ) -> None:
        self._queue: deque[Behaviour] = deque(behaviours)
        self.default = default or echo()
        self.models = list(models)
        self.card_fields = dict(card_fields or {})
        self.api_key = api_key
        self.requests: list[ServerRequest] = []
        #: Exceptions raised by behaviours (each was answered with a 500).
        self.errors: list[BaseException] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._threads: set[threading.Thread] = set()
        self._httpd: _HTTPServer | None = None
        self._serve_thread: threading.Thread | None = None
        self._port: int | None = None  # kept after stop, so URLs in errors can be compared

    @property
    def port(self) -> int:
        assert self._port is not None, "server not started"
        return self._port

    @property
    def base_url(self) -> str:
        """The API root clients use: `http://127.0.0.1:PORT/v1`."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def chat_requests(self) -> list[ServerRequest]:
        """The recorded `POST /v1/chat/completions` requests, in arrival order."""
        with self._lock:
            return [r for r in self.requests if r.path == "/v1/chat/completions"]

    @property
    def pending(self) -> int:
        """Queued behaviours not used yet."""
        with self._lock:
            return len(self._queue)

    def add(self, *behaviours: Behaviour) -> None:
        """Queue more behaviours (after those already queued)."""
        with self._lock:
            self._queue.extend(behaviours)

    def start(self) -> Self:
        self._httpd = _HTTPServer(self)
        self._port = int(self._httpd.server_address[1])
        self._serve_thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self._serve_thread.start()
        return self

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop accepting, cut open connections and pending delays, join the threads."""
        if self._httpd is None:
            return
        self._stopping.set()
        self._httpd.shutdown()
        with self._lock:
            connections, threads = list(self._connections), list(self._threads)
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:  # already closed by the client
                continue
        deadline = time.monotonic() + timeout_s
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        self._httpd.server_close()
        if self._serve_thread is not None:
            self._serve_thread.join(timeout_s)
        self._httpd = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # --- called from handler threads ----------------------------------------------------

    def _enter(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> ServerRequest:
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            request = ServerRequest(method, path, headers, body, self.in_flight)
            self.requests.append(request)
        return request

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def _route(self, request: ServerRequest) -> Reply:
        path = request.path.split("?", 1)[0]
        if self.api_key and request.headers.get("authorization") != f"Bearer {self.api_key}":
            return json_reply(401, _error("invalid or missing API key", "auth"))
        if request.method == "GET" and path == "/v1/models":
            data = [
                {"id": m, "object": "model", "owned_by": "test", **self.card_fields}
                for m in self.models
            ]
            return json_reply(200, {"object": "list", "data": data})
        if request.method == "POST" and path == "/v1/chat/completions":
            if not isinstance(request.body, dict):
                return json_reply(400, _error("request body is not a JSON object", "bad_json"))
            with self._lock:
                behaviour = self._queue.popleft() if self._queue else self.default
            try:
                return behaviour(request)
            except Exception as exc:  # noqa: BLE001 — a broken behaviour answers 500, visibly
                with self._lock:
                    self.errors.append(exc)
                return json_reply(500, _error(f"behaviour raised {exc!r}", "behaviour"))
        return json_reply(404, _error(f"no route for {request.method} {path}", "not_found"))

    def _wait(self, seconds: float) -> None:
        self._stopping.wait(seconds)


def _error(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind}}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, like real servers
    timeout = 60  # an idle keep-alive connection frees its thread eventually
    # One buffered write per response with Nagle off: otherwise headers and body go out as
    # two segments and delayed ACKs add ~40 ms to every call on a kept-alive connection.
    wbufsize = -1
    disable_nagle_algorithm = True
    server: _HTTPServer

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def _serve(self, method: str) -> None:
        owner = self.server.owner
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        request = owner._enter(method, self.path, headers, raw)
        try:
            answer = owner._route(request)
            if answer.delay_s > 0:
                owner._wait(answer.delay_s)
            if answer.disconnect:
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            if answer.pieces:
                self._send_pieces(owner, answer.pieces, answer.piece_delay_s)
                return
            self.send_response(answer.status)
            self.send_header("Content-Type", "application/json")
            for name, value in answer.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(answer.body)))
            self.end_headers()
            self.wfile.write(answer.body)
            self.wfile.flush()
        finally:
            owner._leave()

    def _send_pieces(self, owner: OpenAIServer, pieces: Sequence[bytes], delay_s: float) -> None:
        """A server-sent event stream written a piece at a time; the connection then closes."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.flush()
        for piece in pieces:
            self.wfile.write(piece)
            self.wfile.flush()
            owner._wait(delay_s)
        self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests read `srv.requests`, not a log."""


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # `OpenAIServer.stop` joins the threads, with a deadline
    request_queue_size = 1024  # many clients connect at once; the default (5) drops SYNs
    allow_reuse_address = True

    def __init__(self, owner: OpenAIServer) -> None:
        self.owner = owner
        super().__init__(("127.0.0.1", 0), _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind does a reverse-DNS lookup (getfqdn) that can stall.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = "127.0.0.1", int(self.server_address[1])

    def process_request(self, request: Any, client_address: Any) -> None:
        thread = threading.Thread(
            target=self.process_request_thread, args=(request, client_address), daemon=True
        )
        with self.owner._lock:
            self.owner._connections.add(request)
            self.owner._threads.add(thread)
        thread.start()

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self.owner._lock:
                self.owner._connections.discard(request)
                self.owner._threads.discard(threading.current_thread())

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], OSError):
            return  # the client went away (a timeout test, a disconnect, shutdown)
        super().handle_error(request, client_address)


__all__ = [
    "Behaviour",
    "OpenAIServer",
    "Reply",
    "ServerRequest",
    "busy_above",
    "completion",
    "computed",
    "delay",
    "disconnect",
    "echo",
    "honouring",
    "malformed",
    "probes_honoured",
    "reply",
    "status",
    "together",
    "tool_call",
]
