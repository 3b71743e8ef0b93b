"""The message shapes we send, against llama.cpp's real server (llama-cpp-python, SmolLM2).

Its `chatml-function-calling` template reads `message.content` on every message, and plain
`chatml` indexes `message["content"]`: an assistant turn with tool calls and no `content`
(what `Message.to_openai()` sent before) was HTTP 500 "'dict object' has no attribute
'content'" (or "'content'"). The raw request shows the server
still refuses that shape; `OpenAIChat` now sends `content: ""`, and tool results as the
OpenAI spec says (`role: tool`, `tool_call_id`, string content), and gets 200.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from kimmy_swarm.swarm.llm import Message, OpenAIChat
from kimmy_swarm.swarm.llm.types import FunctionCall, ToolCall
from tests.support.llama_cpp_server import CHATML, CHATML_TOOLS, llama_cpp_server
from tests.support.llama_cpp_server import llama_cpp_unavailable as _unavailable

pytestmark = pytest.mark.skipif(_unavailable() is not None, reason=str(_unavailable()))

TOOL = {"type": "function", "function": {"name": "lookup", "description": "Look a key up.",
        "parameters": {"type": "object", "properties": {"key": {"type": "string"}},
                       "required": ["key"]}}}  # fmt: skip
CALL = ToolCall(id="call_0", function=FunctionCall(name="lookup", arguments='{"key": "primes"}'))


def _conversation() -> list[Message | dict]:
    """A tool-loop conversation as the agent loop builds it: the model's tool call (content
    None, as parsed), the tool's result, and a later turn."""
    return [
        Message(role="system", content="You add numbers. Use the tools."),
        Message(role="user", content="What is the total of the primes?"),
        Message(role="assistant", content=None, tool_calls=[CALL]),
        {"role": "tool", "tool_call_id": "call_0", "content": "[2, 3, 5, 7]"},
        {"role": "user", "content": "Your answer is invalid: reply with only JSON."},
    ]


@pytest.fixture(scope="module", params=[CHATML_TOOLS, CHATML])
def server(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    with llama_cpp_server(request.param) as url:
        yield request.param, url


def test_the_old_shape_is_what_the_server_refuses(server: tuple[str, str]) -> None:
    chat_format, url = server
    old = [m.model_dump(exclude_none=True) if isinstance(m, Message) else m
           for m in _conversation()]  # fmt: skip
    assert "content" not in old[2]
    body = {"model": "smollm2", "messages": old, "tools": [TOOL], "max_tokens": 8}
    answer = httpx.post(f"{url}/chat/completions", json=body, timeout=120)
    assert answer.status_code == 500
    # the Jinja template of function calling, and plain ChatML's Python formatter (KeyError)
    expected = "has no attribute 'content'" if chat_format == CHATML_TOOLS else "'content'"
    assert expected in answer.json()["error"]["message"]


async def test_our_shapes_are_answered(server: tuple[str, str]) -> None:
    _, url = server
    async with OpenAIChat(url, "smollm2") as client:
        answer = await client.chat(_conversation(), tools=[TOOL], max_tokens=8)
        assert answer.finish_reason in ("stop", "length", "tool_calls")
        assert answer.usage.prompt_tokens > 20
        plain = await client.chat(_conversation()[:2], max_tokens=8)
        assert plain.content is not None or plain.tool_calls
