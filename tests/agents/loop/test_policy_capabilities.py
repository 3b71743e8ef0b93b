"""The agent loop adapts to what the model's server honours, over real HTTP on loopback: with
no native tools it speaks the text tool protocol (no `tools`, no `tool` messages, no
`tool_calls` on the wire); with no enforced `response_format` it sends none and reads the
first JSON object of the reply. Same steps, tool calls and repair turn as the native loop."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from kimmy_swarm.agents import AgentStepLimitError, Role, ToolBox, install
from kimmy_swarm.swarm import Swarm
from kimmy_swarm.swarm.llm import Capabilities, ModelEndpoint, OpenAIChat, connect
from kimmy_swarm.swarm.schema import SubtaskStatus
from tests.support.openai_server import OpenAIServer, ServerRequest, reply
from tests.support.summing_role import Sink, Total, check_total

#: The model behind a server that honours nothing answers in prose unless scripted.
PROSE = reply("Let me think about that.")
#: A text tool call with prose before it.
LOOKUP = 'I will look the numbers up.\n{"tool": "lookup", "arguments": {"key": "primes"}}'


class Tools:
    """The role's tools, remembering each call they really got."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.box = ToolBox()

        @self.box.tool
        def lookup(key: str) -> list[int]:
            """The numbers stored under a key."""
            self.calls.append(("lookup", key))
            return {"primes": [2, 3, 5, 7]}[key]

        @self.box.tool
        def add(numbers: list[int]) -> int:
            """The sum of some numbers."""
            self.calls.append(("add", numbers))
            return sum(numbers)


ROLE = Role("summer", "You add numbers.", Total, ("lookup", "add"), None, check_total, 5)


def _run(model: OpenAIChat, tools: Tools, role: Role = ROLE) -> tuple[Any, Sink]:
    sink = Sink()
    swarm = Swarm(model=model, sinks=[sink], max_retries=0)
    install(swarm, [role], tools.box, policy="model")
    plan = {"subtasks": [{"id": "s1", "role": role.name, "inputs": {"key": "primes"}}]}
    return swarm.run_sync(plan).results["s1"], sink


def _wire(requests: list[ServerRequest]) -> list[dict[str, Any]]:
    return [r.body for r in requests]


def _no_native_tools_on_the_wire(bodies: list[dict[str, Any]]) -> None:
    for body in bodies:
        assert "tools" not in body and "tool_choice" not in body
        for message in body["messages"]:
            assert message["role"] in ("system", "user", "assistant")
            assert "tool_calls" not in message and "tool_call_id" not in message


def test_a_server_without_tools_gets_the_text_tool_protocol_end_to_end() -> None:
    tools = Tools()
    with OpenAIServer(default=PROSE) as srv:
        client = asyncio.run(connect(ModelEndpoint(kind="http", base_url=srv.base_url)))
        probes = len(srv.chat_requests)
        srv.add(
            reply(LOOKUP),
            reply('```json\n{"tool": "add", "arguments": {"numbers": [2, 3, 5, 7]}}\n```'),
            reply('The total is {"numbers": [2, 3, 5, 7], "total": 17}. Anything else? }'),
        )
        result, sink = _run(client, tools)
        bodies = _wire(srv.chat_requests[probes:])
    assert client.capabilities.tools is False and client.capabilities.structured_output is False
    assert result.status is SubtaskStatus.DONE, result.error
    assert result.output == {"numbers": [2, 3, 5, 7], "total": 17}
    # the tools really ran, with the arguments written in text
    assert tools.calls == [("lookup", "primes"), ("add", [2, 3, 5, 7])]
    assert len(bodies) == 3
    _no_native_tools_on_the_wire(bodies)
    assert all("response_format" not in b for b in bodies)  # not enforced: not sent
    system = bodies[0]["messages"][0]["content"]
    assert "# Tools" in system and '"name":"lookup"' in system and '"name":"add"' in system
    # each result reaches the next request as a plain user message after the model's turn
    assert bodies[1]["messages"][-2] == {"role": "assistant", "content": LOOKUP}
    assert bodies[1]["messages"][-1] == {
        "role": "user",
        "content": "Result of tool lookup:\n[2, 3, 5, 7]",
    }
    assert bodies[2]["messages"][-1] == {"role": "user", "content": "Result of tool add:\n17"}
    # the same record as the native loop's
    assert sink.agent() == [
        ("tool", ("lookup", True)),
        ("step", (1, ["lookup"], "tools")),
        ("tool", ("add", True)),
        ("step", (2, ["add"], "tools")),
        ("step", (3, [], "answer")),
    ]
    assert result.usage.model_calls == 3


