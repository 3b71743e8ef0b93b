"""The orchestrator's tools: a `ToolBox` bound to one attempt's `Actions`, whose specs are
the argument models' schemas and whose results are the text the model reads (a bad call
as `error: …`)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from kimmy_swarm.agents.orchestrator.actions import Actions
from kimmy_swarm.agents.orchestrator.state import OrchestratorState
from kimmy_swarm.agents.orchestrator.tools import (
    CORPUS_TOOLS,
    TOOLS,
    AssignTask,
    orchestrator_tools,
)
from kimmy_swarm.swarm import ApprovalPolicy
from kimmy_swarm.swarm.llm.types import FunctionCall, ToolCall


class Ctx(SimpleNamespace):
    """The part of a `SubtaskContext` the tools use: spawn, and a run with nothing done."""

    def __init__(self) -> None:
        super().__init__(
            inputs={"goal": "g"}, instructions="g", spawned=[], approval_policy=ApprovalPolicy()
        )

    def spawn(self, subtasks: list[dict[str, Any]]) -> None:
        self.spawned += subtasks

    async def wait(self, ids: list[str], **_: Any) -> dict[str, Any]:
        return {}


def _actions() -> Actions:
    ctx: Any = Ctx()
    return Actions(ctx, OrchestratorState(), roles=("researcher",), tools=("search",))


def _run(actions: Actions, name: str, arguments: str) -> Any:
    call = ToolCall(id="c1", function=FunctionCall(name=name, arguments=arguments))
    return asyncio.run(actions.run(call))


def test_the_specs_are_the_argument_models_in_order() -> None:
    specs = _actions().toolbox.specs()
    # Without a corpus, the tools over it are not offered.
    assert [s["function"]["name"] for s in specs] == [t for t in TOOLS if t not in CORPUS_TOOLS]
    assign = specs[1]["function"]
    assert assign["description"] == " ".join((AssignTask.__doc__ or "").split())
    assert "title" not in assign["parameters"] and "description" not in assign["parameters"]
    assert assign["parameters"]["additionalProperties"] is False
    assert assign["parameters"]["required"] == ["agent", "task"]


def test_a_call_runs_its_handler_with_the_validated_arguments() -> None:
    got: list[dict[str, Any]] = []

    async def handler(**arguments: Any) -> str:
        got.append(arguments)
        return "ok"

    box = orchestrator_tools(dict.fromkeys(TOOLS, handler))
    assert asyncio.run(box["read_result"].fn(id="t1", offset=0, limit=10)) == "ok"
    actions = _actions()
    out = _run(actions, "assign_task", '{"agent": "researcher", "task": "Find it.", "id": "a"}')
    assert out.text == '{"task_id": "a"}' and out.spawned == ["a"]
    assert actions.ctx.spawned[0]["instructions"] == "Find it."


def test_bad_calls_come_back_as_error_text() -> None:
    actions = _actions()
    names = "create_subagent, assign_task, assign_tasks, wait, read_result, finish"
    assert _run(actions, "nope", "{}").text == f"error: unknown tool 'nope'; tools: {names}"
    assert _run(actions, "wait", "{").text.startswith("error: the arguments are not JSON: ")
    assert _run(actions, "wait", "[1]").text == "error: the arguments must be a JSON object"
    extra = _run(actions, "finish", '{"answer": "a", "why": 1}').text
    assert extra == "error: bad arguments: why: Extra inputs are not permitted"
    refused = _run(actions, "create_subagent", '{"name": "researcher", "system_prompt": "p"}')
    assert refused.text.startswith("error: 'researcher' is a built-in role")
    assert _run(actions, "finish", '{"answer": "done"}').text == '{"finished": true}'
    assert actions.state.answer == "done"
