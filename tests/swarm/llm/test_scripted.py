"""`ScriptedChat`: strict playback, and the public API of `swarm.llm`."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kimmy_swarm.swarm import llm
from kimmy_swarm.swarm.errors import ModelRateLimitedError
from kimmy_swarm.swarm.llm import (
    ChatModel,
    ChatResponse,
    FunctionCall,
    Message,
    ScriptedChat,
    ToolCall,
    UnexpectedModelCall,
)
from kimmy_swarm.swarm.schema import Usage


def user(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


async def test_steps_answer_calls_in_order() -> None:
    call = ToolCall(id="c1", function=FunctionCall(name="search", arguments='{"q": "x"}'))
    full = ChatResponse(tool_calls=[call], usage=Usage(prompt_tokens=4, model_calls=1))
    async with ScriptedChat(["first", full, "third"], name="fake") as model:
        answers = [await model.chat(user(str(i))) for i in range(3)]
    assert answers[0].content == "first"
    assert answers[0].finish_reason == "stop"
    assert answers[0].model == "fake"
    assert answers[0].usage == Usage(model_calls=1)
    assert answers[1] is full  # a ChatResponse step is returned as is, usage included
    assert answers[2].content == "third"


async def test_exception_step_is_raised_and_script_continues() -> None:
    error = ModelRateLimitedError("slow down", status=429, retry_after=1.5)
    model = ScriptedChat([error, "after"])
    with pytest.raises(ModelRateLimitedError) as info:
        await model.chat(user("a"))
    assert info.value is error
    assert (await model.chat(user("b"))).content == "after"
    model.assert_consumed()


async def test_call_beyond_script_raises_unexpected_model_call() -> None:
    model = ScriptedChat(["only"])
    await model.chat(user("one"))
    with pytest.raises(UnexpectedModelCall, match=r"call #2 .* only 1 step") as info:
        await model.chat([{"role": "system", "content": "s"}, *user("the second question")])
    assert "the second question" in str(info.value)
    assert isinstance(info.value, AssertionError)
    assert len(model.calls) == 2  # the unexpected call is recorded too


async def test_unconsumed_steps_fail_assert_consumed_and_context_exit() -> None:
    model = ScriptedChat(["a", "b", "c"])
    await model.chat(user("x"))
    assert model.remaining == 2
    with pytest.raises(AssertionError, match="2 of 3 scripted step"):
        model.assert_consumed()
    with pytest.raises(AssertionError, match="3 of 3 scripted step"):
        async with ScriptedChat(["a", "b", "c"]):
            pass


async def test_context_exit_with_error_keeps_the_original_error() -> None:
    with pytest.raises(KeyError):
        async with ScriptedChat(["never used"]):
            raise KeyError("boom")


async def test_callable_steps_see_messages_and_options_sync_and_async() -> None:
    def sync_step(messages: list[dict[str, Any]], options: dict[str, Any]) -> str:
        return f"{messages[-1]['content']} at T={options['temperature']}"

    async def async_step(messages: list[dict[str, Any]], options: dict[str, Any]) -> ChatResponse:
        await asyncio.sleep(0)
        return ChatResponse(content=str(options["response_format"]["type"]))

    async with ScriptedChat([sync_step, async_step]) as model:
        first = await model.chat(user("q"), temperature=0.5)
        second = await model.chat(user("r"), response_format={"type": "json_object"})
    assert first.content == "q at T=0.5"
    assert first.usage.model_calls == 1
    assert second.content == "json_object"


async def test_callable_returning_wrong_type_is_a_type_error() -> None:
    model = ScriptedChat([lambda messages, options: 42])
    with pytest.raises(TypeError, match="call #1 returned int"):
        await model.chat(user("x"))


async def test_calls_recorded_as_dicts_with_every_option() -> None:
    tools = [{"type": "function", "function": {"name": "f"}}]
    model = ScriptedChat(["ok"])
    await model.chat(
        [Message(role="system", content="sys"), {"role": "user", "content": "u"}],
        tools=tools,
        stop=("x",),
        logprobs=True,
        top_logprobs=3,
        seed=1,
    )
    [(messages, options)] = model.calls
    assert messages == [{"role": "system", "content": "sys"}, {"role": "user", "content": "u"}]
    assert options == {
        "tools": tools,
        "tool_choice": None,
        "response_format": None,
        "temperature": None,
        "max_tokens": None,
        "stop": ["x"],
        "seed": 1,
        "logprobs": True,
        "top_logprobs": 3,
    }


async def test_concurrent_callers_get_steps_in_call_order() -> None:
    model = ScriptedChat([f"answer {i}" for i in range(50)])
    answers = await asyncio.gather(*(model.chat(user(str(i))) for i in range(50)))
    assert [a.content for a in answers] == [f"answer {i}" for i in range(50)]
    assert [m[-1]["content"] for m, _ in model.calls] == [str(i) for i in range(50)]
    model.assert_consumed()


async def test_always_answers_any_number_of_calls() -> None:
    async with ScriptedChat.always("same", name="load") as model:
        answers = await asyncio.gather(*(model.chat(user("x")) for _ in range(200)))
        assert model.remaining == 0
    assert {a.content for a in answers} == {"same"}
    assert len(model.calls) == 200
    assert model.name == "load"


@pytest.mark.parametrize("step", [ModelRateLimitedError, 3.5, None, b"bytes"])
def test_bad_steps_rejected_at_construction(step: Any) -> None:
    with pytest.raises(TypeError, match="step 1"):
        ScriptedChat(["fine", step])


def test_scripted_chat_satisfies_chat_model_protocol() -> None:
    assert isinstance(ScriptedChat(), ChatModel)


def test_public_api_is_pinned() -> None:
    assert sorted(llm.__all__) == [
        "BalancedChat",
        "Capabilities",
        "ChatModel",
        "ChatResponse",
        "ContextOverflow",
        "FunctionCall",
        "LocalModel",
        "Message",
        "ModelEndpoint",
        "OpenAIChat",
        "ScriptedChat",
        "ServerProfile",
        "TokenBudget",
        "TokenEstimate",
        "TokenLogprob",
        "ToolCall",
        "TopLogprob",
        "UnexpectedModelCall",
        "capabilities_of",
        "connect",
        "context_overflow",
        "context_tokens",
        "probe_capabilities",
        "profile_of",
        "redact_url",
        "shared_budget",
    ]
    for name in llm.__all__:
        assert getattr(llm, name) is not None
