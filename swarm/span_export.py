"""Span export that never holds a run or the process up: one bound on every wait.

The OTLP exporter retries a failed batch with backoff until its timeout, batch after batch,
and the SDK's exit hook waits for all of it: with the collector down or hanging, a finished
run's process used to exit 25–43 s late. Here:

- every export, its retries included, ends within `bound_s` (the exporter's own deadline);
- once an export fails, the batches of the next `cooldown_s` are dropped at once (counted),
  then export is tried again: a dead collector costs one bound, not one per batch;
- at exit, the provider is shut down in a helper thread that the exit waits for at most
  `bound_s`; the exporter is then told to stop (its retry sleeps end);
- the user is told once, at exit, how many spans were dropped and where they were going;
  the SDK's own retry warnings for these exports are not printed.

    exporter = BoundedExporter(OTLPSpanExporter(endpoint=url, timeout=5), url, bound_s=5)
    provider = bounded_provider(exporter, resource)      # shutdown_on_exit handled here

This module imports the OpenTelemetry SDK: `swarm.telemetry` imports it only when export is
asked for.
"""

from __future__ import annotations

import atexit
import logging
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

#: Seconds export stays off after a failed one.
COOLDOWN_S = 30.0
#: Spans a batch processor holds while the collector is slow: a run's spans for the bound
#: (the SDK's 2,048 overflowed in 5 s of a 3,000-sub-agent run).
MAX_QUEUE_SPANS = 65_536
#: The loggers whose records our exports make quiet (the exporter's retries and failures).
_QUIET_LOGGERS = (
    "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    "opentelemetry.exporter.otlp.common.http",
    "opentelemetry.sdk.trace.export",
)
#: The batch processor's own logger ("Queue full, dropping Span.").
_QUEUE_LOGGER = "opentelemetry.sdk._shared_internal"
_quiet = threading.local()


class _DuringOurExports(logging.Filter):
    """Drops the records logged while a `BoundedExporter` exports on this thread."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not getattr(_quiet, "active", False)


class _QueueFull(logging.Filter):
    """Counts the spans a full batch queue dropped, instead of a warning for each."""

    def __init__(self) -> None:
        super().__init__()
        self.dropped = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg == "Queue full, dropping %s.":
            self.dropped += 1
            return False
        return True


_FILTER = _DuringOurExports()
for _name in _QUIET_LOGGERS:
    logging.getLogger(_name).addFilter(_FILTER)
_QUEUE_FULL = _QueueFull()
logging.getLogger(_QUEUE_LOGGER).addFilter(_QUEUE_FULL)


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class BoundedExporter(SpanExporter):
    """A `SpanExporter` around `inner` that stops trying for `cooldown_s` after a failure
    and says once, at shutdown, how many spans it dropped.

    Args:
        inner: the exporter (its own timeout should be at most `bound_s`).
        endpoint: where spans go, for the message.
        bound_s: the bound the message states (the exporter's timeout).
        cooldown_s: seconds to drop batches after a failed export.
        tell: prints the message (default: one line on stderr).
        clock: monotonic seconds (tests).
    """

    def __init__(
        self,
        inner: SpanExporter,
        endpoint: str | None,
        *,
        bound_s: float,
        cooldown_s: float = COOLDOWN_S,
        tell: Callable[[str], None] = _stderr,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.inner, self.endpoint, self.bound_s = inner, endpoint, bound_s
        self.cooldown_s, self.tell, self.clock = cooldown_s, tell, clock
        self.exported = 0
        self.dropped = 0
        self._queue_dropped_before = _QUEUE_FULL.dropped
        self._off_until = float("-inf")
        self._closed = False
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self._closed or self.clock() < self._off_until:
            with self._lock:
                self.dropped += len(spans)
            return SpanExportResult.FAILURE
        _quiet.active = True
        try:
            result = self.inner.export(spans)
        except Exception:  # noqa: BLE001 - an exporter bug must not reach the run
            result = SpanExportResult.FAILURE
        finally:
            _quiet.active = False
        with self._lock:
            if result is SpanExportResult.SUCCESS:
                self.exported += len(spans)
            else:
                self.dropped += len(spans)
                self._off_until = self.clock() + self.cooldown_s
        return result

    def abort(self) -> None:
        """Stop now: later batches are dropped, the inner exporter's retries end."""
        self._closed = True
        self.inner.shutdown()

    def shutdown(self) -> None:
        if not self._closed:
            self._closed = True
            self.inner.shutdown()
        self.report()

    @property
    def closed(self) -> bool:
        return self._closed

    def report(self, *, queued: bool = False) -> None:
        """Say how many spans were dropped (once; nothing when none were). `queued`: spans
        still waiting in the processor were dropped too (their number is not known)."""
        with self._lock:
            dropped, self.dropped = self.dropped, 0
            dropped += _QUEUE_FULL.dropped - self._queue_dropped_before
            self._queue_dropped_before = _QUEUE_FULL.dropped
        if dropped or queued:
            where = f" to {self.endpoint}" if self.endpoint else ""
            count = f"{dropped:,}" + (" and the queued" if queued else "")
            self.tell(
                f"kimmy: warning: {count} OpenTelemetry span(s) were not exported{where}: "
                f"the collector did not take them within {self.bound_s:g} s (down or hanging)"
            )

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True


def bounded_provider(exporter: BoundedExporter, resource: Any) -> TracerProvider:
    """A `TracerProvider` exporting through `exporter` in batches, whose exit waits at most
    `exporter.bound_s` for them (the SDK's own exit hook, which waits for every batch, is
    replaced)."""
    provider = TracerProvider(resource=resource, shutdown_on_exit=False)
    provider.add_span_processor(BatchSpanProcessor(exporter, max_queue_size=MAX_QUEUE_SPANS))
    atexit.register(shutdown_within, provider, exporter)
    return provider


def shutdown_within(provider: TracerProvider, exporter: BoundedExporter) -> None:
    """Shut `provider` down (flushing what it holds), waiting at most `exporter.bound_s`;
    past that, stop the exporter and say what was dropped."""
    if exporter.closed:  # shut down already (the caller's own `provider.shutdown()`)
        return
    helper = threading.Thread(target=provider.shutdown, name="kimmy-span-shutdown", daemon=True)
    helper.start()
    helper.join(exporter.bound_s)
    if helper.is_alive():
        exporter.abort()
        helper.join(0.5)
        exporter.report(queued=True)


__all__ = [
    "COOLDOWN_S",
    "MAX_QUEUE_SPANS",
    "BoundedExporter",
    "bounded_provider",
    "shutdown_within",
]
