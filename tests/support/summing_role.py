"""The sub-agent tests' small task: add up numbers (an answer schema and its meaning check,
two tools, the offline procedure, the role), a sink that keeps a sub-agent's steps and tool
calls as tuples, and a scripted model's tool-call turn."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from kimmy_swarm.agents import Attempt, Role, ToolBox, install
from kimmy_swarm.swarm import Swarm
from kimmy_swarm.swarm.events import AgentStep, Event, ToolCalled
from kimmy_swarm.swarm.llm.types import ChatResponse, FunctionCall, ToolCall
from kimmy_swarm.swarm.schema import Usage


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


def summing_tools() -> ToolBox:
    """`lookup(key)` (the numbers stored under a key; an unknown key raises) and `add`."""
    box = ToolBox()

    @box.tool
    def lookup(key: str) -> list[int]:
        """The numbers stored under a key."""
        data = {"primes": [2, 3, 5, 7], "squares": [1, 4, 9]}
        if key not in data:
            raise KeyError(f"no numbers under {key!r}")
        return data[key]

    @box.tool
    def add(numbers: list[int]) -> int:
        """The sum of some numbers."""
        return sum(numbers)

    return box


def sum_procedure(run: Attempt) -> Total:
    """The offline procedure: look the numbers up, add them (two tool steps)."""
    numbers = run.call("lookup", key=run.inputs["key"])
    return Total(numbers=numbers, total=run.call("add", numbers=numbers))


#: The role: `Total` answers, both tools, the procedure, the meaning check, 5 model turns.
SUMMER = Role("summer", "You add numbers.", Total, ("lookup", "add"), sum_procedure, check_total, 5)


def run_summer(
    model: Any, key: str = "primes", *, role: Role = SUMMER, **swarm_kw: Any
) -> tuple[Any, Sink]:
    """One subtask `s1` of `role` (default `summer`) over `key`, run with `model` (None:
    offline)."""
    sink = Sink()
    swarm = Swarm(model=model, sinks=[sink], max_retries=0, **swarm_kw)
    install(swarm, [role], summing_tools())
    plan = {"subtasks": [{"id": "s1", "role": role.name, "inputs": {"key": key}}]}
    return swarm.run_sync(plan), sink


def tool_turn(name: str, args: dict[str, Any], call_id: str = "c1") -> ChatResponse:
    """A model's turn that calls one tool."""
    fn = FunctionCall(name=name, arguments=json.dumps(args))
    return ChatResponse(
        tool_calls=[ToolCall(id=call_id, function=fn)],
        finish_reason="tool_calls",
        usage=Usage(prompt_tokens=10, completion_tokens=5, total_tokens=15, model_calls=1),
    )


__all__ = [
    "SUMMER",
    "Sink",
    "Total",
    "check_total",
    "run_summer",
    "sum_procedure",
    "summing_tools",
    "tool_turn",
]
