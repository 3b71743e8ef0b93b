"""`kimmy.options`: the model flags become a `ModelEndpoint` (offline unless a flag or
`KIMMY_BASE_URL` asks for a model), and the client is the one `swarm.llm.connect` builds
from it, so a library caller gets what the command line gets."""

from __future__ import annotations

import asyncio

import pytest
import typer

from kimmy_swarm.cli.options import model_client, model_endpoint
from kimmy_swarm.swarm.llm import Capabilities, ModelEndpoint, OpenAIChat, connect
from tests.support.openai_server import OpenAIServer, echo, probes_honoured


@pytest.fixture(autouse=True)
def _no_env_server(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("KIMMY_BASE_URL", "KIMMY_MODEL", "KIMMY_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def test_the_flags_name_an_endpoint_or_none(monkeypatch: pytest.MonkeyPatch) -> None:
    assert model_endpoint(None, None, required=False) is None  # offline
    assert model_endpoint(None, None, required=True) == ModelEndpoint(kind="http")
    monkeypatch.setenv("KIMMY_BASE_URL", "http://127.0.0.1:9/v1")
    assert model_endpoint(None, None, required=False) == ModelEndpoint(kind="http")
    flags = model_endpoint(
        "http://u:pw@h:1/v1", "m", required=False, context_tokens=2048, max_tokens=64
    )
    assert flags == ModelEndpoint(
        kind="http", base_url="http://***@h:1/v1", model="m", context_tokens=2048, max_tokens=64
    )
    local = model_endpoint(None, None, required=False, local="smollm2", max_tokens=8)
    assert local == ModelEndpoint(kind="local", local="smollm2", max_tokens=8)


def test_one_model_only(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(typer.Exit) as info:
        model_endpoint("http://127.0.0.1:9/v1", None, required=False, local="smollm2")
    assert info.value.exit_code == 2
    assert capsys.readouterr().err == (
        "kimmy: error: give one model: --base-url/--model or --local smollm2, not both\n"
    )


def test_the_command_line_builds_the_client_connect_builds(
    capsys: pytest.CaptureFixture[str],
) -> None:
    flags = {"structured_output": None, "tools": False}
    with OpenAIServer(default=probes_honoured(echo()), card_fields={"max_model_len": 4096}) as srv:
        cli = model_client(
            srv.base_url, None, "sk-1", required=True, pool=8, context_tokens=2048,
            max_tokens=32, honours=flags, probe=True,
        )  # fmt: skip
        endpoint = ModelEndpoint(
            kind="http", base_url=srv.base_url, context_tokens=2048, max_tokens=32
        )
        connecting = connect(endpoint, api_key="sk-1", given={"tools": False}, max_connections=8)
        library = asyncio.run(connecting)
    assert isinstance(cli, OpenAIChat) and isinstance(library, OpenAIChat)
    for name in ("base_url", "model", "name", "context_length", "capabilities",
                 "max_tokens_cap", "timeout_s", "max_connections"):  # fmt: skip
        assert getattr(cli, name) == getattr(library, name), name
    assert cli.capabilities == Capabilities(tools=False, parallel_tool_calls=False)
    assert capsys.readouterr().out == (
        "model capabilities: structured output yes (probed), tools no (--no-tools), "
        "parallel tool calls no (--no-tools), logprobs yes (probed)\n"
    )
