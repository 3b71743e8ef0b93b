"""`kimmy serve`'s HTTP API on a real uvicorn server (127.0.0.1, a free port) over a tiny
float32 model, driven by httpx and by the swarm's own `OpenAIChat`: answers equal the
uncached model, streams equal non-streams, usage and prefix hits are counted, structured
output always validates, errors are OpenAI's, and clients that leave free their cache."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
import torch
from prometheus_client.parser import text_string_to_metric_families

from kimmy_swarm.model.presets import tiny_model, tiny_tokenizer
from kimmy_swarm.model.serve.async_engine import AsyncEngine
from kimmy_swarm.model.serve.chat import render_chat
from kimmy_swarm.model.serve.engine import LLMEngine
from kimmy_swarm.model.serve.factory import build_engine
from kimmy_swarm.model.serve.metrics import ServerMetrics
from kimmy_swarm.model.serve.protocol import ChatMessage
from kimmy_swarm.model.serve.server import ServerThread, create_app
from kimmy_swarm.model.serve.structured import validate
from kimmy_swarm.model.serve.types import EngineStats, GenerationParams
from kimmy_swarm.swarm.errors import ModelRateLimitedError, ModelRequestError
from kimmy_swarm.swarm.llm import OpenAIChat

TOK = tiny_tokenizer(vocab_size=384, num_docs=40)
MODEL = tiny_model(TOK, seed=0)
NAME, KEY, BODY_LIMIT, PAGE = "tiny-test", "test-key", 32_000, 4
AUTH = {"Authorization": f"Bearer {KEY}"}
USER = [{"role": "user", "content": "What does a list do?"}]
LONG = {"messages": USER, "max_tokens": 2000, "ignore_eos": True}  # minutes: only aborted
LOOKUP = {
    "type": "object",
    "properties": {"query": {"type": "string", "maxLength": 12}, "limit": {"enum": [1, 5, 10]}},
    "required": ["query", "limit"],
    "additionalProperties": False,
}
TOOLS = [
    {"type": "function", "function": {"name": "lookup", "parameters": LOOKUP}},
    {"type": "function", "function": {"name": "done", "parameters": {"type": "object"}}},
]


def _engine(**options: Any) -> LLMEngine:
    opts = {"max_num_seqs": 8, "max_model_len": 2048, "page_size": PAGE, "num_pages": 2048}
    return build_engine(MODEL, TOK, **{**opts, **options})


class Served:
    def __init__(self, server: ServerThread, engine: LLMEngine) -> None:
        self.server, self.engine, self.url = server, engine, server.base_url
        self.http = httpx.Client(base_url=self.url, headers=AUTH, timeout=120)

    def chat(self, **body: Any) -> dict[str, Any]:
        r = self.http.post("/chat/completions", json={"model": NAME, **body})
        assert r.status_code == 200, r.text
        return r.json()


@pytest.fixture(scope="module")
def srv() -> Iterator[Served]:
    engine = _engine()
    app = create_app(AsyncEngine(engine), model_name=NAME, api_key=KEY, max_body_bytes=BODY_LIMIT)
    with ServerThread(app) as server:
        served = Served(server, engine)
        yield served
        served.http.close()


def _wait_until(done: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 60  # a bound for a hung server, not a speed check
    while not done():
        assert time.monotonic() < deadline, f"gave up waiting until {what}"
        time.sleep(0.01)


def _idle(engine: LLMEngine, before: EngineStats) -> Callable[[], bool]:
    def check() -> bool:
        s = engine.stats()
        return (s.running, s.waiting, s.pages_used, s.slots_used) == (0, 0, 0, before.slots_used)

    return check


def _sse(lines: Iterator[str]) -> list[Any]:
    data = [line.removeprefix("data: ") for line in lines if line]
    assert data[-1] == "[DONE]"
    return [json.loads(d) for d in data[:-1]]


def test_greedy_answer_and_logprobs_equal_the_uncached_model(srv: Served) -> None:
    messages = [{"role": "system", "content": "Answer briefly."}, *USER]
    body = srv.chat(messages=messages, temperature=0, max_tokens=12, ignore_eos=True,
                    logprobs=True, top_logprobs=3)  # fmt: skip
    ids = render_chat(TOK, [ChatMessage.model_validate(m) for m in messages]).ids
    out = MODEL.generate(torch.tensor([ids]), max_new_tokens=12, eos_token_id=[], use_cache=False)
    ref = out[0, len(ids) :].tolist()
    choice = body["choices"][0]
    assert choice["message"]["content"] == TOK.decode(ref, skip_special_tokens=True)
    assert choice["finish_reason"] == "length"
    entries = choice["logprobs"]["content"]
    assert [e["token"] for e in entries] == [TOK.decode([t]) for t in ref]
    for e in entries:
        tops = [t["logprob"] for t in e["top_logprobs"]]
        assert e["logprob"] <= 0 and len(tops) == 3 and tops == sorted(tops, reverse=True)
        assert e["logprob"] == pytest.approx(tops[0])  # greedy took the most likely token
    assert body["usage"] == {
        "prompt_tokens": len(ids), "completion_tokens": 12, "total_tokens": len(ids) + 12,
        "prompt_tokens_details": {"cached_tokens": 0},
    }  # fmt: skip
    assert body["model"] == NAME and body["object"] == "chat.completion"


def test_stream_chunks_concatenate_to_the_non_stream_answer(srv: Served) -> None:
    body = {"model": NAME, "messages": USER, "temperature": 0, "max_tokens": 16,
            "ignore_eos": True}  # fmt: skip
    full = srv.chat(**body)
    stream = {**body, "stream": True, "stream_options": {"include_usage": True}}
    with srv.http.stream("POST", "/chat/completions", json=stream) as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        chunks = _sse(r.iter_lines())
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    choices = [c["choices"][0] for c in chunks if c["choices"]]
    text = "".join(c["delta"].get("content", "") for c in choices)
    assert text == full["choices"][0]["message"]["content"]
    assert [c["finish_reason"] for c in choices if c["finish_reason"]] == ["length"]
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] == 16
    assert chunks[-1]["usage"]["prompt_tokens"] == full["usage"]["prompt_tokens"]
    assert {c["id"] for c in chunks} == {chunks[0]["id"]}


def test_second_request_with_the_same_role_prompt_reuses_its_prefill(srv: Served) -> None:
    role = "You are sub-agent seven of the code review swarm. Report one finding."
    asks = [[{"role": "system", "content": role}, {"role": "user", "content": u}]
            for u in ("Review a.py", "Review the module b/c.py please")]  # fmt: skip
    first, second = (srv.chat(messages=m, max_tokens=2)["usage"] for m in asks)
    point = render_chat(TOK, [ChatMessage.model_validate(m) for m in asks[1]]).cache_point
    assert point is not None and point > PAGE
    assert first["prompt_tokens_details"]["cached_tokens"] == 0
    assert second["prompt_tokens_details"]["cached_tokens"] == point // PAGE * PAGE


async def test_json_schema_answers_always_parse_and_validate(srv: Served) -> None:
    schema = {
        "type": "object",
        "properties": {
            "verdict": {"enum": ["ok", "bug", "style"]},
            "line": {"type": "string", "maxLength": 8},
            "fixed": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string", "maxLength": 4}, "maxItems": 3},
        },
        "required": ["verdict", "line", "fixed", "tags"],
        "additionalProperties": False,
    }
    fmt = {"type": "json_schema", "json_schema": {"name": "Finding", "schema": schema}}
    compiled = srv.engine.grammars.compile_count
    async with OpenAIChat(srv.url, api_key=KEY) as model:  # the model id from /v1/models
        answers = await asyncio.gather(*(
            model.chat(USER, response_format=fmt, temperature=1.0, seed=i, max_tokens=200)
            for i in range(10)
        ))  # fmt: skip
    for a in answers:
        validate(schema, a.content or "")  # raises if not JSON or not matching
        assert a.finish_reason == "stop" and a.model == NAME
    assert len({a.content for a in answers}) > 1  # seeds differ, answers differ
    assert srv.engine.grammars.compile_count == compiled + 1  # one grammar for all ten


async def test_named_tool_choice_returns_a_call_whose_arguments_validate(srv: Served) -> None:
    choice = {"type": "function", "function": {"name": "lookup"}}
    async with OpenAIChat(srv.url, NAME, api_key=KEY) as model:
        replies = await asyncio.gather(*(
            model.chat(USER, tools=TOOLS, tool_choice=choice, seed=seed, max_tokens=120)
            for seed in range(3)
        ))  # fmt: skip
    for r in replies:
        assert r.finish_reason == "tool_calls" and r.content is None
        (call,) = r.tool_calls
        assert call.function.name == "lookup" and call.id.startswith("call_")
        validate(LOOKUP, call.function.arguments)


def test_required_tool_choice_streams_the_call_as_one_delta(srv: Served) -> None:
    body = {"messages": USER, "tools": TOOLS, "tool_choice": "required", "max_tokens": 120,
            "seed": 1, "stream": True}  # fmt: skip
    with srv.http.stream("POST", "/chat/completions", json=body) as r:
        chunks = _sse(r.iter_lines())
    deltas = [c["choices"][0]["delta"] for c in chunks]
    (calls,) = [d["tool_calls"] for d in deltas if "tool_calls" in d]
    assert calls[0]["index"] == 0 and calls[0]["type"] == "function"
    assert calls[0]["function"]["name"] in ("lookup", "done")
    json.loads(calls[0]["function"]["arguments"])
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_completions_take_text_or_token_ids(srv: Served) -> None:
    text = "def parse(line):"
    base = {"model": NAME, "max_tokens": 8, "temperature": 0, "ignore_eos": True}
    by_text = srv.http.post("/completions", json={**base, "prompt": text, "logprobs": 2}).json()
    by_ids = srv.http.post("/completions", json={**base, "prompt": TOK.encode(text)}).json()
    choice = by_text["choices"][0]
    assert choice["text"] == by_ids["choices"][0]["text"] and choice["finish_reason"] == "length"
    lp = choice["logprobs"]
    assert len(lp["tokens"]) == 8 and all(x <= 0 for x in lp["token_logprobs"])
    assert all(1 <= len(top) <= 2 for top in lp["top_logprobs"])
    assert lp["text_offset"] == sorted(lp["text_offset"]) and lp["text_offset"][0] == 0
    assert by_text["usage"]["prompt_tokens"] == len(TOK.encode(text))
    with srv.http.stream(
        "POST", "/completions", json={**base, "prompt": text, "stream": True}
    ) as r:
        chunks = _sse(r.iter_lines())
    assert "".join(c["choices"][0]["text"] for c in chunks) == choice["text"]


_OK = {"model": NAME, "messages": USER, "max_tokens": 2}


@pytest.mark.parametrize(
    ("body", "param", "says"),
    [
        (b"{not json", None, "not valid JSON"),
        (b"[1, 2]", None, "JSON object"),
        ({**_OK, "n": 2}, "n", "one choice per request"),
        ({**_OK, "max_tokenz": 2}, "max_tokenz", "unrecognized request argument"),
        ({**_OK, "messages": "hi"}, "messages", "valid list"),
        ({**_OK, "temperature": "hot"}, "temperature", "valid number"),
        ({**_OK, "response_format": {"type": "xml"}}, "response_format.type", "json_schema"),
        (
            {**_OK, "messages": [{"role": "user", "content": [{"type": "image_url"}]}]},
            "messages[0].content[0]",
            "'image_url' is not supported",
        ),
        ({**_OK, "max_tokens": 5000}, "max_tokens", "context length (2048 tokens)"),
        (
            {**_OK, "max_tokens": 2000, "messages": [{"role": "user", "content": "w " * 200}]},
            None,
            "max_model_len 2048",
        ),
    ],
)
def test_bad_bodies_get_openai_400s_naming_the_field(
    srv: Served, body: bytes | dict[str, Any], param: str | None, says: str
) -> None:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    r = srv.http.post("/chat/completions", content=raw)
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["type"] == "invalid_request_error" and error["param"] == param
    assert says in error["message"]


def test_models_health_auth_and_other_model_names(srv: Served) -> None:
    models = srv.http.get("/models").json()
    assert [(m["id"], m["max_model_len"]) for m in models["data"]] == [(NAME, 2048)]
    for headers in ({}, {"Authorization": "Bearer nope"}):
        r = httpx.post(f"{srv.url}/chat/completions", json=_OK, headers=headers)
        assert r.status_code == 401 and r.json()["error"]["code"] == "invalid_api_key"
    assert httpx.get(srv.url.removesuffix("/v1") + "/health").json() == {"status": "ok"}
    r = srv.http.post("/chat/completions", json={**_OK, "model": "gpt-9"})
    assert r.status_code == 404 and r.json()["error"]["code"] == "model_not_found"


async def test_the_swarm_client_sees_a_wrong_key_as_a_request_error(srv: Served) -> None:
    async with OpenAIChat(srv.url, NAME, api_key="nope") as model:
        with pytest.raises(ModelRequestError, match="API key is wrong") as info:
            await model.chat(USER, max_tokens=2)
    assert info.value.status == 401 and not info.value.retryable


def test_bodies_over_the_limit_get_413(srv: Served) -> None:
    big = {**_OK, "messages": [{"role": "user", "content": "x" * BODY_LIMIT}]}
    r = srv.http.post("/chat/completions", json=big)
    assert r.status_code == 413 and r.json()["error"]["code"] == "request_too_large"
    chunked = (json.dumps(big)[i : i + 4096].encode() for i in range(0, BODY_LIMIT + 99, 4096))
    r = srv.http.post("/chat/completions", content=chunked)  # no Content-Length
    assert r.status_code == 413 and "at most 32000" in r.json()["error"]["message"]


def test_a_stream_left_early_frees_its_request(srv: Served) -> None:
    before = srv.engine.stats()
    with srv.http.stream("POST", "/chat/completions", json={**LONG, "stream": True}) as r:
        lines = (line for line in r.iter_lines() if line)
        next(lines), next(lines)  # the role, then the first token
        assert srv.engine.stats().running == 1
    _wait_until(_idle(srv.engine, before), "the left stream is aborted")
    assert srv.engine.stats().generated_tokens - before.generated_tokens < 2000


def test_a_non_stream_request_left_early_frees_its_request(srv: Served) -> None:
    before = srv.engine.stats()
    body = json.dumps(LONG).encode()
    host, port = srv.server.host, srv.server.port
    with socket.create_connection((host, port)) as conn:
        conn.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Authorization: Bearer {KEY}\r\nContent-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        _wait_until(lambda: srv.engine.stats().generated_tokens > before.generated_tokens + 2,
                    "the request generates")  # fmt: skip
    _wait_until(_idle(srv.engine, before), "the left request is aborted")
    assert srv.engine.stats().generated_tokens - before.generated_tokens < 2000


async def test_a_full_queue_gets_503_with_retry_after() -> None:
    engine = _engine(max_num_seqs=1, max_waiting=1)
    with ServerThread(create_app(AsyncEngine(engine), model_name=NAME)) as server:
        before = engine.stats()
        long = {**LONG, "stream": True}
        http = httpx.AsyncClient(base_url=server.base_url, timeout=120)
        async with http, http.stream("POST", "/chat/completions", json=long):
            await asyncio.to_thread(_wait_until, lambda: engine.stats().running == 1, "A runs")
            async with http.stream("POST", "/chat/completions", json=long):
                await asyncio.to_thread(_wait_until, lambda: engine.stats().waiting == 1, "B waits")
                r = await http.post("/chat/completions", json=_OK)
                assert r.status_code == 503 and r.headers["retry-after"] == "1"
                assert r.json()["error"]["code"] == "overloaded"
                async with OpenAIChat(server.base_url, NAME) as model:
                    with pytest.raises(ModelRateLimitedError) as info:
                        await model.chat(USER, max_tokens=2)
                assert info.value.retry_after == 1.0 and info.value.retryable
        await asyncio.to_thread(_wait_until, _idle(engine, before), "both streams are aborted")


def test_retry_after_follows_the_recent_completion_rate() -> None:
    ae = AsyncEngine(_engine())  # not started: submitted requests stay queued
    assert ae.retry_after() == 1.0  # nothing finished yet
    now = time.monotonic()
    ae._finished_at.extend(now - 10 + i * 0.5 for i in range(21))  # 21 in 10 s: ~2 per s
    for _ in range(30):
        ae.submit([5, 6, 7], GenerationParams(max_tokens=2))
    assert ae.retry_after() == 15.0  # 30 queued at 2 per second
    ae._finished_at.clear()
    ae._finished_at.extend([now - 100, now - 99])  # outside the window: no rate known
    assert ae.retry_after() == 1.0


def test_metrics_expose_the_engine_state(srv: Served) -> None:
    httpx.get(f"{srv.url}/models")  # a 401
    text = httpx.get(srv.url.removesuffix("/v1") + "/metrics").text
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    gauges = [
        "num_requests_running", "num_requests_waiting", "kv_pages_used", "state_slots_used",
        "prefix_cache_hit_rate", "generation_tokens_per_second",
    ]  # fmt: skip
    for gauge in gauges:
        assert (f"kimmy_{gauge}", ()) in samples
    stats = srv.engine.stats()
    assert samples[("kimmy_kv_pages_total", ())] == 2048
    assert samples[("kimmy_state_slots_total", ())] == stats.slots_total
    assert samples[("kimmy_generation_tokens_total", ())] == stats.generated_tokens
    assert samples[("kimmy_prompt_tokens_total", ())] == stats.prompt_tokens
    assert samples[("kimmy_requests_total", (("status", "401"),))] >= 1
    assert samples[("kimmy_requests_total", (("status", "200"),))] >= 1


def test_tokens_per_second_is_measured_over_the_recent_window() -> None:
    now, generated = [0.0], [0]

    def stats() -> EngineStats:
        return EngineStats(0, 0, 0, 1, 0, 2, 0, 0, 0, generated[0], 0)

    metrics = ServerMetrics(stats, window_s=10.0, clock=lambda: now[0])
    for t, g in [(0, 0), (5, 500), (10, 1000), (20, 1100), (30, 1200)]:
        now[0], generated[0] = float(t), g
        metrics.sample_tokens()
    assert metrics.rate.sample(1200) == pytest.approx(10.0)  # 100 tokens in the last 10 s
