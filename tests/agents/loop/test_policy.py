"""The model policy (`run_model_policy`): tool calls, the repair turn, the step limit and
the turn options, through a real swarm with a scripted model (the same loop against servers
that honour less: `test_policy_capabilities.py`)."""

from __future__ import annotations

import json

from kimmy_swarm.agents import AgentStepLimitError, Role, install
from kimmy_swarm.swarm import Swarm
from kimmy_swarm.swarm.llm import ScriptedChat
from kimmy_swarm.swarm.schema import SubtaskStatus
from tests.support.summing_role import SUMMER, run_summer, summing_tools, tool_turn


def test_model_policy_tool_calls_then_answer_same_events_as_offline() -> None:
    model = ScriptedChat(
        [
            tool_turn("lookup", {"key": "primes"}),
            tool_turn("add", {"numbers": [2, 3, 5, 7]}),
            json.dumps({"numbers": [2, 3, 5, 7], "total": 17}),
        ]
    )
    result, sink = run_summer(model)
    assert result.results["s1"].output == {"numbers": [2, 3, 5, 7], "total": 17}
    assert sink.agent() == [
        ("tool", ("lookup", True)),
        ("step", (1, ["lookup"], "tools")),
        ("tool", ("add", True)),
        ("step", (2, ["add"], "tools")),
        ("step", (3, [], "answer")),
    ]
    # the tool's result went back to the model as a tool message for its call id
    messages = model.calls[1][0]
    assert messages[-1] == {"role": "tool", "tool_call_id": "c1", "content": "[2, 3, 5, 7]"}
    assert model.calls[0][1]["tools"][0]["function"]["name"] == "lookup"
    assert result.results["s1"].usage.model_calls == 3


def test_model_policy_bad_tool_arguments_go_back_to_the_model() -> None:
    model = ScriptedChat(
        [
            tool_turn("add", {"numbers": "many"}),
            '```json\n{"numbers": [1], "total": 1}\n```',
        ]
    )
    result, sink = run_summer(model)
    assert result.results["s1"].status is SubtaskStatus.DONE
    tool_message = model.calls[1][0][-1]["content"]
    assert tool_message.startswith("error: ToolError") and "numbers" in tool_message
    assert sink.agent()[0] == ("tool", ("add", False))


def test_model_policy_repairs_once_then_answers() -> None:
    model = ScriptedChat(["not json at all", json.dumps({"numbers": [1, 2], "total": 3})])
    result, sink = run_summer(model)
    assert result.results["s1"].output == {"numbers": [1, 2], "total": 3}
    repair = model.calls[1][0][-1]
    assert repair["role"] == "user" and "invalid" in repair["content"]
    assert [s for k, s in sink.agent() if k == "step"] == [(1, [], "invalid"), (2, [], "answer")]


def test_the_repair_turn_is_schema_constrained_without_tools() -> None:
    """A weak model that answers in prose while tools are offered gets a repair turn that
    can only be a valid answer (constrained decoding), not another free-form turn."""
    model = ScriptedChat(["I think the total is three.", json.dumps({"numbers": [1], "total": 1})])
    result, _ = run_summer(model)
    assert result.results["s1"].output == {"numbers": [1], "total": 1}
    first, repair = model.calls[0][1], model.calls[1][1]
    assert first["tools"] is not None and first["response_format"] is None
    assert repair["tools"] is None and repair["response_format"]["type"] == "json_schema"


def test_model_policy_meaning_check_triggers_repair_then_typed_error() -> None:
    wrong = json.dumps({"numbers": [1, 2], "total": 4})
    model = ScriptedChat([wrong, wrong])
    result, _ = run_summer(model)
    res = result.results["s1"]
    assert res.status is SubtaskStatus.FAILED
    assert res.error.type == "ModelBehaviourError"
    assert "total 4 is not the sum" in res.error.message
    assert "total 4 is not the sum" in model.calls[1][0][-1]["content"]


def test_model_policy_step_limit() -> None:
    model = ScriptedChat.always(tool_turn("lookup", {"key": "primes"}))
    result, _ = run_summer(model)
    res = result.results["s1"]
    assert res.status is SubtaskStatus.FAILED
    assert res.error.type == AgentStepLimitError.__name__
    # the last turn offers no tools and asks for the JSON schema instead
    last_options = model.calls[-1][1]
    assert last_options["tools"] is None and last_options["response_format"] is not None
    assert len(model.calls) == SUMMER.max_steps


def test_every_model_call_sets_the_roles_max_tokens() -> None:
    model = ScriptedChat(["not json at all", json.dumps({"numbers": [1, 2], "total": 3})])
    swarm = Swarm(model=model, max_retries=0)
    install(swarm, [SUMMER.derive(max_tokens=300)], summing_tools())
    swarm.run_sync({"subtasks": [{"id": "s1", "role": "summer", "inputs": {"key": "primes"}}]})
    assert [options["max_tokens"] for _, options in model.calls] == [300, 300]  # repair too
    assert Role("plain", "You answer.").max_tokens == 1024
