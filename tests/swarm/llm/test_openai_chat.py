"""`OpenAIChat` against a real loopback HTTP server (tests/support/openai_server.py)."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator
from email.utils import formatdate
from pathlib import Path
from typing import Any

import httpx
import pytest

from kimmy_swarm.swarm.errors import (
    ConfigError,
    ModelConnectionError,
    ModelError,
    ModelRateLimitedError,
    ModelRequestError,
    ModelResponseError,
    ModelServerError,
    ModelTimeoutError,
)
from kimmy_swarm.swarm.llm import Message, OpenAIChat
from kimmy_swarm.swarm.llm.openai_chat import _ShardedClient
from tests.support.openai_server import (
    OpenAIServer,
    delay,
    disconnect,
    echo,
    malformed,
    reply,
    status,
    together,
    tool_call,
)

USER = [{"role": "user", "content": "hello there"}]
ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A port bound but not listening: connecting to it is refused, with no race."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


async def call(srv: OpenAIServer, *, model: str | None = "test-model", **kw: Any) -> Any:
    async with OpenAIChat(srv.base_url, model, timeout_s=5.0) as client:
        return await client.chat(USER, **kw)


# --- success paths ---------------------------------------------------------------------


async def test_plain_reply_parses_content_usage_and_model() -> None:
    with OpenAIServer([reply("hi!", usage=(7, 3))]) as srv:
        answer = await call(srv)
    assert answer.content == "hi!"
    assert answer.finish_reason == "stop"
    assert answer.model == "test-model"
    assert answer.tool_calls == []
    assert answer.logprobs is None
    usage = answer.usage
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (7, 3, 10)
    assert usage.model_calls == 1
    [request] = srv.chat_requests
    assert request.method == "POST"
    assert request.body == {"model": "test-model", "messages": USER}  # no None options sent


async def test_options_and_messages_forwarded_in_request_body() -> None:
    tools = [{"type": "function", "function": {"name": "search", "parameters": {}}}]
    schema = {"type": "json_schema", "json_schema": {"name": "A", "schema": {"type": "object"}}}
    messages = [Message(role="system", content="be brief"), {"role": "user", "content": "q"}]
    with OpenAIServer() as srv:
        async with OpenAIChat(srv.base_url + "/", "test-model") as client:
            await client.chat(
                messages,
                tools=tools,
                tool_choice="auto",
                response_format=schema,
                temperature=0.0,
                max_tokens=32,
                stop=("END",),
                seed=7,
            )
    body = srv.chat_requests[0].body
    assert body["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "q"},
    ]
    assert body["tools"] == tools
    assert body["tool_choice"] == "auto"
    assert body["response_format"] == schema
    assert body["temperature"] == 0.0  # falsy but set: must be sent
    assert (body["max_tokens"], body["stop"], body["seed"]) == (32, ["END"], 7)
    assert "logprobs" not in body and "top_logprobs" not in body
    assert srv.chat_requests[0].path == "/v1/chat/completions"  # trailing slash stripped


@pytest.mark.parametrize(("stop", "sent"), [("END", ["END"]), (["a", "b"], ["a", "b"]), ([], None)])
async def test_stop_sent_as_a_list_even_when_given_one_string(stop: Any, sent: Any) -> None:
    with OpenAIServer() as srv:
        await call(srv, stop=stop)
    assert srv.chat_requests[0].body.get("stop") == sent


async def test_tool_call_parsed_with_arguments() -> None:
    with OpenAIServer([tool_call("search", {"query": "delta attention", "k": 3})]) as srv:
        answer = await call(srv, tools=[{"type": "function", "function": {"name": "search"}}])
    assert answer.content is None
    assert answer.finish_reason == "tool_calls"
    [tc] = answer.tool_calls
    assert (tc.id, tc.type, tc.function.name) == ("call_0", "function", "search")
    assert tc.function.parsed_arguments() == {"query": "delta attention", "k": 3}
    assert answer.message.tool_calls == [tc]


async def test_a_tool_call_turn_is_sent_back_with_content_a_string_never_null() -> None:
    """llama.cpp's chat templates read `message.content` on every message: an assistant turn
    with tool calls and no content answered HTTP 500 "'dict object' has no attribute
    'content'". Every message goes with `content` a string, `""` beside tool calls."""
    with OpenAIServer([tool_call("search", {"query": "x"}), reply("done")]) as srv:
        async with OpenAIChat(srv.base_url, "test-model") as client:
            first = await client.chat(
                USER, tools=[{"type": "function", "function": {"name": "search"}}]
            )
            call_id = first.tool_calls[0].id
            await client.chat([
                *USER,
                first.message,                                   # a Message with content None
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "c2", "type": "function",
                     "function": {"name": "search", "arguments": "{}"}}]},  # a dict, null
                {"role": "tool", "tool_call_id": call_id, "content": "result"},
                {"role": "tool", "tool_call_id": "c2", "content": None},
            ])  # fmt: skip
    sent = srv.chat_requests[1].body["messages"]
    assert [m["content"] for m in sent] == ["hello there", "", "", "result", ""]
    assert sent[1]["tool_calls"][0]["function"] == {"name": "search", "arguments": '{"query": "x"}'}
    assert (sent[3]["role"], sent[3]["tool_call_id"]) == ("tool", call_id)


