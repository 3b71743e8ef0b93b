"""`OpenAIChat.context_length`: read from the server's `/models` card in `check()` (vLLM and
`kimmy serve` say `max_model_len`), kept when the server says nothing, and carried along."""

from __future__ import annotations

import pickle

import pytest

from kimmy_swarm.swarm.errors import ConfigError
from kimmy_swarm.swarm.llm import OpenAIChat
from tests.support.openai_server import OpenAIServer


@pytest.mark.parametrize("key", ["max_model_len", "context_length", "context_window"])
async def test_check_reads_the_context_length_from_the_model_card(key: str) -> None:
    with OpenAIServer(models=["m"], card_fields={key: 8192}) as srv:
        async with OpenAIChat(srv.base_url, "m") as client:
            assert client.context_length is None
            await client.check()
            assert client.context_length == 8192


async def test_the_servers_length_wins_and_silence_keeps_the_given_one() -> None:
    with OpenAIServer(models=["m"], card_fields={"max_model_len": 4096}) as srv:
        async with OpenAIChat(srv.base_url, "m", context_length=32_768) as told:
            await told.check()
            assert told.context_length == 4096
    with OpenAIServer(models=["m"]) as srv:
        async with OpenAIChat(srv.base_url, "m", context_length=32_768) as given:
            await given.check()
            assert given.context_length == 32_768
        async with OpenAIChat(srv.base_url, "m") as unknown:
            await unknown.check()
            assert unknown.context_length is None


async def test_the_card_of_the_model_in_use_is_read() -> None:
    with OpenAIServer(models=["a", "b"], card_fields={"max_model_len": 2048}) as srv:
        async with OpenAIChat(srv.base_url) as first:  # no id: the first listed, looked up
            await first.chat([{"role": "user", "content": "hi"}])
            assert (first.name, first.context_length) == ("a", 2048)
        async with OpenAIChat(srv.base_url, "not-listed") as other:
            await other.check()  # two cards, neither this model's: nothing to read
            assert other.context_length is None


async def test_a_single_served_model_under_another_name_still_tells_its_length() -> None:
    with OpenAIServer(models=["served"], card_fields={"max_model_len": 1024}) as srv:
        async with OpenAIChat(srv.base_url, "alias") as client:
            await client.check()
            assert client.context_length == 1024


async def test_bad_card_values_are_ignored() -> None:
    fields = {"max_model_len": "4096", "context_length": 0}
    with OpenAIServer(models=["m"], card_fields=fields) as srv:
        async with OpenAIChat(srv.base_url, "m") as client:
            await client.check()
            assert client.context_length is None


async def test_a_pickled_client_keeps_the_context_length_its_server_said() -> None:
    with OpenAIServer(models=["m"], card_fields={"max_model_len": 6000}) as srv:
        async with OpenAIChat(srv.base_url, "m", context_length=2048) as client:
            await client.check()
    assert pickle.loads(pickle.dumps(client)).context_length == 6000


@pytest.mark.parametrize("bad", [0, -5, 1.5, True, "4096"])
def test_a_bad_context_length_is_a_config_error(bad: object) -> None:
    with pytest.raises(ConfigError, match="context_length"):
        OpenAIChat("http://127.0.0.1:9/v1", "m", context_length=bad)  # type: ignore[arg-type]
