"""`BalancedChat` over real loopback servers: least outstanding requests, round-robin ties."""

from __future__ import annotations

import asyncio
import pickle

import pytest

from kimmy_swarm.swarm.errors import ConfigError
from kimmy_swarm.swarm.llm import BalancedChat, OpenAIChat
from tests.support.openai_server import OpenAIServer, delay

MSG = [{"role": "user", "content": "hi"}]


async def test_idle_members_take_turns() -> None:
    with OpenAIServer() as a, OpenAIServer() as b, OpenAIServer() as c:
        model = BalancedChat([OpenAIChat(s.base_url, "test-model") for s in (a, b, c)])
        for _ in range(6):
            assert (await model.chat(MSG)).content == "hi"
        await model.aclose()
        assert [len(s.chat_requests) for s in (a, b, c)] == [2, 2, 2]
        assert model.outstanding == [0, 0, 0]


async def test_a_slow_member_gets_fewer_calls() -> None:
    with OpenAIServer(default=delay(0.5)) as slow, OpenAIServer(default=delay(0.01)) as fast:
        model = BalancedChat([OpenAIChat(slow.base_url, "m"), OpenAIChat(fast.base_url, "m")])

        async def burst(k: int) -> None:
            for _ in range(k):
                await model.chat(MSG)

        await asyncio.gather(*(burst(5) for _ in range(4)))
        await model.aclose()
        assert model.calls == [len(slow.chat_requests), len(fast.chat_requests)]
        assert sum(model.calls) == 20
        assert model.calls[0] < model.calls[1]  # the busy slow member is skipped


async def test_pickles_without_connections_and_works_after() -> None:
    with OpenAIServer() as a, OpenAIServer() as b:
        model = BalancedChat([OpenAIChat(a.base_url, "m", api_key="k"), OpenAIChat(b.base_url)])
        await model.chat(MSG)  # opens a pool: it must not travel
        copy = pickle.loads(pickle.dumps(model))
        assert [m.base_url for m in copy.models] == [a.base_url, b.base_url]
        assert [m.model for m in copy.models] == ["m", None]
        assert copy.name == model.name
        for _ in range(2):
            await copy.chat(MSG)
        await copy.aclose()
        await model.aclose()
        assert [len(s.chat_requests) for s in (a, b)] == [2, 1]
        assert a.chat_requests[-1].headers.get("authorization") == "Bearer k"


def test_needs_models() -> None:
    with pytest.raises(ConfigError, match="at least one model"):
        BalancedChat([])
    with pytest.raises(ConfigError, match="not a ChatModel"):
        BalancedChat(["http://x"])
