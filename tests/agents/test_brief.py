"""A role's brief (`agents.brief`): the per-subtask answer schema and how the agent loop uses
it — the material in the task message, no tools offered, the schema as `response_format`,
the record's fields set on the answer, and the role's check applied as before."""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema
import pytest
from pydantic import BaseModel, Field

from kimmy_swarm.agents import Role
from kimmy_swarm.agents.brief import (
    SubtaskBrief,
    answer_schema,
    bound,
    choose,
    node,
    one_each,
    pin,
    string_schema,
)
from kimmy_swarm.swarm.llm import ScriptedChat
from tests.support.summing_role import SUMMER, Total, run_summer


class Item(BaseModel):
    label: str
    weight: int = 0


class Answer(BaseModel):
    key: str
    items: list[Item] = Field(default_factory=list)
    note: str = ""


def test_answer_schema_keeps_the_named_fields_inlined_and_required() -> None:
    schema = answer_schema(Answer, keep=("key", "items"))
    assert schema["required"] == ["key", "items"] and schema["additionalProperties"] is False
    assert set(schema["properties"]) == {"key", "items"}
    assert "$defs" not in json.dumps(schema) and node(schema, "items.*.label") == {"type": "string"}
    with pytest.raises(ValueError, match=re.escape("no properties ['nope']")):
        answer_schema(Answer, keep=("key", "nope"))


def test_pin_choose_bound_and_one_each_shape_what_can_be_written() -> None:
    schema = answer_schema(Answer, keep=("key", "items"))
    pin(schema, "key", "k1")
    choose(schema, "items.*.label", ["a", "b", "a"])
    bound(schema, "items", least=1, most=2)
    valid = {"key": "k1", "items": [{"label": "b", "weight": 3}]}
    jsonschema.validate(valid, schema)
    for bad in (
        {"key": "k2", "items": [{"label": "a", "weight": 1}]},  # not the pinned key
        {"key": "k1", "items": [{"label": "c", "weight": 1}]},  # not a choice
        {"key": "k1", "items": []},  # fewer than one
        {"key": "k1", "items": [{"label": "a", "weight": 1}] * 3},  # more than two
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)
    assert node(schema, "items.*.label")["enum"] == ["a", "b"]  # each choice once
    with pytest.raises(ValueError, match=re.escape("nothing to choose from for 'items.*.label'")):
        choose(schema, "items.*.label", [])

    one_each(schema, "items", [{"const": {"label": "x", "weight": 1}}])
    jsonschema.validate({"key": "k1", "items": [{"label": "x", "weight": 1}]}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"key": "k1", "items": []}, schema)


def _briefed(run: Any) -> SubtaskBrief:
    numbers = run.call("lookup", key=run.inputs["key"])
    schema = answer_schema(Total, keep=("total",))
    return SubtaskBrief(text=f"The numbers: {numbers}.", schema=schema, filled={"numbers": numbers})


BRIEFED = SUMMER.derive(name="briefed", brief=_briefed)


def test_a_role_with_a_brief_answers_from_it_in_its_first_turn() -> None:
    model = ScriptedChat(['{"total": 17}'])
    result, sink = run_summer(model, role=BRIEFED)
    res = result.results["s1"]
    assert res.output == {"numbers": [2, 3, 5, 7], "total": 17}  # `numbers` filled
    ((messages, options),) = model.calls
    assert "The numbers: [2, 3, 5, 7]." in messages[1]["content"]
    assert not options.get("tools")  # the role's tools are not offered to the model
    assert options["response_format"]["json_schema"]["schema"]["properties"] == {
        "total": {"type": "integer"}
    }
    # the brief's tool call is the sub-agent's first step, then the answer
    assert sink.agent() == [
        ("tool", ("lookup", True)),
        ("step", (1, ["lookup"], "tools")),
        ("step", (1, [], "answer")),
    ]


def test_the_roles_check_still_judges_a_briefed_answer() -> None:
    model = ScriptedChat(['{"total": 16}', '{"total": 15}'])
    result, sink = run_summer(model, role=BRIEFED)
    res = result.results["s1"]
    assert res.status.value == "failed" and res.error is not None
    assert "is not the sum of" in res.error.message
    assert [e[1][2] for e in sink.agent() if e[0] == "step"][-2:] == ["invalid", "invalid"]


def test_a_role_without_a_brief_is_unchanged() -> None:
    assert Role("plain", "p").brief is None
    model = ScriptedChat(['{"numbers": [2, 3, 5, 7], "total": 17}'])
    result, _ = run_summer(model)
    assert result.results["s1"].output["total"] == 17
    ((_, options),) = model.calls
    assert [t["function"]["name"] for t in options["tools"]] == ["lookup", "add"]


def test_a_text_bound_stays_short_enough_for_llama_cpp() -> None:
    """llama.cpp's server compiles maxLength N into N grammar rules: a 4,000-character bound
    (report.md) crashed it mid-run, so long texts are left unbounded."""
    assert string_schema(120) == {"type": "string", "minLength": 1, "maxLength": 120}
    assert string_schema() == {"type": "string", "minLength": 1}
    with pytest.raises(ValueError, match="maxLength 4000 is above 300"):
        string_schema(4000)
