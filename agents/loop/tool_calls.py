"""Tool calls as plain data: a `Call` is `(tool name, arguments)`.

Planners that decide without a model (the orchestrator's offline rules, a PARL rollout's
decision) write their turns as `Call`s; `calls_response` makes such a turn the
`ChatResponse` a model would have answered, so the orchestrator carries it out and records
it like any other. `as_call` reads one the other way, from a name and arguments a model
wrote (a JSON object, or its text).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from kimmy_swarm.swarm.llm.types import ChatResponse, FunctionCall, ToolCall

#: A tool call: (tool name, arguments).
Call = tuple[str, dict[str, Any]]


def tool_call(call: Call, call_id: str) -> ToolCall:
    """`call` as the `ToolCall` a model would have made, with id `call_id`."""
    name, arguments = call
    return ToolCall(id=call_id, function=FunctionCall(name=name, arguments=json.dumps(arguments)))


def as_call(name: Any, arguments: Any) -> Call | None:
    """A `Call` from a tool name and its arguments (a JSON object, or its text); None when
    the name is empty or no string, or the arguments are no JSON object."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            return None
    if not isinstance(name, str) or not name or not isinstance(arguments, dict):
        return None
    return name, arguments


def calls_response(calls: Sequence[Call], step: int) -> ChatResponse:
    """A turn of `calls` as a model's response (call ids `call_<step>_<i>`)."""
    return ChatResponse(
        tool_calls=[tool_call(call, f"call_{step}_{i}") for i, call in enumerate(calls)],
        finish_reason="tool_calls",
    )


__all__ = ["Call", "as_call", "calls_response", "tool_call"]