def test_text_tool_errors_go_back_to_the_model_and_a_call_on_the_last_turn_is_invalid() -> None:
    tools = Tools()
    role = ROLE.derive(name="brief", max_steps=2)
    with OpenAIServer(
        [
            reply('{"tool": "lookup", "arguments": {"key": "squares"}}'),
            reply('{"tool": "add", "arguments": {"numbers": [1]}}'),  # no tools are left
        ],
        default=PROSE,
    ) as srv:
        honoured = Capabilities(tools=False, structured_output=False)
        client = OpenAIChat(srv.base_url, "test-model", capabilities=honoured)
        result, sink = _run(client, tools, role)
        bodies = _wire(srv.chat_requests)
    assert result.status is SubtaskStatus.FAILED
    assert result.error.type == AgentStepLimitError.__name__
    result_message = bodies[1]["messages"][-1]["content"]
    assert result_message.startswith("Result of tool lookup:\nerror: KeyError")
    assert "No more tool calls are possible" in result_message  # the next turn is the last
    assert tools.calls == [("lookup", "squares")]  # the call on the last turn did not run
    assert sink.agent() == [
        ("tool", ("lookup", False)),
        ("step", (1, ["lookup"], "tools")),
        ("step", (2, [], "invalid")),
    ]


def test_without_structured_output_no_response_format_is_sent_and_the_repair_reads_prose() -> None:
    tools = Tools()
    plain = ROLE.derive(name="plain", tools=())  # no tools: every turn asks for the answer
    with OpenAIServer(
        [
            reply("I think the total is seventeen."),
            reply('Sorry! Here it is:\n```json\n{"numbers": [2, 3, 5, 7], "total": 17}\n```'),
        ]
    ) as srv:
        honoured = Capabilities(structured_output=False)
        client = OpenAIChat(srv.base_url, "test-model", capabilities=honoured)
        result, sink = _run(client, tools, plain)
        bodies = _wire(srv.chat_requests)
    assert result.output == {"numbers": [2, 3, 5, 7], "total": 17}
    assert len(bodies) == 2 and all("response_format" not in b for b in bodies)
    repair = bodies[1]["messages"][-1]
    assert repair["role"] == "user" and "no JSON object" in repair["content"]
    assert [s for kind, s in sink.agent() if kind == "step"] == [
        (1, [], "invalid"),
        (2, [], "answer"),
    ]


def test_native_tools_without_structured_output() -> None:
    """Tools native, answers not enforced: tool turns offer `tools`; the last turn neither
    tools nor a `response_format`."""
    tools = Tools()
    role = ROLE.derive(name="pair", max_steps=2)
    with OpenAIServer(
        [
            reply(None, tool_calls=[("lookup", {"key": "primes"})]),
            reply('Done: {"numbers": [2, 3, 5, 7], "total": 17}'),
        ]
    ) as srv:
        honoured = Capabilities(structured_output=False)
        client = OpenAIChat(srv.base_url, "test-model", capabilities=honoured)
        result, _ = _run(client, tools, role)
        first, last = _wire(srv.chat_requests)
    assert result.output == {"numbers": [2, 3, 5, 7], "total": 17}
    assert [t["function"]["name"] for t in first["tools"]] == ["lookup", "add"]
    assert "response_format" not in first
    assert "tools" not in last and "response_format" not in last
    assert last["messages"][-1]["role"] == "tool"  # native results stay native


@pytest.mark.parametrize("honoured", [None, Capabilities(tools=False)])
def test_a_server_that_enforces_the_schema_still_gets_it_on_answer_turns(
    honoured: Capabilities | None,
) -> None:
    """Unprobed (None: everything honoured) and text tools with structured output: the
    repair turn asks for the schema, with no tools."""
    tools = Tools()
    with OpenAIServer(
        [reply("I think it is seventeen."), reply('{"numbers": [2, 3, 5, 7], "total": 17}')]
    ) as srv:
        client = OpenAIChat(srv.base_url, "test-model", capabilities=honoured)
        result, _ = _run(client, tools)
        first, repair = _wire(srv.chat_requests)
    assert result.status is SubtaskStatus.DONE
    assert ("tools" in first) is (honoured is None) and "response_format" not in first
    assert repair["response_format"]["json_schema"]["name"] == "Total"
    assert "tools" not in repair
    if honoured is not None:
        _no_native_tools_on_the_wire([first, repair])
        assert json.loads(first["messages"][0]["content"].split("<tools>\n")[1].split("\n")[0])


def test_a_server_that_enforces_the_schema_its_own_way_gets_it_that_way() -> None:
    """llama.cpp's server: the answer's schema goes as `{"type": "json_object", "schema":
    …}` (which it turns into a grammar), never as OpenAI's `json_schema` it ignores."""
    tools = Tools()
    plain = ROLE.derive(name="plain", tools=())
    with OpenAIServer([reply('{"numbers": [2, 3, 5, 7], "total": 17}')]) as srv:
        honoured = Capabilities(schema_format="json_object")
        client = OpenAIChat(srv.base_url, "test-model", capabilities=honoured)
        result, _ = _run(client, tools, plain)
        (body,) = _wire(srv.chat_requests)
    assert result.output == {"numbers": [2, 3, 5, 7], "total": 17}
    assert body["response_format"] == {"type": "json_object", "schema": Total.model_json_schema()}
