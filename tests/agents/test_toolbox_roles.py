"""Tools (typed arguments, OpenAI specs) and the role registry."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel, Field

from kimmy_swarm.agents import (
    BUILTIN_ROLE_NAMES,
    Answer,
    Role,
    RoleRegistry,
    ToolBox,
    ToolError,
    builtin_roles,
)
from kimmy_swarm.agents.toolbox import Tool, ToolArgs, make_tool
from kimmy_swarm.swarm.errors import ConfigError
from kimmy_swarm.swarm.llm.types import function_tool


def scale(values: list[float], factor: float = 2.0) -> list[float]:
    """Multiply every value by a factor.

    Longer explanation that the model does not need.
    """
    return [v * factor for v in values]


def test_make_tool_spec_from_signature_and_docstring() -> None:
    tool = make_tool(scale)
    spec = tool.spec()
    assert spec["type"] == "function"
    fn = spec["function"]
    assert fn["name"] == "scale"
    assert fn["description"] == "Multiply every value by a factor."
    assert fn["parameters"]["required"] == ["values"]
    assert fn["parameters"]["properties"]["factor"]["default"] == 2.0
    assert fn["parameters"]["properties"]["values"]["type"] == "array"


def test_a_tool_spec_says_its_description_once() -> None:
    class Move(ToolArgs):
        """Move a piece (the argument model's docstring: the tool's description)."""

        to: str = Field(description="The square.")

    tool = Tool("move", "Move a piece.", Move, lambda to: to)
    spec = tool.spec()
    parameters = Move.model_json_schema()
    del parameters["title"], parameters["description"]
    del parameters["properties"]["to"]["title"]  # pydantic's "To": only longer to read
    assert spec == function_tool("move", "Move a piece.", parameters)
    assert spec["function"]["parameters"]["additionalProperties"] is False  # ToolArgs
    assert tool(to="e4") == "e4"


def test_tool_call_validates_json_and_mappings() -> None:
    tool = make_tool(scale)
    assert tool('{"values": [1, 2]}') == [2.0, 4.0]
    assert tool({"values": [1], "factor": 3}) == [3.0]
    assert tool(values=[2], factor=0.5) == [1.0]
    with pytest.raises(ToolError, match="not JSON"):
        tool("{values")
    with pytest.raises(ToolError, match=r"values: .*list"):
        tool({"values": "x"})
    with pytest.raises(ToolError, match="color: Extra inputs"):
        tool({"values": [1], "color": "red"})
    with pytest.raises(ToolError, match="JSON object"):
        tool("[1, 2]")


def test_make_tool_needs_type_hints() -> None:
    def untyped(x):  # type: ignore[no-untyped-def]
        return x

    with pytest.raises(ConfigError, match="type hint"):
        make_tool(untyped)


def test_toolbox_lookup_subset_and_duplicates() -> None:
    box = ToolBox([make_tool(scale)])
    assert list(box) == ["scale"] and len(box) == 1
    with pytest.raises(ToolError, match="no tool named 'sclae'; tools here: scale"):
        box.get_tool("sclae")
    with pytest.raises(ConfigError, match="already"):
        box.add(make_tool(scale))
    assert box.subset([]).specs() == []
    with pytest.raises(ToolError):
        box.subset(["nope"])


def test_builtin_roles() -> None:
    roles = builtin_roles()
    assert (
        set(roles)
        == set(BUILTIN_ROLE_NAMES)
        == {
            "planner",
            "researcher",
            "fact_checker",
            "writer",
            "data_analyst",
            "frontend_engineer",
            "physics_researcher",
        }
    )
    for role in roles.values():
        assert role.output is Answer and role.system_prompt
    assert builtin_roles() is not roles  # a fresh registry each time


def test_registry_register_decorator_and_errors() -> None:
    class Out(BaseModel):
        n: int

    roles = RoleRegistry()

    @roles.role("counter", system_prompt="You count.", output=Out)
    def count(run):  # type: ignore[no-untyped-def]
        return Out(n=len(run.inputs))

    assert roles.get_role("counter").procedure is count
    with pytest.raises(ConfigError, match="already registered"):
        roles.register(Role("counter", "again"))
    roles.register(Role("counter", "again"), replace=True)
    with pytest.raises(ConfigError, match="unknown role 'countr'; known roles: counter"):
        roles.get_role("countr")
    with pytest.raises(ConfigError, match="bad role name"):
        Role("9lives", "x")
    with pytest.raises(ConfigError, match="max_steps"):
        Role("ok", "x", max_steps=0)
    with pytest.raises(ConfigError, match="pydantic"):
        Role("ok", "x", output=dict)  # type: ignore[arg-type]
    derived = roles.get_role("counter").derive(name="tally", max_steps=2)
    assert (derived.name, derived.max_steps, derived.system_prompt) == ("tally", 2, "again")


def test_a_tool_spec_is_self_contained_and_compact() -> None:
    """A nested argument model gave `$ref`s to `#/$defs`, which servers that compile a
    tool's parameters into a larger grammar cannot resolve (HTTP 400 from xgrammar)."""
    class Inner(BaseModel):
        title: str = Field(description="A property named title stays.")
        n: int | None = None

    class Outer(ToolArgs):
        """Outer."""

        inner: Inner
        maybe: Inner | None = None

    params = Tool("outer", "Outer.", Outer, lambda **k: k).spec()["function"]["parameters"]
    assert "$defs" not in json.dumps(params) and "$ref" not in json.dumps(params)
    inner = params["properties"]["inner"]
    assert inner["properties"]["title"] == {"description": "A property named title stays.",
                                            "type": "string"}  # fmt: skip
    assert inner["properties"]["n"] == {"type": "integer"}  # the null branch and default go
    assert params["properties"]["maybe"]["properties"] == inner["properties"]
    assert "title" not in inner and "title" not in params["properties"]["maybe"]
