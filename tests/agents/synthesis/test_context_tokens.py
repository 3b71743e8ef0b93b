"""How a model's context length reaches the budgets: `context_tokens(model, default)`,
the shared budget per model name, and `kimmy`'s model client (`--context-tokens`)."""

from __future__ import annotations

import asyncio

from agents.synthesis import DEFAULT_CONTEXT_TOKENS, context_tokens, shared_budget
from kimmy.options import model_client
from swarm import Plan, Subtask, SubtaskContext, Swarm
from swarm.llm import ScriptedChat
from tests.support.openai_server import OpenAIServer


class _Told:
    def __init__(self, name: str, length: object) -> None:
        self.name = name
        self.context_length = length


def test_context_tokens_reads_the_clients_length_else_the_default() -> None:
    assert context_tokens(_Told("m", 8192), 4096) == 8192
    assert context_tokens(ScriptedChat(), 2048) == 2048  # a scripted model says none
    assert context_tokens(_Told("m", None)) == DEFAULT_CONTEXT_TOKENS == 4096
    assert context_tokens(_Told("m", True), 100) == 100  # not a length


def test_a_shared_budget_is_per_model_name_and_learns_a_told_context() -> None:
    quiet = shared_budget(ScriptedChat(name="served"))  # the metered view says nothing
    assert not quiet.context_known and quiet.context_tokens == 4096
    assert shared_budget(_Told("served", 16_384)) is quiet  # the client itself tells it
    assert quiet.context_known and quiet.context_tokens == 16_384
    assert shared_budget(ScriptedChat(name="served")).context_tokens == 16_384
    assert shared_budget(ScriptedChat(name="other")) is not quiet


def test_the_model_client_takes_the_servers_length_else_the_flag() -> None:
    with OpenAIServer(models=["said-8k"], card_fields={"max_model_len": 8192}) as srv:
        client = model_client(srv.base_url, None, None, required=True, context_tokens=2048)
        assert client.context_length == 8192
        # a sub-agent's metered view of the client carries the length
        swarm, seen = Swarm(model=client), []

        @swarm.role("w")
        async def work(ctx: SubtaskContext) -> None:
            seen.append(context_tokens(ctx.model, 1))

        swarm.run_sync(Plan(subtasks=[Subtask(id="a", role="w")]))
        assert seen == [8192]
        asyncio.run(client.aclose())
    with OpenAIServer(models=["said-nothing"]) as srv:
        client = model_client(srv.base_url, None, None, required=True, context_tokens=2048)
        assert client.context_length == 2048
        asyncio.run(client.aclose())
        plain = model_client(srv.base_url, "unsaid", None, required=True)
        assert plain.context_length is None
        asyncio.run(plain.aclose())
