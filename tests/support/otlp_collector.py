"""An OTLP/HTTP trace collector in the test process: `OtlpCollector` keeps each protobuf
body POSTed to /v1/traces and decodes them into spans (OpenTelemetry's own protobufs);
`HangingCollector` accepts connections and never answers."""

from __future__ import annotations

import gzip
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        if self.path == "/v1/traces":
            self.server.bodies.append(body)  # type: ignore[attr-defined]
        self.send_response(200 if self.path == "/v1/traces" else 404)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return


class OtlpCollector:
    """with OtlpCollector() as c: … export to c.traces_url …; c.spans() after."""

    def __init__(self) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.bodies = []  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def traces_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_port}/v1/traces"

    @property
    def bodies(self) -> list[bytes]:
        return list(self._server.bodies)  # type: ignore[attr-defined]

    def spans(self) -> list[tuple[str, Any, Any]]:
        """Every span received, as (service.name, instrumentation scope, span)."""
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )

        out = []
        for body in self.bodies:
            request = ExportTraceServiceRequest.FromString(body)
            for resource_spans in request.resource_spans:
                service = next(
                    (a.value.string_value for a in resource_spans.resource.attributes
                     if a.key == "service.name"),
                    "",
                )  # fmt: skip
                for scope in resource_spans.scope_spans:
                    out.extend((service, scope.scope, span) for span in scope.spans)
        return out

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._server.shutdown()
        self._server.server_close()



class HangingCollector:
    """Accepts connections and never answers (a collector that hangs)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1/traces"

    def close(self) -> None:
        self.sock.close()
        for conn in self.held:
            conn.close()


__all__ = ["HangingCollector", "OtlpCollector"]
