"""The JSON in a model's text: `parse_answer` (a final answer, wherever a weak model put it)
and the scanner every reader shares (`json_values`, `first_json_value`)."""

from __future__ import annotations

import json

import pytest

from kimmy_swarm.agents.loop import first_json_value, json_values, parse_answer

ANSWER = {"numbers": [2, 3], "total": 5}


@pytest.mark.parametrize(
    "reply",
    [
        json.dumps(ANSWER),
        f"```json\n{json.dumps(ANSWER)}\n```",
        f"Sure! Here is the answer: {json.dumps(ANSWER)} I hope it helps.",
        f"The answer:\n```json\n{json.dumps(ANSWER)}\n```\nAnything else?",
        # two objects: the first is the answer (first `{` to last `}` is not JSON)
        f'{json.dumps(ANSWER)}\nor perhaps {{"numbers": [], "total": 0}}',
        # stray braces after it, and before it ones that open no JSON object
        f"Using {{set}} notation: {json.dumps(ANSWER)} }}}}",
    ],
    ids=["bare", "fenced", "prose", "fenced-in-prose", "two-objects", "stray-braces"],
)
def test_the_first_json_object_is_the_answer(reply: str) -> None:
    assert parse_answer(reply) == ANSWER


def test_nested_objects_come_whole() -> None:
    nested = {"outer": {"inner": [1, {"x": 2}]}, "n": 1}
    assert parse_answer(f"Answer: {json.dumps(nested)} done.") == nested


def test_a_whole_json_value_that_is_no_object_is_kept() -> None:
    assert parse_answer('["a", "b"]') == ["a", "b"]
    assert parse_answer('```json\n"just text"\n```') == "just text"


@pytest.mark.parametrize("reply", ["", "I think the total is five.", "{not json} nor {this"])
def test_no_json_object_is_a_decode_error(reply: str) -> None:
    with pytest.raises(json.JSONDecodeError, match="no JSON object"):
        parse_answer(reply)
    assert first_json_value(reply, "{") is None


def test_a_raw_line_break_inside_a_string_is_kept() -> None:
    # llama.cpp's JSON grammar lets a constrained model write one; strict JSON refuses it
    reply = '{"topic": "attention",\n"notes": ["first line\nsecond line"]}'
    assert parse_answer(reply) == {"topic": "attention", "notes": ["first line\nsecond line"]}
    assert parse_answer("Here:\n" + reply) == parse_answer(reply)


def test_values_come_from_each_start_in_turn_nested_ones_after_their_container() -> None:
    text = 'call [1, {"a": 2}] then {"b": [3]} and {broken'
    assert list(json_values(text)) == [[1, {"a": 2}], {"a": 2}, {"b": [3]}, [3]]
    assert list(json_values(text, "{")) == [{"a": 2}, {"b": [3]}]
    assert first_json_value(text) == [1, {"a": 2}]
    assert first_json_value(text, "{") == {"a": 2}
    assert first_json_value("no JSON here") is None


def test_strict_reading_refuses_raw_control_characters_in_strings() -> None:
    text = '{"note": "two\nlines"} {"note": "one line"}'  # a raw line break in the first
    assert first_json_value(text) == {"note": "two\nlines"}
    assert first_json_value(text, strict=True) == {"note": "one line"}
