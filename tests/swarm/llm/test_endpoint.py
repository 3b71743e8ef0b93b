"""`ModelEndpoint` (stored without secrets) and `connect` (the one way a client is built):
preflight, context length, capability probe or the capabilities given, answer cap and call
timeouts, all as the client's constructor arguments, against real loopback servers."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kimmy_swarm.swarm.errors import ConfigError, ModelConnectionError
from kimmy_swarm.swarm.llm import Capabilities, LocalModel, ModelEndpoint, OpenAIChat, connect
from kimmy_swarm.swarm.llm.capabilities import PROBE_MAX_TOKENS, PROBE_PREFIX
from tests.support.openai_server import (
    OpenAIServer,
    ServerRequest,
    echo,
    honouring,
    probes_honoured,
    reply,
)

PROSE = reply("Sure! Here is what you asked for.")
NOTHING = Capabilities(
    structured_output=False, tools=False, parallel_tool_calls=False, logprobs=False
)


@pytest.fixture(autouse=True)
def _no_env_server(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("KIMMY_BASE_URL", "KIMMY_MODEL", "KIMMY_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def _http(url: str | None, model: str | None = "test-model", **fields: Any) -> ModelEndpoint:
    return ModelEndpoint(kind="http", base_url=url, model=model, **fields)


def _connected(endpoint: ModelEndpoint, **options: Any) -> Any:
    return asyncio.run(connect(endpoint, **options))


def _is_probe(request: ServerRequest) -> bool:
    return str(request.body["messages"][0].get("content") or "").startswith(PROBE_PREFIX)


def test_endpoint_never_holds_a_secret() -> None:
    endpoint = ModelEndpoint(
        kind="http", base_url="http://u:pw@host:8000/v1?token=abc", model="auto@http://u:pw@h"
    )
    assert endpoint.base_url == "http://***@host:8000/v1?token=***"
    assert endpoint.model is None  # a client's name before the server told it the model
    client = OpenAIChat("http://u:pw@host:8000/v1", "m", api_key="sk-secret")
    stored = ModelEndpoint.of(client).model_dump_json()
    assert "pw" not in stored and "sk-secret" not in stored
    assert ModelEndpoint.of(client) == ModelEndpoint(
        kind="http", base_url="http://***@host:8000/v1", model="m"
    )
    assert ModelEndpoint.of(None).kind == "offline"


def test_a_server_that_honours_nothing_is_probed_before_the_client_is_built() -> None:
    with OpenAIServer(default=PROSE) as srv:
        client = _connected(_http(srv.base_url))
        probes = [r.body for r in srv.chat_requests]
    assert isinstance(client, OpenAIChat) and client.capabilities == NOTHING
    assert len(probes) == 4 and all(b["max_tokens"] <= PROBE_MAX_TOKENS for b in probes)


def test_given_values_are_not_probed_and_without_probing_they_are_taken_as_said() -> None:
    with OpenAIServer(default=honouring()) as srv:
        probed = _connected(_http(srv.base_url), given={"structured_output": False, "tools": False})
        bodies = [r.body for r in srv.chat_requests]
        unprobed = _connected(_http(srv.base_url), probe=False, given={"tools": False})
        silent = _connected(_http(srv.base_url), probe=False)
        asked = len(srv.chat_requests)
    assert probed.capabilities == Capabilities(
        structured_output=False, tools=False, parallel_tool_calls=False
    )
    assert len(bodies) == 1 and bodies[0]["logprobs"] is True  # only logprobs was asked
    assert unprobed.capabilities == Capabilities(tools=False) and silent.capabilities is None
    assert asked == 1


def test_stored_capabilities_are_used_as_they_are_without_probing() -> None:
    with OpenAIServer(default=honouring()) as srv:
        client = _connected(_http(srv.base_url, capabilities=NOTHING), given={"tools": True})
        asked = len(srv.chat_requests)
    assert client.capabilities == NOTHING and asked == 0


def test_the_answer_cap_holds_every_call_but_not_the_probes() -> None:
    async def main(url: str) -> OpenAIChat:
        client = await connect(_http(url, max_tokens=8))
        await client.chat([{"role": "user", "content": "hi"}])
        await client.chat([{"role": "user", "content": "hi"}], max_tokens=4)
        await client.aclose()
        return client

    with OpenAIServer(default=probes_honoured(echo())) as srv:
        client = asyncio.run(main(srv.base_url))
        asked = [(_is_probe(r), r.body["max_tokens"]) for r in srv.chat_requests]
    assert client.max_tokens_cap == 8
    assert [m for probe, m in asked if probe] == [PROBE_MAX_TOKENS] * 3 + [2]  # logprobs: 2
    assert [m for probe, m in asked if not probe] == [8, 4]


def test_the_servers_context_length_wins_else_the_endpoints() -> None:
    with OpenAIServer(models=["said-8k"], card_fields={"max_model_len": 8192}) as srv:
        said = _connected(_http(srv.base_url, None, context_tokens=2048), probe=False)
    with OpenAIServer(models=["said-nothing"]) as srv:
        unsaid = _connected(_http(srv.base_url, None, context_tokens=2048), probe=False)
        plain = _connected(_http(srv.base_url, "unsaid"), probe=False)
    assert (said.model, said.context_length) == ("said-8k", 8192)  # the model looked up
    assert (unsaid.model, unsaid.context_length) == ("said-nothing", 2048)
    assert plain.context_length is None


def test_the_call_timeouts_are_adaptive_unless_a_limit_is_given() -> None:
    with OpenAIServer() as srv:
        adaptive = _connected(_http(srv.base_url), probe=False, max_connections=7)
        fixed = _connected(_http(srv.base_url), probe=False, timeout_s=7.5)
    assert adaptive.timeout_s is None and adaptive.call_timeouts is not None
    assert adaptive.max_connections == 7
    assert fixed.timeout_s == 7.5 and fixed.call_timeouts is None


def test_the_environment_fills_in_what_the_endpoint_leaves_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with OpenAIServer(models=["env-model"], api_key="sk-env") as srv:
        monkeypatch.setenv("KIMMY_BASE_URL", srv.base_url)
        monkeypatch.setenv("KIMMY_API_KEY", "sk-env")
        client = _connected(_http(None, None), probe=False)
        asyncio.run(client.chat([{"role": "user", "content": "hi"}]))
    assert (client.base_url, client.model) == (srv.base_url, "env-model")


def test_what_cannot_be_connected_says_why() -> None:
    with pytest.raises(ConfigError, match="no model server configured"):
        _connected(_http(None))
    with pytest.raises(ConfigError, match="offline endpoint has no model"):
        _connected(ModelEndpoint())
    masked = _http("http://u:pw@127.0.0.1:9/v1")
    with pytest.raises(ConfigError, match=r"http://\*\*\*@127\.0\.0\.1:9/v1 had credentials"):
        _connected(masked)
    with pytest.raises(ModelConnectionError, match="cannot reach model server"):
        _connected(_http("http://127.0.0.1:9/v1"))


def test_a_masked_url_connects_with_the_url_given_again() -> None:
    with OpenAIServer() as srv:
        real = srv.base_url.replace("http://", "http://u:pw@")
        client = _connected(_http(real), base_url=real, probe=False)
    assert client.base_url == real


async def test_a_local_endpoint_starts_its_model_capped_and_as_given() -> None:
    endpoint = ModelEndpoint(kind="local", local="tiny", max_tokens=3)
    model = await connect(endpoint, given={"tools": False}, max_connections=4)
    try:
        assert isinstance(model, LocalModel) and model.name == "kimmy-tiny"
        assert model.capabilities == Capabilities(tools=False) and model.max_tokens_cap == 3
        assert model.profile is not None and model.context_length is not None
        answer = await model.chat([{"role": "user", "content": "Hi"}], max_tokens=50)
        assert 1 <= answer.usage.completion_tokens <= 3
    finally:
        await model.aclose()
