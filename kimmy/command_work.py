"""Running a long command's work the one way every command does: under the progress view,
stopped cleanly by Ctrl-C or SIGTERM (`kimmy.interrupts`), the model closed afterwards."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from swarm import EventSink

T = TypeVar("T")


def run_work(work: Callable[[Sequence[EventSink]], T], model: Any, json_lines: bool) -> T:
    """`work(sinks)` with the progress view (JSON lines with `json_lines`); `model` (None
    for offline) is closed whatever happens.

    Raises:
        Interrupted: SIGINT or SIGTERM stopped it (finished work is stored).
    """
    import asyncio

    from kimmy.interrupts import stop_on_signals
    from swarm.progress import make_progress

    with stop_on_signals():  # Ctrl-C exits 130, SIGTERM 143; finished work is stored
        try:
            with make_progress(json=json_lines) as sink:
                return work([sink])
        finally:
            if model is not None:
                asyncio.run(model.aclose())


__all__ = ["run_work"]