async def test_logprobs_requested_and_parsed() -> None:
    first = {
        "token": "yes",
        "logprob": -0.1,
        "bytes": [121, 101, 115],
        "top_logprobs": [{"token": "yes", "logprob": -0.1}, {"token": "no", "logprob": -2.5}],
    }
    with OpenAIServer([reply("yes sir", logprobs=[first, (" sir", -0.75)])]) as srv:
        answer = await call(srv, logprobs=True, top_logprobs=2)
    body = srv.chat_requests[0].body
    assert (body["logprobs"], body["top_logprobs"]) == (True, 2)
    assert answer.logprobs is not None
    assert [t.token for t in answer.logprobs] == ["yes", " sir"]
    assert [t.logprob for t in answer.logprobs] == [-0.1, -0.75]
    assert answer.logprobs[0].bytes == [121, 101, 115]
    assert [(t.token, t.logprob) for t in answer.logprobs[0].top_logprobs] == [
        ("yes", -0.1),
        ("no", -2.5),
    ]
    # OpenAI's own entries carry no token ids
    assert [t.token_id for t in answer.logprobs] == [None, None]
    assert [t.token_id for t in answer.logprobs[0].top_logprobs] == [None, None]


async def test_token_ids_are_read_when_the_server_sends_them() -> None:
    first = {
        "token": "yes",
        "logprob": -0.1,
        "token_id": 17,
        "top_logprobs": [{"token": "yes", "logprob": -0.1, "token_id": 17}],
    }
    with OpenAIServer([reply("yes", logprobs=[first])]) as srv:
        answer = await call(srv, logprobs=True, top_logprobs=1)
    assert answer.logprobs is not None
    assert answer.logprobs[0].token_id == 17 and answer.logprobs[0].top_logprobs[0].token_id == 17


async def test_api_key_sent_as_bearer_token() -> None:
    with OpenAIServer(api_key="sekret") as srv:
        async with OpenAIChat(srv.base_url, "test-model", api_key="sekret") as client:
            answer = await client.chat(USER)
        with pytest.raises(ModelRequestError) as info:
            await call(srv)  # no key
    assert answer.content == "hello there"
    assert srv.chat_requests[0].headers["authorization"] == "Bearer sekret"
    assert info.value.status == 401


async def test_model_looked_up_once_from_server_when_not_given() -> None:
    with OpenAIServer(models=["first-model", "second-model"]) as srv:
        async with OpenAIChat(srv.base_url) as client:
            assert client.model is None
            answers = await asyncio.gather(*(client.chat(USER) for _ in range(5)))
            assert client.name == client.model == "first-model"
    assert {a.model for a in answers} == {"first-model"}
    assert [r.body["model"] for r in srv.chat_requests] == ["first-model"] * 5
    assert sum(r.path == "/v1/models" for r in srv.requests) == 1


