"""The sub-agent tests' small task: add up numbers (an answer schema and its meaning check),
and a sink that keeps a sub-agent's steps and tool calls as tuples."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from swarm.events import AgentStep, Event, ToolCalled


class Total(BaseModel):
    numbers: list[int]
    total: int


def check_total(answer: Total, run: Any) -> None:
    """The meaning check: `total` is the sum of `numbers`."""
    if sum(answer.numbers) != answer.total:
        raise ValueError(f"total {answer.total} is not the sum of {answer.numbers}")


class Sink:
    """Keeps every event; `agent()` is the sub-agent's steps and tool calls, in order."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def handle(self, event: Event) -> None:
        self.events.append(event)

    def agent(self) -> list[tuple[str, Any]]:
        out: list[tuple[str, Any]] = []
        for e in self.events:
            if isinstance(e, AgentStep):
                out.append(("step", (e.step, e.tools, e.outcome)))
            elif isinstance(e, ToolCalled):
                out.append(("tool", (e.tool, e.ok)))
        return out


__all__ = ["Sink", "Total", "check_total"]
