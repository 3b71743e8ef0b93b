"""`max_tokens_cap` (`--max-answer-tokens`): no call asks a model for more than the cap, over real
HTTP on loopback, also from a client rebuilt from its pickle (a Ray host's)."""

from __future__ import annotations

import asyncio
import pickle

import pytest

from kimmy_swarm.swarm.errors import ConfigError
from kimmy_swarm.swarm.llm import OpenAIChat
from kimmy_swarm.swarm.llm.openai_chat import capped_max_tokens
from tests.support.openai_server import OpenAIServer, reply


def test_a_call_never_asks_for_more_than_the_cap() -> None:
    async def calls(model: OpenAIChat) -> None:
        for asked in (1024, 100, None):
            await model.chat([{"role": "user", "content": "hi"}], max_tokens=asked)
        await model.aclose()

    with OpenAIServer([reply("a"), reply("b"), reply("c")]) as srv:
        asyncio.run(calls(OpenAIChat(srv.base_url, "test-model", max_tokens_cap=256)))
        sent = [r.body.get("max_tokens") for r in srv.chat_requests]
    assert sent == [256, 100, 256]


def test_a_pickled_client_keeps_its_cap() -> None:
    """A Ray host rebuilds the client from its pickle; its calls stay capped."""

    async def call(model: OpenAIChat) -> None:
        await model.chat([{"role": "user", "content": "hi"}], max_tokens=1024)
        await model.aclose()

    with OpenAIServer([reply("a")]) as srv:
        client = OpenAIChat(srv.base_url, "test-model", max_tokens_cap=64)
        copy = pickle.loads(pickle.dumps(client))
        asyncio.run(call(copy))
        sent = [r.body.get("max_tokens") for r in srv.chat_requests]
    assert copy.max_tokens_cap == 64 and sent == [64]


@pytest.mark.parametrize("bad", [0, -3, True, 2.5])
def test_a_bad_cap_is_refused_naming_it(bad: object) -> None:
    with pytest.raises(ConfigError, match=repr(bad).replace(".", r"\.")):
        capped_max_tokens(10, bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=f"max_tokens_cap {bad!r}".replace(".", r"\.")):
        OpenAIChat("http://127.0.0.1:9/v1", "m", max_tokens_cap=bad)  # type: ignore[arg-type]
