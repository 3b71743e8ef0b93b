"""`OpenAIChat`'s read timeouts against a real loopback server: adaptive by default (each call's
own limit, from its size and the speed the server showed), fixed with `timeout_s`."""

from __future__ import annotations

import pickle
import re

import pytest

from kimmy_swarm.swarm.errors import ConfigError, ModelTimeoutError
from kimmy_swarm.swarm.llm import OpenAIChat, TokenEstimate
from kimmy_swarm.swarm.llm.call_timeout import CallTimeoutPolicy
from tests.support.openai_server import OpenAIServer, delay, reply

#: Sub-second limits: a 0.05 s floor, no safety margin, 5 s before any call has finished.
FAST = CallTimeoutPolicy(floor_s=0.05, first_s=5.0, ceiling_s=60.0, safety=1.0)
SMALL = [{"role": "user", "content": "word " * 100}]
LARGE = [{"role": "user", "content": "word " * 1000}]


def limit_of(client: OpenAIChat, messages: list[dict[str, str]], max_tokens: int) -> float:
    assert client.call_timeouts is not None
    prompt_tokens = client.profile.tokens.prompt_tokens(messages)
    return client.call_timeouts.limit(prompt_tokens, max_tokens).seconds


async def test_a_large_request_gets_the_time_a_small_fixed_limit_would_cut() -> None:
    # the first call teaches: 100 prompt + 10 generated tokens in >= 0.1 s, so at most
    # 1,000 prompt / 100 generated tokens/s; the large request is ~10× the prompt
    server = [delay(0.1, reply("ok", usage=(100, 10))), delay(0.5, reply("done"))]
    with OpenAIServer(server) as srv:
        async with OpenAIChat(srv.base_url, "test-model", timeout_policy=FAST) as client:
            await client.chat(SMALL, max_tokens=10)
            assert limit_of(client, LARGE, 10) > 1.0  # ~2,000 / 1,000 + 10 / 100 s at least
            answer = await client.chat(LARGE, max_tokens=10)
    assert answer.content == "done"
    with OpenAIServer([delay(0.5, reply("done"))]) as srv:
        async with OpenAIChat(srv.base_url, "test-model", timeout_s=0.3) as fixed:
            with pytest.raises(ModelTimeoutError, match=r"within 0\.3s \(ReadTimeout"):
                await fixed.chat(LARGE, max_tokens=10)
            assert fixed.call_timeouts is None


async def test_a_small_request_to_a_server_that_stopped_answering_fails_fast() -> None:
    server = [delay(0.05, reply("ok", usage=(100, 10))), delay(30.0, reply("never"))]
    with OpenAIServer(server) as srv:
        async with OpenAIChat(srv.base_url, "test-model", timeout_policy=FAST) as client:
            await client.chat(SMALL, max_tokens=10)
            with pytest.raises(ModelTimeoutError) as info:
                await client.chat(SMALL, max_tokens=10)
            assert client.call_timeouts is not None
            assert client.call_timeouts.observed == 0  # the speeds are forgotten
    message = str(info.value)
    found = re.search(r"within ([\d.]+) s \(ReadTimeout; no HTTP status; adaptive: ", message)
    assert found, message
    assert float(found[1]) < FAST.first_s  # learned from the first call: not the untrained 5 s
    assert "0.05 s + 1 × " in message
    # the prompt as the profile's (untaught) estimate counts it
    estimated = TokenEstimate().prompt_tokens(SMALL)
    assert re.search(rf"~{estimated} prompt tokens \+ 10 max tokens at [\d,.]+ prompt / ", message)
    assert message.endswith("generated tokens/s (median of 1 call observed))")
    assert info.value.retryable is True and info.value.status is None


async def test_the_untrained_limit_is_never_shorter_than_the_old_fixed_one() -> None:
    with OpenAIServer([delay(0.3, reply("slow but fine"))]) as srv:
        async with OpenAIChat(srv.base_url, "test-model") as client:
            assert client.timeout_s is None and client.call_timeouts is not None
            assert limit_of(client, SMALL, 16) == 120.0
            answer = await client.chat(SMALL, max_tokens=16)
            assert client.call_timeouts.observed == 1
    assert answer.content == "slow but fine"


def test_a_fixed_timeout_and_a_policy_do_not_mix() -> None:
    with pytest.raises(ConfigError, match=r"timeout_policy .* pass timeout_s=None with it, not 30"):
        OpenAIChat("http://127.0.0.1:1/v1", "m", timeout_s=30, timeout_policy=FAST)


async def test_pickling_keeps_the_policy_and_the_fixed_limit_not_the_speeds() -> None:
    with OpenAIServer() as srv:
        async with OpenAIChat(srv.base_url, "test-model", timeout_policy=FAST) as client:
            await client.chat(SMALL, max_tokens=10)
            copy = pickle.loads(pickle.dumps(client))
    assert copy.timeout_s is None and copy.call_timeouts is not None
    assert copy.call_timeouts.policy == FAST
    assert copy.call_timeouts.observed == 0  # a rebuilt client learns afresh
    fixed = pickle.loads(pickle.dumps(OpenAIChat("http://127.0.0.1:1/v1", "m", timeout_s=7.5)))
    assert (fixed.timeout_s, fixed.call_timeouts) == (7.5, None)
