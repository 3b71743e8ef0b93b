"""`parse_answer`: the JSON of a model's reply, wherever a weak model put it."""

from __future__ import annotations

import json

import pytest

from agents._model_policy import parse_answer
from agents._replies import first_json_object

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
    assert first_json_object(reply) is None


def test_a_raw_line_break_inside_a_string_is_kept() -> None:
    # llama.cpp's JSON grammar lets a constrained model write one; strict JSON refuses it
    reply = '{"topic": "attention",\n"notes": ["first line\nsecond line"]}'
    assert parse_answer(reply) == {"topic": "attention", "notes": ["first line\nsecond line"]}
    assert parse_answer("Here:\n" + reply) == parse_answer(reply)
