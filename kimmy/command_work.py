"""Running a long command's work the one way every command does: under the progress view,
with spans exported where OpenTelemetry is configured (`telemetry_sinks`), stopped cleanly by
Ctrl-C or SIGTERM (`kimmy.interrupts`), the model closed afterwards."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from kimmy_swarm.swarm import EventSink

T = TypeVar("T")


def telemetry_sinks(workflow: str) -> list[EventSink]:
    """An OTLP span exporter when the standard `OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT`
    variable is set (`swarm.telemetry`), else none; its run spans are named after the
    command, `workflow` (`kimmy review`, `kimmy run`, …).

    Raises:
        ConfigError: export is asked for but the `otel` extra is missing, or the protocol
            variable names one other than `http/protobuf` (one line, exit 2).
    """
    from kimmy_swarm.swarm.telemetry import sinks_from_env

    return list(sinks_from_env(workflow_name=workflow))


def run_work(
    work: Callable[[Sequence[EventSink]], T],
    model: Any,
    json_lines: bool,
    *,
    workflow: str,
    stored: bool = True,
) -> T:
    """`work(sinks)` with the progress view (JSON lines with `json_lines`) and the spans of
    `telemetry_sinks(workflow)`; `model` (None for offline) is closed whatever happens.
    `stored`: whether the work stores its run (what the message after Ctrl-C says).

    Raises:
        Interrupted: SIGINT or SIGTERM stopped it (finished work is stored).
    """
    import asyncio

    from kimmy_swarm.cli.interrupts import NOT_STORED_HINT, RESUME_HINT, stop_on_signals
    from kimmy_swarm.swarm.progress import make_progress

    # Ctrl-C exits 130, SIGTERM 143; finished work is stored
    with stop_on_signals(RESUME_HINT if stored else NOT_STORED_HINT):
        try:
            telemetry = telemetry_sinks(workflow)
            # `kimmy --quiet`: stdout goes nowhere, and the progress view with it
            quiet = {"stream": sys.stdout} if QUIET.on else {}
            with make_progress(json=json_lines, **quiet) as sink:
                return work([sink, *telemetry])
        finally:
            if model is not None:
                asyncio.run(model.aclose())


class _Quiet:
    """Whether `kimmy --quiet` asked for silence (set for one command by `kimmy_swarm.cli.app`)."""

    on = False


QUIET = _Quiet()

__all__ = ["QUIET", "run_work", "telemetry_sinks"]