async def test_server_listing_no_models_is_a_config_error() -> None:
    with OpenAIServer(models=[]) as srv:
        async with OpenAIChat(srv.base_url) as client:
            with pytest.raises(ConfigError, match="lists no models"):
                await client.chat(USER)
    assert srv.chat_requests == []


async def test_many_concurrent_calls_all_answered_with_their_own_reply() -> None:
    with OpenAIServer(default=delay(0.05, echo("re: "))) as srv:
        async with OpenAIChat(srv.base_url, "test-model", max_connections=100) as client:
            answers = await asyncio.gather(
                *(client.chat([{"role": "user", "content": f"q{i}"}]) for i in range(100))
            )
    assert [a.content for a in answers] == [f"re: q{i}" for i in range(100)]
    assert len(srv.chat_requests) == 100
    assert srv.max_in_flight > 1


@pytest.mark.parametrize("connections", [3, 20])  # one pool; several shards (7 + 7 + 6)
async def test_pool_holds_exactly_max_connections_in_flight(connections: int) -> None:
    # `together` answers only when `connections` requests wait at once: fewer -> 500s.
    with OpenAIServer(default=together(connections)) as srv:
        async with OpenAIChat(srv.base_url, "m", max_connections=connections) as client:
            answers = await asyncio.gather(*(client.chat(USER) for _ in range(3 * connections)))
    assert srv.errors == []
    assert len(answers) == 3 * connections
    assert srv.max_in_flight == connections


async def test_callers_beyond_the_pool_wait_for_a_slot_then_time_out() -> None:
    body = {"model": "m", "messages": USER}
    with OpenAIServer(default=delay(2.0, echo())) as srv:
        url = srv.base_url + "/chat/completions"
        pool = _ShardedClient(1, 0.1, timeout=httpx.Timeout(5.0))
        holder = asyncio.create_task(pool.request("POST", url, json=body))
        await asyncio.sleep(0)  # the holder takes the only slot before its first await
        with pytest.raises(httpx.PoolTimeout, match=r"no free connection within 0\.1s"):
            await pool.request("POST", url, json=body)
        holder.cancel()
        await asyncio.gather(holder, return_exceptions=True)
        await pool.aclose()
    assert len(srv.chat_requests) == 1


# --- failures: each maps to one typed, correctly retryable error -----------------------


async def test_429_raises_rate_limited_then_next_call_succeeds_without_client_retry() -> None:
    with OpenAIServer([status(429, headers={"Retry-After": "3"}), reply("fine")]) as srv:
        async with OpenAIChat(srv.base_url, "test-model") as client:
            with pytest.raises(ModelRateLimitedError) as info:
                await client.chat(USER)
            assert len(srv.chat_requests) == 1  # the client itself does not retry
            answer = await client.chat(USER)
    err = info.value
    assert (err.status, err.retry_after, err.retryable) == (429, 3.0, True)
    assert srv.base_url in str(err) and "429" in str(err)
    assert answer.content == "fine"


async def test_retry_after_http_date_becomes_seconds() -> None:
    when = formatdate(time.time() + 30, usegmt=True)
    server = OpenAIServer([status(429, headers={"Retry-After": when})])
    with server as srv, pytest.raises(ModelRateLimitedError) as info:
        await call(srv)
    assert info.value.retry_after is not None
    assert 0 < info.value.retry_after <= 31


@pytest.mark.parametrize(
    ("code", "error_type"),
    [
        (500, ModelServerError),
        (502, ModelServerError),
        (503, ModelRateLimitedError),
        (408, ModelTimeoutError),
    ],
)
async def test_retryable_statuses(code: int, error_type: type[ModelError]) -> None:
    with OpenAIServer([status(code)]) as srv, pytest.raises(error_type) as info:
        await call(srv)
    assert info.value.status == code
    assert info.value.retryable is True
    assert info.value.retry_after is None
    assert f"HTTP {code}" in str(info.value) and srv.base_url in str(info.value)


