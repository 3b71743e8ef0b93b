"""`Call`s, the `ToolCall`s they stand for, and a turn of them as a model's response."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kimmy_swarm.agents.loop import as_call, calls_response, tool_call


def test_a_turn_of_calls_is_the_response_a_model_would_have_made() -> None:
    calls = [("assign_task", {"agent": "writer", "task": "t"}), ("wait", {"ids": "all"})]
    response = calls_response(calls, step=3)
    assert response.finish_reason == "tool_calls" and response.content is None
    assert [c.id for c in response.tool_calls] == ["call_3_0", "call_3_1"]
    assert [c.function.name for c in response.tool_calls] == ["assign_task", "wait"]
    assert response.tool_calls[1].function.arguments == '{"ids": "all"}'
    read = [as_call(c.function.name, c.function.arguments) for c in response.tool_calls]
    assert read == calls
    assert calls_response([], step=1).tool_calls == []


def test_tool_call_keeps_the_id_and_writes_the_arguments_as_json() -> None:
    call = tool_call(("finish", {"answer": "né"}), "c7")
    assert call.id == "c7" and call.type == "function"
    assert json.loads(call.function.arguments) == {"answer": "né"}


@pytest.mark.parametrize(
    ("name", "arguments", "call"),
    [
        ("wait", {"ids": "all"}, ("wait", {"ids": "all"})),
        ("wait", '{"ids": "all"}', ("wait", {"ids": "all"})),
        ("wait", "{}", ("wait", {})),
        ("wait", "{not json", None),
        ("wait", "[1]", None),
        ("wait", ["ids"], None),
        ("", {}, None),
        (None, {}, None),
    ],
)
def test_as_call_takes_a_name_and_json_object_arguments(
    name: Any, arguments: Any, call: Any
) -> None:
    assert as_call(name, arguments) == call
