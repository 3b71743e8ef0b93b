"""An orchestrator's completion as tool calls: what a policy's text asks the swarm to do.

Models write a call in several shapes; all of these are read (the first JSON value that is
a call, or a list of calls, wins; anything before or after it is ignored):

    {"name": "assign_tasks", "arguments": {...}}                 (our engine's format)
    <tool_call>{"name": ..., "arguments": ...}</tool_call>         (Qwen / Hermes templates)
    ```json [{"name": ..., "arguments": ...}, ...] ```             (fenced, several calls)
    {"type": "function", "function": {"name": ..., "arguments": "<JSON text>"}}   (OpenAI)
"""

from __future__ import annotations

import json
from typing import Any

#: A call: (tool name, arguments).
Call = tuple[str, dict[str, Any]]


def _as_call(value: Any) -> Call | None:
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("function"), dict):
        value = value["function"]
    name, args = value.get("name"), value.get("arguments", value.get("parameters", {}))
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except json.JSONDecodeError:
            return None
    if not isinstance(name, str) or not name or not isinstance(args, dict):
        return None
    return name, args


def _as_calls(value: Any) -> list[Call]:
    items = value if isinstance(value, list) else [value]
    calls = [c for c in map(_as_call, items) if c is not None]
    return calls if len(calls) == len(items) else []


def parse_calls(text: str) -> list[Call]:
    """The tool calls in a completion (empty when it holds none)."""
    decoder = json.JSONDecoder()
    for i, ch in enumerate(text):
        if ch not in "{[":
            continue
        try:
            value, _ = decoder.raw_decode(text, i)
        except json.JSONDecodeError:
            continue
        calls = _as_calls(value)
        if calls:
            return calls
    return []


__all__ = ["Call", "parse_calls"]
