"""The capability probe: what a server honours, found with tiny real requests over HTTP —
against `kimmy serve --tiny` (a real server process), and against the loopback test server
honouring everything or nothing (when `connect` probes, and with what it is given:
`test_endpoint.py`); models and their wrappers say what they honour."""

from __future__ import annotations

import asyncio
import pickle
from typing import Any

import pytest

from kimmy_swarm.swarm.errors import ConfigError, ModelConnectionError
from kimmy_swarm.swarm.llm import (
    BalancedChat,
    Capabilities,
    OpenAIChat,
    ScriptedChat,
    capabilities_of,
)
from kimmy_swarm.swarm.llm.capabilities import (
    HONOURS_ALL,
    PROBE_MAX_TOKENS,
    PROBE_PREFIX,
    PROBE_TOOL,
    probe_capabilities,
)
from tests.support.openai_server import (
    OpenAIServer,
    disconnect,
    honouring,
    reply,
    status,
)
from tests.support.serve_process import tiny_server

#: A model on a server that honours nothing: response_format, tools and logprobs ignored,
#: the answer in prose (llama.cpp's server with a weak model).
PROSE = reply("Sure! Here is what you asked for: it is a fine day.")
NOTHING = Capabilities(
    structured_output=False, tools=False, parallel_tool_calls=False, logprobs=False
)


def _probe(url: str, model: str | None = "test-model") -> Capabilities:
    async def main() -> Capabilities:
        async with OpenAIChat(url, model) as client:
            if model is None:
                await client.check()
            return await probe_capabilities(client)

    return asyncio.run(main())


def test_kimmy_serve_tiny_honours_structured_output_tools_and_logprobs() -> None:
    with tiny_server() as url:
        found = _probe(url, None)
    # its constrained decoding makes the one valid answer and the forced call; it makes one
    # tool call per answer, never two at once
    assert found == Capabilities(parallel_tool_calls=False)


def test_a_server_that_honours_nothing_is_found_out() -> None:
    with OpenAIServer(default=PROSE) as srv:
        found = _probe(srv.base_url)
        bodies = [r.body for r in srv.chat_requests]
    assert found == NOTHING
    # structured output is asked about in both formats; parallel tool calls are not asked
    # about where tools are not honoured
    assert len(bodies) == 4
    assert all(b["messages"][0]["content"].startswith(PROBE_PREFIX) for b in bodies)
    assert all(b["max_tokens"] <= PROBE_MAX_TOKENS for b in bodies)
    structured, llama_structured, tools, logprobs = bodies
    assert structured["response_format"]["type"] == "json_schema"
    assert llama_structured["response_format"]["type"] == "json_object"
    assert "schema" in llama_structured["response_format"]
    assert tools["tool_choice"] == {"type": "function", "function": {"name": PROBE_TOOL}}
    assert logprobs["logprobs"] is True


def test_a_server_that_honours_everything() -> None:
    with OpenAIServer(default=honouring()) as srv:
        found = _probe(srv.base_url)
        parallel = srv.chat_requests[2].body
    assert found == HONOURS_ALL
    assert parallel["tool_choice"] == "required" and len(parallel["tools"]) == 2


def test_a_server_that_enforces_a_schema_only_in_llama_cpp_format_gets_it_so() -> None:
    # llama.cpp's servers ignore OpenAI's json_schema type and enforce
    # {"type": "json_object", "schema": ...} with a grammar
    with OpenAIServer(default=honouring(schema_formats=("json_object",))) as srv:
        found = _probe(srv.base_url)
    assert found == Capabilities(schema_format="json_object")
    assert "structured output yes (json_object)" in found.describe()
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    assert found.response_format("Answer", schema) == {"type": "json_object", "schema": schema}
    assert HONOURS_ALL.response_format("Answer", schema) == {
        "type": "json_schema",
        "json_schema": {"name": "Answer", "schema": schema},
    }
    assert NOTHING.response_format("Answer", schema) is None


def test_json_that_does_not_match_the_schema_is_not_structured_output() -> None:
    # valid JSON, but not the one value the schema allows: the server did not constrain it
    answers = [reply('{"probe": "yes"}'), reply('{"probe": "yes"}'), PROSE, PROSE]
    with OpenAIServer(answers) as srv:
        assert _probe(srv.base_url) == NOTHING


@pytest.mark.parametrize("code", [400, 422, 500, 501])
def test_a_refused_probe_request_means_not_honoured(code: int) -> None:
    with OpenAIServer(default=status(code)) as srv:
        assert _probe(srv.base_url) == NOTHING


def test_an_unreachable_server_is_an_error_not_a_verdict() -> None:
    with OpenAIServer(default=disconnect()) as srv, pytest.raises(ModelConnectionError):
        _probe(srv.base_url)


def test_bad_given_values_are_refused_naming_them() -> None:
    with pytest.raises(ConfigError, match="colour"):
        asyncio.run(probe_capabilities(ScriptedChat(), given={"colour": True}))
    with pytest.raises(ConfigError, match="'yes'"):
        asyncio.run(probe_capabilities(ScriptedChat(), given={"tools": "yes"}))  # type: ignore[dict-item]


def test_what_a_model_says_it_honours_and_its_wrappers_forward() -> None:
    from kimmy_swarm.swarm.call_meter import MeteredModel
    from kimmy_swarm.swarm.executors._host import RecordingModel

    plain = ScriptedChat()
    assert capabilities_of(plain) == HONOURS_ALL  # says nothing: honours everything
    assert capabilities_of(OpenAIChat("http://127.0.0.1:9/v1", "m")) == HONOURS_ALL
    client = OpenAIChat("http://127.0.0.1:9/v1", "m", capabilities=NOTHING)
    observer: Any = object()
    assert capabilities_of(MeteredModel(client, observer, None)) == NOTHING  # type: ignore[arg-type]
    assert capabilities_of(RecordingModel(client)) == NOTHING
    # a balanced model honours what all its members do
    assert capabilities_of(BalancedChat([plain, client])) == NOTHING
    assert capabilities_of(BalancedChat([plain, ScriptedChat()])) == HONOURS_ALL


def test_the_capabilities_travel_with_a_pickled_client() -> None:
    """A Ray host rebuilds the client from its pickle: its agent loop must adapt the same."""
    client = OpenAIChat("http://127.0.0.1:9/v1", "m", capabilities=Capabilities(tools=False))
    assert pickle.loads(pickle.dumps(client)).capabilities == Capabilities(tools=False)


def test_describe_says_where_each_value_came_from() -> None:
    line = Capabilities(tools=False).describe({"tools": "--no-tools", "logprobs": "probed"})
    assert line == (
        "structured output yes, tools no (--no-tools), parallel tool calls yes, "
        "logprobs yes (probed)"
    )
