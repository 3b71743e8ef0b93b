"""`TextTools`: the tool protocol in plain text, for servers without native tool calls (the
agent loop speaking it end to end over HTTP is in `test_policy_capabilities.py`)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kimmy_swarm.agents import ToolBox
from kimmy_swarm.agents.loop import TextToolCall, TextTools


def _tools() -> TextTools:
    box = ToolBox()

    @box.tool
    def lookup(key: str) -> list[int]:
        """The numbers stored under a key."""
        return [1, 2]

    return TextTools(box.specs())


def test_the_instructions_describe_each_tool_and_how_to_call_it() -> None:
    text = _tools().instructions()
    described = json.loads(text.split("<tools>\n")[1].split("\n</tools>")[0])
    assert described["name"] == "lookup"
    assert described["description"] == "The numbers stored under a key."
    assert described["parameters"]["properties"]["key"]["type"] == "string"
    assert described["parameters"]["required"] == ["key"]
    assert '{"tool": "<tool name>", "arguments": {<its arguments>}}' in text


@pytest.mark.parametrize(
    ("value", "call"),
    [
        ({"tool": "lookup", "arguments": {"key": "a"}}, TextToolCall("lookup", '{"key": "a"}')),
        ({"tool": "lookup"}, TextToolCall("lookup", "{}")),
        # an unknown tool is still a call: its error tells the model which tools there are
        ({"tool": "nope", "arguments": {}}, TextToolCall("nope", "{}")),
        # the {"name", "arguments"} form models are trained on, for a tool that exists
        ({"name": "lookup", "arguments": {"key": "b"}}, TextToolCall("lookup", '{"key": "b"}')),
    ],
)
def test_a_tool_call_is_read(value: Any, call: TextToolCall) -> None:
    assert _tools().parse_call(value) == call


@pytest.mark.parametrize(
    "value",
    [
        {"numbers": [1], "total": 1},  # an answer
        {"name": "Ada", "arguments": {}},  # an answer whose `name` is no tool's
        {"name": "lookup"},  # an answer with a `name` field only
        {"tool": "lookup", "arguments": "key=a"},  # arguments that are no object
        {"tool": "lookup", "arguments": {}, "total": 3},  # more than a call
        ["tool", "lookup"],
        "lookup",
    ],
)
def test_anything_else_is_the_answer(value: Any) -> None:
    assert _tools().parse_call(value) is None


def test_a_result_is_a_user_message_that_asks_for_the_answer_when_no_call_is_left() -> None:
    assert TextTools.result_message("lookup", "[1, 2]", last=False) == {
        "role": "user",
        "content": "Result of tool lookup:\n[1, 2]",
    }
    last = TextTools.result_message("lookup", "[1, 2]", last=True)["content"]
    assert last.startswith("Result of tool lookup:\n[1, 2]\n\n") and "final JSON answer" in last
