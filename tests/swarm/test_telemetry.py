"""OpenTelemetry spans of a run (`swarm.telemetry`): the span tree of a small run, its
GenAI attributes and times, and a real OTLP/HTTP export to an in-process collector."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

import itertools

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from opentelemetry.trace import StatusCode

from kimmy_swarm.swarm import Plan, Subtask, SubtaskContext, Swarm
from kimmy_swarm.swarm.errors import ConfigError, ModelServerError
from kimmy_swarm.swarm.limits import Backoff
from kimmy_swarm.swarm.llm.scripted import ScriptedChat
from kimmy_swarm.swarm.llm.types import ChatResponse
from kimmy_swarm.swarm.schema import Usage
from kimmy_swarm.swarm.telemetry import SpanSink, otlp_sink, sinks_from_env, traces_endpoint
from tests.support.otlp_collector import OtlpCollector

_ANSWER = ChatResponse(
    content="ok",
    finish_reason="stop",
    usage=Usage(prompt_tokens=7, completion_tokens=3, total_tokens=10, model_calls=1),
    model="tiny",
)


def _swarm(**kwargs: Any) -> Swarm:
    """A swarm whose run has every kind of span: a planned worker with a model call and a
    tool call, a retried subtask, a failed one, and a boss that spawns in two turns."""
    swarm = Swarm(
        model=ScriptedChat.always(_ANSWER, name="tiny"),
        max_retries=1,
        backoff=Backoff(0.001, 0.002),
        failure_policy="continue",
        **kwargs,
    )
    swarm.settings = {"model": "tiny"}

    @swarm.role("worker")
    async def worker(ctx: SubtaskContext) -> str:
        reply = await ctx.model.chat([{"role": "user", "content": "hi"}], max_tokens=16)
        ctx.record_tool("search", step=1, latency_s=0.01, call_id="call-1")
        ctx.record_tool("read", step=1, latency_s=0.01, error="KeyError: 'p9'")
        return reply.content or ""

    @swarm.role("flaky")
    async def flaky(ctx: SubtaskContext) -> int:
        if ctx.attempt == 1:
            raise ModelServerError("502 from the server")  # retryable: attempt 2 runs
        return ctx.attempt

    @swarm.role("bad")
    async def bad(ctx: SubtaskContext) -> None:
        raise ValueError("no such column")

    @swarm.role("child")
    async def child(ctx: SubtaskContext) -> str:
        await ctx.model.chat([{"role": "user", "content": ctx.id}])
        return ctx.id

    @swarm.role("boss")
    async def boss(ctx: SubtaskContext) -> int:
        ctx.spawn([{"id": "c0", "role": "child"}, {"id": "c1", "role": "child"}])
        ctx.record_turn([{"role": "assistant", "content": "two"}], spawned=["c0", "c1"])
        await ctx.wait(["c0", "c1"])
        ctx.spawn([{"id": "c2", "role": "child"}])
        ctx.record_turn([{"role": "assistant", "content": "one more"}], spawned=["c2"])
        await ctx.wait(["c2"])
        ctx.record_turn([{"role": "assistant", "content": "done"}])
        return 3

    return swarm


_PLAN = Plan(
    goal="trace me",
    subtasks=[
        Subtask(id="w", role="worker"),
        Subtask(id="f", role="flaky"),
        Subtask(id="x", role="bad"),
        Subtask(id="boss", role="boss", depends_on=["w"]),
    ],
)


@pytest.fixture
def exported() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider, exporter
    provider.shutdown()


def _by_name(spans: tuple[ReadableSpan, ...]) -> dict[str, list[ReadableSpan]]:
    out: dict[str, list[ReadableSpan]] = {}
    for span in spans:
        out.setdefault(span.name, []).append(span)
    return out


def _parent(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def _id(span: ReadableSpan) -> int:
    assert span.context is not None
    return span.context.span_id


def _agent(spans: tuple[ReadableSpan, ...], subtask_id: str) -> list[ReadableSpan]:
    found = [s for s in spans if (s.attributes or {}).get("gen_ai.agent.id") == subtask_id
             and s.name.startswith("invoke_agent")]  # fmt: skip
    return sorted(found, key=lambda s: (s.attributes or {})["kimmy.attempt"])


@pytest.mark.parametrize("stored", [False, True], ids=["no-store", "store"])
async def test_the_span_tree_of_a_small_run(
    exported: tuple[TracerProvider, InMemorySpanExporter], stored: bool, tmp_path: Path
) -> None:
    provider, exporter = exported
    swarm = _swarm(runs_dir=tmp_path if stored else None)
    result = await swarm.execute(_PLAN, run_id="r1", sinks=[SpanSink(provider)])
    swarm.close()
    assert result.results["boss"].output == 3 and result.results["x"].status == "failed"
    spans = exporter.get_finished_spans()
    names = _by_name(spans)

    (run,) = names["invoke_workflow"]
    assert _parent(run) is None and run.attributes is not None
    assert run.attributes["gen_ai.operation.name"] == "invoke_workflow"
    assert run.attributes["kimmy.run.id"] == "r1" and run.attributes["kimmy.run.goal"] == "trace me"
    assert run.attributes["gen_ai.request.model"] == "tiny"
    assert len({s.context.trace_id for s in spans if s.context}) == 1  # one trace

    # planned subtasks are children of the run; the retried one has two attempt spans
    (w,) = _agent(spans, "w")
    f1, f2 = _agent(spans, "f")
    (x,) = _agent(spans, "x")
    (boss,) = _agent(spans, "boss")
    for span in (w, f1, f2, x, boss):
        assert _parent(span) == _id(run)
    assert w.name == "invoke_agent worker" and w.attributes is not None
    assert w.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert w.attributes["gen_ai.agent.name"] == "worker"
    assert w.attributes["kimmy.subtask.id"] == "w" and w.attributes["kimmy.attempt"] == 1
    assert w.attributes["gen_ai.usage.input_tokens"] == 7
    assert w.status.status_code is StatusCode.UNSET
    assert f1.status.status_code is StatusCode.ERROR and f1.attributes is not None
    assert f1.attributes["error.type"] == "ModelServerError"
    assert f2.status.status_code is StatusCode.UNSET
    assert x.status.status_code is StatusCode.ERROR and x.attributes is not None
    assert x.attributes["error.type"] == "ValueError"
    assert x.attributes["kimmy.subtask.status"] == "failed"

    # the worker's model call and tool calls are its children
    calls = [s for s in names["chat tiny"] if _parent(s) == _id(w)]
    assert len(calls) == 1 and calls[0].attributes is not None
    attrs = calls[0].attributes
    assert attrs["gen_ai.operation.name"] == "chat" and attrs["gen_ai.request.model"] == "tiny"
    assert (attrs["gen_ai.usage.input_tokens"], attrs["gen_ai.usage.output_tokens"]) == (7, 3)
    assert tuple(attrs["gen_ai.response.finish_reasons"]) == ("stop",)
    assert attrs["gen_ai.request.max_tokens"] == 16
    (search,) = names["execute_tool search"]
    (read,) = names["execute_tool read"]
    assert _parent(search) == _parent(read) == _id(w)
    assert search.attributes is not None and read.attributes is not None
    assert search.attributes["gen_ai.tool.name"] == "search"
    assert search.attributes["gen_ai.tool.call.id"] == "call-1"
    assert search.status.status_code is StatusCode.UNSET
    assert (
        read.status.status_code is StatusCode.ERROR and read.attributes["error.type"] == "KeyError"
    )

    # the boss's turns are its children, and the sub-agents hang under the turn that spawned
    turns = sorted((s for s in spans if _parent(s) == _id(boss) and s.name.startswith("turn")),
                   key=lambda s: s.start_time or 0)  # fmt: skip
    assert [t.name for t in turns] == ["turn 1", "turn 2", "turn 3"]
    assert [(t.attributes or {})["kimmy.turn.spawned_count"] for t in turns] == [2, 1, 0]
    for child_id, turn in (("c0", turns[0]), ("c1", turns[0]), ("c2", turns[1])):
        (child,) = _agent(spans, child_id)
        assert _parent(child) == _id(turn) and child.name == "invoke_agent child"
        (call,) = [s for s in names["chat tiny"] if _parent(s) == _id(child)]
        assert call.start_time and child.start_time and call.start_time >= child.start_time

    # real times: every span ends after it starts, children lie inside the run, turns follow
    # each other, and every span ended (nothing left open)
    for span in spans:
        assert span.start_time is not None and span.end_time is not None
        assert span.start_time <= span.end_time
        assert run.start_time is not None and run.end_time is not None
        assert run.start_time <= span.start_time and span.end_time <= run.end_time
    assert all((a.end_time or 0) <= (b.start_time or 0) for a, b in itertools.pairwise(turns))
    assert turns[0].start_time == boss.start_time  # the first turn began with the attempt
    assert (f1.end_time or 0) <= (f2.start_time or 0)
    assert len(spans) == 1 + 8 + 3 + 4 + 2  # run, attempts, turns, model calls, tool calls


async def test_a_cancelled_run_ends_every_span(
    exported: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, exporter = exported
    swarm = Swarm()
    started = threading.Event()

    @swarm.role("boss")
    async def boss(ctx: SubtaskContext) -> None:
        ctx.spawn([{"id": "c", "role": "hang"}])  # the turn span opens here, never recorded
        await ctx.wait(["c"])

    @swarm.role("hang")
    async def hang(ctx: SubtaskContext) -> None:
        import asyncio

        started.set()
        await asyncio.Event().wait()

    import asyncio

    task = asyncio.create_task(
        swarm.execute(Plan(subtasks=[Subtask(id="b", role="boss")]), sinks=[SpanSink(provider)])
    )
    while not started.is_set():
        await asyncio.sleep(0.001)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):  # the run records its end, then re-raises
        await task
    names = _by_name(exporter.get_finished_spans())
    # every span was exported, so every span ended: the open turn too
    assert set(names) == {"invoke_workflow", "invoke_agent boss", "turn", "invoke_agent hang"}
    (run,) = names["invoke_workflow"]
    assert (run.attributes or {})["kimmy.run.status"] == "cancelled"
    (child,) = names["invoke_agent hang"]
    (turn,) = names["turn"]
    assert (child.attributes or {})["kimmy.subtask.status"] == "cancelled"
    assert _parent(child) == _id(turn)
    assert child.end_time is not None and run.end_time is not None
    assert turn.end_time is not None
    assert max(child.end_time, turn.end_time) <= run.end_time


async def test_otlp_export_reaches_an_in_process_collector() -> None:
    with OtlpCollector() as collector:
        sink = otlp_sink(collector.traces_url, service_name="t")
        swarm = _swarm()
        await swarm.execute(_PLAN, run_id="otlp", sinks=[sink])  # run_finished flushes
        assert sink.tracer_provider is not None
        sink.tracer_provider.shutdown()  # type: ignore[attr-defined]
    spans = collector.spans()
    assert {service for service, _, _ in spans} == {"t"}
    assert {scope.name for _, scope, _ in spans} == {"kimmy-swarm"}
    names = [span.name for _, _, span in spans]
    assert names.count("invoke_workflow") == 1 and names.count("chat tiny") == 4
    assert {"invoke_agent boss", "turn 1", "turn 2", "execute_tool search"} <= set(names)
    assert len(names) == 18


def test_export_is_configured_from_the_standard_environment() -> None:
    assert sinks_from_env({}) == []
    assert sinks_from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318",
                           "OTEL_SDK_DISABLED": "true"}) == []  # fmt: skip
    assert traces_endpoint({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318/"}) == (
        "http://c:4318/v1/traces"
    )
    both = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t:9/x"}  # fmt: skip
    assert traces_endpoint(both) == "http://t:9/x"
    (sink,) = sinks_from_env({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:9/v1/traces"})
    assert isinstance(sink, SpanSink)
    sink.tracer_provider.shutdown()  # type: ignore[union-attr]
    with pytest.raises(ConfigError, match="'grpc' is not supported"):
        sinks_from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317",
                        "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"})  # fmt: skip


def test_without_the_extra_the_error_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry", None)  # an import of it now fails
    with pytest.raises(ConfigError, match=r"pip install 'kimmy-swarm\[otel\]'"):
        SpanSink()
    with pytest.raises(ConfigError, match=r"pip install 'kimmy-swarm\[otel\]'"):
        otlp_sink("http://127.0.0.1:9/v1/traces")


def test_import_swarm_does_not_import_opentelemetry() -> None:
    code = (
        "import sys, kimmy_swarm.swarm, kimmy_swarm.swarm.telemetry; "
        "print('opentelemetry' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


class _Inner:
    """An exporter that fails while `down` is set, counting the batches it was given."""

    def __init__(self) -> None:
        self.down, self.calls, self.shut = True, 0, False

    def export(self, spans: Any) -> Any:
        from opentelemetry.sdk.trace.export import SpanExportResult

        self.calls += 1
        return SpanExportResult.FAILURE if self.down else SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        self.shut = True


def test_a_failed_export_turns_export_off_for_the_cooldown_and_is_told_once() -> None:
    from kimmy_swarm.swarm.span_export import BoundedExporter

    now, told, inner = [0.0], [], _Inner()
    exporter = BoundedExporter(inner, "http://c/v1/traces", bound_s=5, cooldown_s=30,  # type: ignore[arg-type]
                               tell=told.append, clock=lambda: now[0])  # fmt: skip
    exporter.export([1, 2, 3])  # type: ignore[list-item]
    for _ in range(50):  # batch after batch while it is down: dropped at once, not retried
        exporter.export([1, 2])  # type: ignore[list-item]
    assert inner.calls == 1 and exporter.dropped == 103
    now[0] = 31.0
    inner.down = False
    exporter.export([1])  # type: ignore[list-item]
    assert inner.calls == 2 and exporter.exported == 1
    exporter.shutdown()
    exporter.shutdown()
    assert inner.shut and told == [
        "kimmy: warning: 103 OpenTelemetry span(s) were not exported to http://c/v1/traces: "
        "the collector did not take them within 5 s (down or hanging)"
    ]