@pytest.mark.parametrize(
    "body",
    [
        {"error": {"message": "max_tokens must be positive", "type": "BadRequestError"}},
        {"object": "error", "message": "max_tokens must be positive", "code": 400},  # vLLM
        {"detail": "max_tokens must be positive"},  # FastAPI
        "max_tokens must be positive",  # plain text
    ],
)
async def test_4xx_is_not_retryable_and_carries_server_message(body: Any) -> None:
    server = OpenAIServer([status(400, body=body)])
    with server as srv, pytest.raises(ModelRequestError) as info:
        await call(srv, max_tokens=-1)
    assert info.value.status == 400
    assert info.value.retryable is False
    assert "max_tokens must be positive" in str(info.value)
    assert "HTTP 400" in str(info.value)


@pytest.mark.parametrize(
    "body",
    [
        b"<html>not json</html>",
        b'{"id": "x", "choices": []}',
        b'{"choices": [{"message": "text instead of an object"}]}',
        b'{"choices": [{"message": {"content": 5, "tool_calls": [{"function": {}}]}}]}',
        b"[]",
        b'{"id": "x", "choices": [{"message": {"content": "cut sho',  # truncated
        b"",
    ],
)
async def test_2xx_that_is_not_a_completion_raises_a_retryable_response_error(
    body: bytes,
) -> None:
    """Retryable: the server accepted the request, so a cut or garbled body is its fault
    (before, it was final, and 3% bad bodies failed ~3.5% of subtasks whatever the retries)."""
    with OpenAIServer([malformed(body)]) as srv, pytest.raises(ModelResponseError) as info:
        await call(srv)
    assert info.value.status == 200
    assert info.value.retryable is True
    assert srv.base_url in str(info.value)


async def test_slow_server_raises_timeout() -> None:
    with OpenAIServer([delay(1.0, reply("too late"))]) as srv:
        async with OpenAIChat(srv.base_url, "test-model", timeout_s=0.2) as client:
            with pytest.raises(ModelTimeoutError) as info:
                await client.chat(USER)
    assert info.value.retryable is True
    assert info.value.status is None
    assert "0.2s" in str(info.value)


async def test_refused_connection_raises_connection_error(closed_port: int) -> None:
    async with OpenAIChat(f"http://127.0.0.1:{closed_port}/v1", "m") as client:
        with pytest.raises(ModelConnectionError) as info:
            await client.chat(USER)
        with pytest.raises(ModelConnectionError, match=r"^cannot reach model server at http"):
            await client.check()
    assert info.value.retryable is True
    assert info.value.status is None
    assert f"127.0.0.1:{closed_port}" in str(info.value)


async def test_server_dropping_connection_raises_connection_error() -> None:
    with OpenAIServer([disconnect(), reply("after")]) as srv:
        async with OpenAIChat(srv.base_url, "test-model") as client:
            with pytest.raises(ModelConnectionError):
                await client.chat(USER)
            assert (await client.chat(USER)).content == "after"


# --- preflight and lifecycle -------------------------------------------------------------


async def test_list_models_and_check() -> None:
    with OpenAIServer(models=["a", "b"]) as srv:
        async with OpenAIChat(srv.base_url) as client:
            assert await client.list_models() == ["a", "b"]
            await client.check()
            assert client.model == "a"


async def test_check_reports_auth_failure_as_request_error() -> None:
    with OpenAIServer(api_key="right") as srv:
        async with OpenAIChat(srv.base_url, "m", api_key="wrong") as client:
            with pytest.raises(ModelRequestError) as info:
                await client.check()
    assert info.value.status == 401


def test_preflight_in_its_own_event_loop_leaves_client_usable() -> None:
    """The CLI may run `check()` and the run itself in separate `asyncio.run`s."""

    async def run(client: OpenAIChat) -> str | None:
        async with client:
            return (await client.chat(USER)).content

    with OpenAIServer(models=["served"]) as srv:
        client = OpenAIChat(srv.base_url)
        asyncio.run(client.check())
        assert client.model == "served"
        assert asyncio.run(run(client)) == "hello there"
    assert [r.path for r in srv.requests] == ["/v1/models", "/v1/chat/completions"]


async def test_closed_client_refuses_calls() -> None:
    client = OpenAIChat("http://127.0.0.1:1/v1", "m")
    await client.aclose()
    with pytest.raises(RuntimeError, match="closed"):
        await client.chat(USER)
