"""An orchestrator's completion as tool calls: what a policy's text asks the swarm to do.

Models write a call in several shapes; all of these are read (the first JSON value that is
a call, or a list of calls, wins; anything before or after it is ignored):

    {"name": "assign_tasks", "arguments": {...}}                 (our engine's format)
    <tool_call>{"name": ..., "arguments": ...}</tool_call>         (Qwen / Hermes templates)
    ```json [{"name": ..., "arguments": ...}, ...] ```             (fenced, several calls)
    {"type": "function", "function": {"name": ..., "arguments": "<JSON text>"}}   (OpenAI)

The JSON values come from `agents.loop.replies.json_values`, read strictly (no raw control
characters inside strings).
"""

from __future__ import annotations

from typing import Any

from kimmy_swarm.agents.loop.replies import json_values
from kimmy_swarm.agents.loop.tool_calls import Call, as_call


def _as_call(value: Any) -> Call | None:
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("function"), dict):
        value = value["function"]
    return as_call(value.get("name"), value.get("arguments", value.get("parameters", {})))


def _as_calls(value: Any) -> list[Call]:
    items = value if isinstance(value, list) else [value]
    calls = [c for c in map(_as_call, items) if c is not None]
    return calls if len(calls) == len(items) else []


def parse_calls(text: str) -> list[Call]:
    """The tool calls in a completion (empty when it holds none)."""
    for value in json_values(text, "{[", strict=True):
        calls = _as_calls(value)
        if calls:
            return calls
    return []


__all__ = ["parse_calls"]
