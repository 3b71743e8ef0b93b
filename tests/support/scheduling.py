"""Helpers for the scheduler tests: plans from tuples, an event recorder, fast swarms."""

from __future__ import annotations

from typing import Any

from kimmy_swarm.swarm.events import Event
from kimmy_swarm.swarm.limits import Backoff
from kimmy_swarm.swarm.runtime import Swarm
from kimmy_swarm.swarm.schema import Plan, Subtask

#: Retries in milliseconds, so retry tests stay fast.
FAST_BACKOFF = Backoff(base_s=0.001, cap_s=0.005)


class Recorder:
    """An event sink that keeps every event."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def handle(self, event: Event) -> None:
        self.events.append(event)

    def of(self, kind: str) -> list[Any]:
        return [e for e in self.events if e.type == kind]


def make_plan(*specs: tuple[str, list[str]] | tuple[str, list[str], str], **kw: Any) -> Plan:
    """A plan from `(id, depends_on[, role])` tuples; every subtask gets `kw` too."""
    return Plan(
        goal="test",
        subtasks=[
            Subtask(id=s[0], role=s[2] if len(s) > 2 else "work", depends_on=s[1], **kw)  # type: ignore[misc]
            for s in specs
        ],
    )


def make_swarm(**kw: Any) -> Swarm:
    kw.setdefault("backoff", FAST_BACKOFF)
    kw.setdefault("seed", 0)
    return Swarm(**kw)
