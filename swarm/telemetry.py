"""OpenTelemetry spans of a run, built from its event stream (the optional `otel` extra).

`SpanSink` is an `EventSink`: it turns the events of a run into one span tree, with the
real start and end times the events carry, named and attributed after the OpenTelemetry
GenAI semantic conventions:

```
invoke_workflow [kimmy]                  the run (gen_ai.operation.name=invoke_workflow)
├─ invoke_agent {role}                   one attempt of a planned subtask
│  ├─ chat {model}                       one model call (start = ts - latency_s)
│  ├─ execute_tool {tool}                one tool call
│  └─ turn {step}                        an orchestrator's turn that spawned
│     └─ invoke_agent {role}             the sub-agents spawned in that turn
│        └─ ...
```

A turn span covers one turn of an agent that spawns: from the end of its previous turn (or
its start) to its `agent_turn` event. Spawns arrive before that event, so the span is opened
at the first spawn, with the turn's start time, and ended when the turn is recorded. Retried
attempts are separate `invoke_agent` spans (status ERROR, `error.type` the exception);
failed subtasks are ERROR too. Spans still open when the run finishes (a cancelled run)
end at `run_finished`. Messages and tool arguments are not put on spans.

Export: `otlp_sink()` sends the spans to an OTLP/HTTP (protobuf) endpoint through a batch
processor, flushed when each run finishes. One bound (`timeout_s`, 5 s) holds every wait for
the collector: an export with its retries, a run's end, the process's exit; a collector that
is down or hangs costs at most that, and the user is told once how many spans were dropped
(`swarm.span_export`). The CLI adds it to every run when the standard
`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (full URL, e.g. `http://localhost:4318/v1/traces`)
or `OTEL_EXPORTER_OTLP_ENDPOINT` (base URL; `/v1/traces` is appended) is set
(`sinks_from_env`); `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_SERVICE_NAME` and
`OTEL_SDK_DISABLED=true` are honoured. OpenTelemetry is imported only when a sink is built,
so `import kimmy_swarm.swarm` never needs it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kimmy_swarm.swarm.errors import ConfigError
from kimmy_swarm.swarm.event_fold import EventFold
from kimmy_swarm.swarm.schema import RunStatus, SubtaskStatus

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.trace import Span, TracerProvider

    from kimmy_swarm.swarm.events import (
        AgentTurn,
        ModelCalled,
        RunFinished,
        RunStarted,
        SubtaskFinished,
        SubtaskRetrying,
        SubtasksSpawned,
        SubtaskStarted,
        ToolCalled,
    )

_INSTALL = "pip install 'kimmy-swarm[otel]'"
#: The environment variables that turn export on (either one).
ENDPOINT_VARS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
_PROTOCOL_VARS = ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
_MAX_GOAL_CHARS = 500
_MAX_SPAWNED_IDS = 100


def _ns(ts: float) -> int:
    return int(ts * 1e9)


def _attrs(**values: Any) -> dict[str, Any]:
    """Span attributes without the unknown ones (OpenTelemetry refuses None)."""
    return {k.replace("__", "."): v for k, v in values.items() if v is not None}


def _error_type(error: str | None) -> str:
    """The exception type of an error recorded as `Type: message`."""
    return (error or "error").split(":", 1)[0].strip() or "error"


@dataclass
class _Attempt:
    """The open spans of one subtask attempt."""

    span: Span
    ctx: Context
    role: str
    start: float
    #: When the agent's current turn began (its start, or its previous turn's end).
    turn_start: float
    turn: Span | None = None
    turn_ctx: Context | None = None
    #: Whether it spawned in this attempt: its later turns get spans too.
    orchestrator: bool = False


@dataclass
class _Run:
    span: Span
    ctx: Context
    start: float
    model: str | None
    attempts: dict[str, _Attempt] = field(default_factory=dict)
    #: The context (a turn span) each spawned subtask's attempts are children of.
    parents: dict[str, Context] = field(default_factory=dict)


class SpanSink(EventFold):
    """An `EventSink` that turns the events of runs into OpenTelemetry spans.

    Args:
        tracer_provider: where the spans go (None: the global provider). A provider with
            `force_flush` (the SDK's) is flushed when each run finishes.
        workflow_name: `gen_ai.workflow.name` of the run spans (e.g. the pipeline).
        flush_timeout_s: how long a run's end may wait for its spans to be exported.

    Raises:
        ConfigError: OpenTelemetry is not installed (the `otel` extra).
    """

    def __init__(
        self,
        tracer_provider: TracerProvider | None = None,
        *,
        workflow_name: str | None = None,
        flush_timeout_s: float = 5.0,
    ) -> None:
        if flush_timeout_s <= 0:
            raise ConfigError(f"flush_timeout_s must be > 0, got {flush_timeout_s!r}")
        trace = _import_api()
        from kimmy_swarm.swarm import __version__

        self._trace = trace
        self.tracer_provider = tracer_provider
        provider = tracer_provider or trace.get_tracer_provider()
        self._tracer = provider.get_tracer("kimmy-swarm", __version__)
        self.workflow_name = workflow_name
        self.flush_timeout_s = flush_timeout_s
        self._runs: dict[str, _Run] = {}

    # --- spans -------------------------------------------------------------------------

    def _start(
        self,
        name: str,
        parent: Context | None,
        start: float,
        attrs: dict[str, Any],
        *,
        client: bool = False,
    ) -> Span:
        kind = self._trace.SpanKind.CLIENT if client else self._trace.SpanKind.INTERNAL
        return self._tracer.start_span(
            name, context=parent, kind=kind, attributes=attrs, start_time=_ns(start)
        )

    def _error(self, span: Span, error_type: str, message: str | None = None) -> None:
        span.set_attribute("error.type", error_type)
        span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, message or None))

    def on_run_started(self, e: RunStarted) -> None:
        model = e.settings.get("model")
        model = model if isinstance(model, str) and model else None
        name = f"invoke_workflow {self.workflow_name}" if self.workflow_name else "invoke_workflow"
        span = self._start(name, None, e.ts, _attrs(
            gen_ai__operation__name="invoke_workflow",
            gen_ai__workflow__name=self.workflow_name,
            gen_ai__request__model=model,
            kimmy__run__id=e.run_id,
            kimmy__run__goal=e.goal[:_MAX_GOAL_CHARS] or None,
            kimmy__run__resumed=e.resumed,
            kimmy__run__subtasks=e.n_subtasks,
        ))  # fmt: skip
        old = self._runs.pop(e.run_id, None)
        if old is not None:  # a second start without a finish: close what the first left
            self._close_run(old, e.ts)
            old.span.end(end_time=_ns(e.ts))
        self._runs[e.run_id] = _Run(span, self._trace.set_span_in_context(span), e.ts, model)

    def on_subtask_started(self, e: SubtaskStarted) -> None:
        run = self._runs.get(e.run_id)
        if run is None:
            return
        stale = run.attempts.pop(e.subtask_id, None)
        if stale is not None:  # a new attempt without a retry event: end the old one here
            self._end_attempt(stale, e.ts)
        span = self._start(
            f"invoke_agent {e.role}",
            run.parents.get(e.subtask_id, run.ctx),
            e.ts,
            _attrs(
                gen_ai__operation__name="invoke_agent",
                gen_ai__agent__name=e.role,
                gen_ai__agent__id=e.subtask_id,
                gen_ai__request__model=run.model,
                kimmy__run__id=e.run_id,
                kimmy__subtask__id=e.subtask_id,
                kimmy__attempt=e.attempt,
            ),
        )
        ctx = self._trace.set_span_in_context(span)
        run.attempts[e.subtask_id] = _Attempt(span, ctx, e.role, e.ts, e.ts)

    def _parent_of(self, run: _Run, subtask_id: str, start: float) -> tuple[Context, float]:
        """The span a call hangs under, and its start, kept inside that span (a latency
        measured on another host, or given by a recorder, may reach back before it)."""
        attempt = run.attempts.get(subtask_id)
        if attempt is None:
            return run.ctx, max(start, run.start)
        return attempt.ctx, max(start, attempt.start)

    def on_model_called(self, e: ModelCalled) -> None:
        run = self._runs.get(e.run_id)
        if run is None:
            return
        response = e.response or {}
        request = e.request or {}
        finish = response.get("finish_reason") if isinstance(response, Mapping) else None
        max_tokens = request.get("max_tokens") if isinstance(request, Mapping) else None
        parent, start = self._parent_of(run, e.subtask_id, e.ts - e.latency_s)
        span = self._start(
            f"chat {run.model}" if run.model else "chat",
            parent,
            start,
            _attrs(
                gen_ai__operation__name="chat",
                gen_ai__request__model=run.model,
                gen_ai__request__max_tokens=max_tokens if isinstance(max_tokens, int) else None,
                gen_ai__response__finish_reasons=[finish] if isinstance(finish, str) else None,
                gen_ai__usage__input_tokens=e.usage.prompt_tokens,
                gen_ai__usage__output_tokens=e.usage.completion_tokens,
                kimmy__subtask__id=e.subtask_id,
            ),
            client=True,
        )
        if e.error is not None:
            self._error(span, e.error.type, e.error.message)
        span.end(end_time=_ns(e.ts))

    def on_tool_called(self, e: ToolCalled) -> None:
        run = self._runs.get(e.run_id)
        if run is None:
            return
        parent, start = self._parent_of(run, e.subtask_id, e.ts - e.latency_s)
        span = self._start(
            f"execute_tool {e.tool}",
            parent,
            start,
            _attrs(
                gen_ai__operation__name="execute_tool",
                gen_ai__tool__name=e.tool,
                gen_ai__tool__call__id=e.call_id,
                kimmy__subtask__id=e.subtask_id,
                kimmy__step=e.step,
            ),
        )
        if not e.ok:
            self._error(span, _error_type(e.error), e.error)
        span.end(end_time=_ns(e.ts))

    # --- orchestrator turns ------------------------------------------------------------

    def _open_turn(self, attempt: _Attempt, subtask_id: str) -> Context:
        if attempt.turn is None or attempt.turn_ctx is None:
            attempt.turn = self._start("turn", attempt.ctx, attempt.turn_start, _attrs(
                gen_ai__agent__name=attempt.role,
                gen_ai__agent__id=subtask_id,
                kimmy__subtask__id=subtask_id,
            ))  # fmt: skip
            attempt.turn_ctx = self._trace.set_span_in_context(attempt.turn)
        attempt.orchestrator = True
        return attempt.turn_ctx

    def _end_turn(self, attempt: _Attempt, ts: float) -> None:
        if attempt.turn is not None:
            attempt.turn.end(end_time=_ns(ts))
        attempt.turn = attempt.turn_ctx = None
        attempt.turn_start = ts

    def on_subtasks_spawned(self, e: SubtasksSpawned) -> None:
        run = self._runs.get(e.run_id)
        if run is None:
            return
        attempt = run.attempts.get(e.parent_id)
        parent = self._open_turn(attempt, e.parent_id) if attempt is not None else run.ctx
        for subtask in e.subtasks:
            run.parents[subtask.id] = parent

    def on_agent_turn(self, e: AgentTurn) -> None:
        run = self._runs.get(e.run_id)
        attempt = run.attempts.get(e.subtask_id) if run is not None else None
        if attempt is None:
            return
        if attempt.turn is None and (attempt.orchestrator or e.spawned):
            self._open_turn(attempt, e.subtask_id)
        if attempt.turn is not None:
            attempt.turn.update_name(f"turn {e.step}")
            attempt.turn.set_attributes(_attrs(
                kimmy__turn__step=e.step,
                kimmy__turn__spawned_count=len(e.spawned),
                kimmy__turn__spawned=list(e.spawned[:_MAX_SPAWNED_IDS]) or None,
            ))  # fmt: skip
        self._end_turn(attempt, e.ts)

    # --- ends ----------------------------------------------------------------------------

    def _end_attempt(self, attempt: _Attempt, ts: float) -> None:
        self._end_turn(attempt, ts)
        attempt.span.end(end_time=_ns(ts))

    def on_subtask_retrying(self, e: SubtaskRetrying) -> None:
        run = self._runs.get(e.run_id)
        attempt = run.attempts.pop(e.subtask_id, None) if run is not None else None
        if attempt is None:
            return
        attempt.span.set_attribute("kimmy.retry.delay_s", e.delay_s)
        self._error(attempt.span, e.error.type, e.error.message)
        self._end_attempt(attempt, e.ts)

    def on_subtask_finished(self, e: SubtaskFinished) -> None:
        result = e.result
        run = self._runs.get(e.run_id)
        attempt = run.attempts.pop(result.id, None) if run is not None else None
        if attempt is None:  # never started (skipped): no span
            return
        attempt.span.set_attributes(_attrs(
            gen_ai__usage__input_tokens=result.usage.prompt_tokens,
            gen_ai__usage__output_tokens=result.usage.completion_tokens,
            kimmy__subtask__status=result.status.value,
            kimmy__model_calls=result.usage.model_calls,
        ))  # fmt: skip
        if result.status is SubtaskStatus.FAILED:
            error = result.error
            self._error(attempt.span, error.type if error else "failed",
                        error.message if error else None)  # fmt: skip
        end = result.timings.finished_at
        self._end_attempt(attempt, end if end is not None and end <= e.ts else e.ts)

    def _close_run(self, run: _Run, ts: float) -> None:
        for attempt in run.attempts.values():
            attempt.span.set_attribute("kimmy.ended_by_run", True)
            self._end_attempt(attempt, ts)
        run.attempts.clear()

    def on_run_finished(self, e: RunFinished) -> None:
        run = self._runs.pop(e.run_id, None)
        if run is None:
            return
        self._close_run(run, e.ts)
        run.span.set_attributes(_attrs(
            kimmy__run__status=e.status.value,
            kimmy__run__stop_reason=e.stop_reason,
            gen_ai__usage__input_tokens=e.usage.prompt_tokens,
            gen_ai__usage__output_tokens=e.usage.completion_tokens,
        ))  # fmt: skip
        if e.status in (RunStatus.FAILED, RunStatus.BUDGET_EXHAUSTED):
            self._error(run.span, e.status.value, e.stop_reason)
        run.span.end(end_time=_ns(e.ts))
        self.flush()

    def flush(self) -> None:
        """Export what has ended (waits at most `flush_timeout_s`; a no-op without an SDK)."""
        force_flush = getattr(self.tracer_provider, "force_flush", None)
        if force_flush is not None:
            force_flush(int(self.flush_timeout_s * 1000))


def _import_api() -> Any:
    try:
        from opentelemetry import trace
    except ImportError as exc:
        raise ConfigError(f"OpenTelemetry spans need the otel extra: {_INSTALL}") from exc
    return trace


def otlp_sink(
    endpoint: str | None = None,
    *,
    headers: Mapping[str, str] | None = None,
    service_name: str | None = None,
    workflow_name: str | None = None,
    timeout_s: float = 5.0,
) -> SpanSink:
    """A `SpanSink` exporting to an OTLP/HTTP (protobuf) collector in batches, never waiting
    for it more than `timeout_s` (`swarm.span_export.BoundedExporter`).

    Args:
        endpoint: the traces URL (`http://host:4318/v1/traces`); None: the standard
            `OTEL_EXPORTER_OTLP_*` variables decide (as the OpenTelemetry exporter reads them).
        headers: extra HTTP headers (e.g. an API key); None: `OTEL_EXPORTER_OTLP_HEADERS`.
        service_name: `service.name` of the spans; None: `OTEL_SERVICE_NAME`, else `kimmy`.
        workflow_name: see `SpanSink`.
        timeout_s: the most any wait for the collector lasts: one export with its retries,
            a run's end (its spans' flush), the process's exit.

    Raises:
        ConfigError: the otel extra is not installed, or `timeout_s` is not positive.
    """
    if timeout_s <= 0:
        raise ConfigError(f"timeout_s must be > 0, got {timeout_s!r}")
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource

        from kimmy_swarm.swarm.span_export import BoundedExporter, bounded_provider
    except ImportError as exc:
        raise ConfigError(f"OTLP export needs the otel extra: {_INSTALL}") from exc
    name = service_name or os.environ.get("OTEL_SERVICE_NAME") or "kimmy"
    inner = OTLPSpanExporter(
        endpoint=endpoint, headers=dict(headers) if headers else None, timeout=timeout_s
    )
    exporter = BoundedExporter(inner, endpoint or traces_endpoint(os.environ), bound_s=timeout_s)
    provider = bounded_provider(exporter, Resource.create({"service.name": name}))
    return SpanSink(provider, workflow_name=workflow_name, flush_timeout_s=timeout_s)


def sinks_from_env(
    environ: Mapping[str, str] | None = None, *, workflow_name: str | None = None
) -> list[SpanSink]:
    """`[otlp_sink()]` when an OTLP endpoint variable is set, else `[]` (the CLI's hook).

    `workflow_name` names the run spans (`gen_ai.workflow.name`; the CLI gives its command).

    Raises:
        ConfigError: export is asked for but the otel extra is missing, or the protocol
            variable names one other than `http/protobuf`.
    """
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return []
    if not any(env.get(var, "").strip() for var in ENDPOINT_VARS):
        return []
    for var in _PROTOCOL_VARS:
        protocol = env.get(var, "").strip()
        if protocol and protocol != "http/protobuf":
            raise ConfigError(f"{var}={protocol!r} is not supported; use http/protobuf")
    return [
        otlp_sink(
            traces_endpoint(env),
            service_name=env.get("OTEL_SERVICE_NAME"),
            workflow_name=workflow_name,
        )
    ]


def traces_endpoint(environ: Mapping[str, str]) -> str | None:
    """The traces URL the standard variables name: the traces one as it is, else the base
    one with `/v1/traces` appended (as the OTLP/HTTP exporter specification says)."""
    traces = environ.get(ENDPOINT_VARS[0], "").strip()
    if traces:
        return traces
    base = environ.get(ENDPOINT_VARS[1], "").strip()
    return f"{base.rstrip('/')}/v1/traces" if base else None


__all__ = ["ENDPOINT_VARS", "SpanSink", "otlp_sink", "sinks_from_env", "traces_endpoint"]
