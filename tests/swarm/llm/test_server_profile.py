"""`ServerProfile`: one per client, holding its server's capabilities, context length and one
learned token estimate that both the call timeouts and the token budget use; found through
the swarm's wrappers, kept by name for models that carry none, and pickled with the client."""

from __future__ import annotations

import asyncio
import pickle
import re
from typing import Any

import pytest

from kimmy_swarm.swarm import Plan, Subtask, SubtaskContext, Swarm
from kimmy_swarm.swarm.errors import ConfigError, ModelTimeoutError
from kimmy_swarm.swarm.executors._host import RecordingModel
from kimmy_swarm.swarm.llm import (
    Capabilities,
    OpenAIChat,
    ScriptedChat,
    ServerProfile,
    profile_of,
    shared_budget,
)
from kimmy_swarm.swarm.llm.call_timeout import CallTimeoutPolicy
from kimmy_swarm.swarm.llm.server_profile import forget_shared_budgets
from tests.support.openai_server import OpenAIServer, delay, reply

MESSAGES = [{"role": "user", "content": "word " * 400}]


@pytest.fixture(autouse=True)
def _fresh_profiles() -> Any:
    forget_shared_budgets()
    yield
    forget_shared_budgets()


class _Told:
    """A model of the caller's own that carries no profile and says its context length."""

    def __init__(self, name: str, length: int | None) -> None:
        self.name = name
        self.context_length = length


def test_a_client_holds_what_it_was_told_in_its_profile() -> None:
    told = Capabilities(tools=False)
    client = OpenAIChat("http://127.0.0.1:9/v1", "m", context_length=8192, capabilities=told)
    assert isinstance(client.profile, ServerProfile) and profile_of(client) is client.profile
    assert (client.capabilities, client.context_length) == (told, 8192)
    assert client.profile.budget.estimate is client.profile.tokens
    with pytest.raises(ConfigError, match="context_length 0"):
        ServerProfile(context_length=0)


def test_each_client_has_its_own_budget_not_one_per_model_name() -> None:
    a = OpenAIChat("http://127.0.0.1:9/v1", "same-model", context_length=8192)
    b = OpenAIChat("http://127.0.0.1:10/v1", "same-model")
    assert shared_budget(a) is a.profile.budget is not shared_budget(b)
    assert shared_budget(a).context_tokens == 8192 and not shared_budget(b).context_known


def test_models_without_a_profile_share_one_by_name_and_tell_it_their_context() -> None:
    quiet = shared_budget(ScriptedChat(name="served"))  # says no context length
    assert not quiet.context_known and quiet.context_tokens == 4096
    assert shared_budget(_Told("served", 16_384)) is quiet  # the same name tells it
    assert quiet.context_known and quiet.context_tokens == 16_384
    assert shared_budget(ScriptedChat(name="served")).context_tokens == 16_384
    assert shared_budget(ScriptedChat(name="other")) is not quiet


def test_a_sub_agent_reaches_its_clients_profile_through_the_swarms_wrappers() -> None:
    client = OpenAIChat("http://127.0.0.1:9/v1", "m", context_length=8192)
    seen: list[Any] = []
    swarm = Swarm(model=client)

    @swarm.role("w")
    async def work(ctx: SubtaskContext) -> None:
        seen.append((profile_of(ctx.model), shared_budget(ctx.model)))

    swarm.run_sync(Plan(subtasks=[Subtask(id="a", role="w")]))
    assert seen == [(client.profile, client.profile.budget)]
    assert profile_of(RecordingModel(client)) is client.profile  # a Ray host's view


async def test_the_call_timeouts_estimate_prompts_with_what_the_budget_learned() -> None:
    """The budget is taught that this server spends far more tokens per character than
    assumed; the next call's timeout counts the prompt with that estimate."""
    fast = CallTimeoutPolicy(
        floor_s=0.05, first_s=0.3, safety=1.0, prior_prefill_tps=1e6, prior_decode_tps=1e6
    )
    with OpenAIServer([delay(2.0, reply("late"))]) as srv:
        async with OpenAIChat(srv.base_url, "test-model", timeout_policy=fast) as client:
            budget = shared_budget(client)
            untaught = budget.prompt_tokens(MESSAGES)
            budget.observe(MESSAGES, 4 * untaught)
            taught = budget.prompt_tokens(MESSAGES)
            assert taught > 3 * untaught
            with pytest.raises(ModelTimeoutError) as info:
                await client.chat(MESSAGES, max_tokens=4)
    found = re.search(r"~([\d,]+) prompt tokens", str(info.value))
    assert found and int(found[1].replace(",", "")) == taught


def test_the_profile_travels_with_a_pickled_client() -> None:
    """A Ray host rebuilds the client from its pickle: it adapts, sizes prompts and caps
    answers as the driver's did."""
    client = OpenAIChat(
        "http://127.0.0.1:9/v1", "m", context_length=6000,
        capabilities=Capabilities(tools=False), max_tokens_cap=64,
    )  # fmt: skip
    shared_budget(client).observe(MESSAGES, 2000)
    copy = pickle.loads(pickle.dumps(client))
    assert copy.profile is not client.profile
    assert (copy.capabilities, copy.context_length, copy.max_tokens_cap) == (
        Capabilities(tools=False), 6000, 64,
    )  # fmt: skip
    assert copy.profile.tokens.chars_per_token == client.profile.tokens.chars_per_token < 2.5
    assert shared_budget(copy).context_tokens == 6000
    asyncio.run(copy.aclose())
