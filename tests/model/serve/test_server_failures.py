"""`kimmy serve` under requests that used to break it (issue 17): sampling values at the edge
of fp32, a request that fails inside the engine, an engine whose loop has stopped, bodies
nested 5,000 deep, lone surrogates, `NaN`, a body shorter than its Content-Length — each
answered at once with an OpenAI error that names the problem, the server going on serving.
Also `/openapi.json`. A real uvicorn server on 127.0.0.1 over the tiny float32 model; every
client call has a timeout, so a hang fails the test instead of blocking it."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from kimmy_swarm.model.presets import tiny_model, tiny_tokenizer
from kimmy_swarm.model.serve.async_engine import AsyncEngine
from kimmy_swarm.model.serve.engine import LLMEngine
from kimmy_swarm.model.serve.factory import build_engine
from kimmy_swarm.model.serve.sampling import RequestSampler
from kimmy_swarm.model.serve.server import ServerThread, create_app

TOK = tiny_tokenizer(vocab_size=384, num_docs=40)
MODEL = tiny_model(TOK, seed=0)
NAME, BODY_TIMEOUT_S = "tiny-test", 0.5
USER = [{"role": "user", "content": "What does a list do?"}]
OK = {"model": NAME, "messages": USER, "max_tokens": 3, "ignore_eos": True}
MARK = 424242  # the seed of the request the injected failure hits


def _engine() -> LLMEngine:
    return build_engine(MODEL, TOK, max_num_seqs=8, max_model_len=1024, page_size=4)


def _serve(engine: LLMEngine) -> ServerThread:
    app = create_app(AsyncEngine(engine), model_name=NAME, body_timeout_s=BODY_TIMEOUT_S)
    return ServerThread(app).start()


@pytest.fixture(scope="module")
def http() -> Iterator[httpx.Client]:
    server = _serve(_engine())
    try:
        with httpx.Client(base_url=server.base_url, timeout=30) as client:
            yield client
    finally:
        server.stop()


def _health(http: httpx.Client) -> httpx.Response:
    return http.get(str(http.base_url).removesuffix("/v1/") + "/health")


def _answers(http: httpx.Client, **body: Any) -> None:
    r = http.post("/chat/completions", json={**OK, **body})
    assert r.status_code == 200, r.text
    assert r.json()["usage"]["completion_tokens"] == 3


# ---- 1. one request never stops the engine ------------------------------------------------
@pytest.mark.parametrize(
    "sampling",
    [{"temperature": 1e-45}, {"temperature": 5e-324}, {"top_p": 5e-324}, {"top_p": 1e-45}],
    ids=["T=1e-45", "T=5e-324", "top_p=5e-324", "top_p=1e-45"],
)
def test_extreme_sampling_values_answer_and_the_next_request_too(
    http: httpx.Client, sampling: dict[str, float]
) -> None:
    _answers(http, **sampling, seed=1)
    _answers(http)
    assert _health(http).json() == {"status": "ok"}


@pytest.fixture
def failing_request(monkeypatch: pytest.MonkeyPatch) -> None:
    """Requests with seed MARK fail in the engine at their first token."""
    accept = RequestSampler.accept

    def accept_or_fail(self: RequestSampler, token_id: int) -> Any:
        if self.params.seed == MARK:
            raise RuntimeError("injected failure in one sequence")
        return accept(self, token_id)

    monkeypatch.setattr(RequestSampler, "accept", accept_or_fail)


@pytest.mark.usefixtures("failing_request")
def test_a_request_failing_in_the_engine_fails_alone(http: httpx.Client) -> None:
    long = {**OK, "max_tokens": 40}
    results: dict[str, httpx.Response] = {}

    def post(key: str, body: dict[str, Any]) -> None:
        results[key] = http.post("/chat/completions", json=body)

    threads = [
        threading.Thread(target=post, args=("bad", {**OK, "seed": MARK})),
        threading.Thread(target=post, args=("good", {**long, "seed": 1})),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    bad, good = results["bad"], results["good"]
    assert bad.status_code == 500
    assert bad.json()["error"]["message"] == "RuntimeError: injected failure in one sequence"
    assert good.status_code == 200 and good.json()["usage"]["completion_tokens"] == 40
    stream = {**OK, "seed": MARK, "stream": True}
    with http.stream("POST", "/chat/completions", json=stream) as r:
        events = [line.removeprefix("data: ") for line in r.iter_lines() if line]
    assert events[-1] == "[DONE]"
    assert "injected failure" in json.loads(events[-2])["error"]["message"]
    _answers(http)
    assert _health(http).json() == {"status": "ok"}


def test_a_stopped_engine_answers_503_at_once_never_hangs(monkeypatch: pytest.MonkeyPatch) -> None:
    engine = _engine()
    server = _serve(engine)
    try:
        http = httpx.Client(base_url=server.base_url, timeout=10)  # a hang fails the test
        _answers(http)

        def broken() -> Any:
            raise RuntimeError("scheduler state corrupted (simulated)")

        monkeypatch.setattr(engine.scheduler, "schedule", broken)
        in_flight = http.post("/chat/completions", json=OK)
        assert in_flight.status_code == 503
        assert "scheduler state corrupted" in in_flight.json()["error"]["message"]
        for _ in range(3):
            r = http.post("/chat/completions", json=OK)
            assert r.status_code == 503 and r.json()["error"]["code"] == "engine_stopped"
            assert "restart the server" in r.json()["error"]["message"]
        health = _health(http)
        assert health.status_code == 503 and "scheduler state corrupted" in health.text
        http.close()
    finally:
        server.stop()  # the stopped loop does not make shutdown fail


# ---- 2. bodies ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("raw", "param", "says"),
    [
        (
            json.dumps({**OK, "user": "x"}).replace('"x"', "[" * 5000 + "]" * 5000).encode(),
            None,
            "nests deeper than 64 levels",
        ),
        (
            json.dumps(
                {
                    **OK,
                    "tools": [
                        {
                            "type": "function",
                            "function": {
                                "name": "f",
                                "parameters": json.loads('{"a":' * 70 + "1" + "}" * 70),
                            },
                        }
                    ],
                }
            ).encode(),
            None,
            "nests deeper than 64 levels (at tools[0].function.parameters",
        ),
        (
            json.dumps(
                {**OK, "messages": [{"role": "user", "content": "hi \ud800 there"}]}
            ).encode(),  # ensure_ascii: the escape \\ud800 on the wire
            "messages[0].content",
            "lone UTF-16 surrogate (\\ud800)",
        ),
        (
            b'{"messages": [{"role": "user", "content": "\\udfff"}], "max_tokens": 2}',
            "messages[0].content",
            "lone UTF-16 surrogate (\\udfff)",
        ),
        (b'{"messages": [], "temperature": NaN}', None, "NaN is not JSON"),
    ],
    ids=["5000-deep", "70-deep-schema", "lone-high-surrogate", "lone-low-surrogate", "NaN"],
)
def test_bodies_python_cannot_hold_get_400_naming_the_problem(
    http: httpx.Client, raw: bytes, param: str | None, says: str
) -> None:
    r = http.post("/chat/completions", content=raw)
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["type"] == "invalid_request_error" and error["param"] == param
    assert says in error["message"]
    _answers(http)


def test_a_surrogate_pair_is_one_character_and_fine(http: httpx.Client) -> None:
    _answers(http, messages=[{"role": "user", "content": "a smile \U0001f600"}])


def test_a_body_shorter_than_its_content_length_gets_408(http: httpx.Client) -> None:
    url = httpx.URL(str(http.base_url))
    body = json.dumps(OK).encode()
    with socket.create_connection((url.host, url.port), timeout=10) as conn:
        conn.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(body) + 50}\r\n\r\n".encode()
            + body  # 50 bytes short: the server would wait for them forever
        )
        start = time.monotonic()
        reply = b""
        while b"\r\n\r\n" not in reply or not reply.rstrip().endswith(b"}"):
            chunk = conn.recv(65536)  # socket timeout 10 s: a hang fails here
            if not chunk:
                break
            reply += chunk
        waited = time.monotonic() - start
    head, _, payload = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408"), reply
    error = json.loads(payload)["error"]
    assert error["code"] == "request_timeout"
    assert f"did not arrive within {BODY_TIMEOUT_S:g} s ({len(body)} bytes came" in error["message"]
    assert waited < 9  # answered after the body timeout, not the socket's
    _answers(http)


def test_openapi_lists_the_openai_routes_and_their_bodies(http: httpx.Client) -> None:
    r = http.get(str(http.base_url).removesuffix("/v1/") + "/openapi.json")
    assert r.status_code == 200
    spec = r.json()
    paths = spec["paths"]
    assert {"/v1/chat/completions", "/v1/completions", "/v1/models"} <= set(paths)
    chat = paths["/v1/chat/completions"]["post"]
    body = chat["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/ChatCompletionRequest"}
    schemas = spec["components"]["schemas"]
    assert "messages" in schemas["ChatCompletionRequest"]["properties"]
    assert "prompt" in schemas["CompletionRequest"]["properties"]
    ok = chat["responses"]["200"]["content"]
    assert ok["application/json"]["schema"]["$ref"].endswith("/ChatCompletion")
    assert ok["text/event-stream"]["schema"]["$ref"].endswith("/ChatCompletionChunk")
    refs = set(json.dumps(spec).split('"$ref": "#/components/schemas/')[1:])
    assert all(ref.split('"')[0] in schemas for ref in refs)  # every reference resolves


def _tool_call(name: str = "f") -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}


# (endpoint, body): each is answered 200 exactly when the published schema says it is valid
# (the first two got 400 though valid under the schema before: issue 35)
AGREEMENT: list[tuple[str, dict[str, Any]]] = [
    ("chat", {"messages": [{"role": "tool"}]}),
    ("completions", {"prompt": ""}),
    ("completions", {"prompt": []}),
    ("completions", {"prompt": ["a", "b"]}),
    ("completions", {"prompt": ["What does"]}),
    ("completions", {"prompt": [[5, 6]]}),
    ("completions", {"prompt": "x", "echo": True}),
    ("completions", {"prompt": "x", "suffix": "y"}),
    ("completions", {"prompt": "x", "best_of": 2}),
    ("completions", {"prompt": "x", "best_of": 1, "suffix": ""}),
    ("chat", {"messages": [{"role": "tool", "content": "4", "tool_call_id": "c1"}]}),
    ("chat", {"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}),
    ("chat", {"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]}),
    ("chat", {"messages": USER, "n": 2}),
    ("chat", {"messages": USER, "stop": ["a", "b", "c", "d", "e"]}),
    ("chat", {"messages": USER, "stop": ""}),
    ("chat", {"messages": USER, "stop": ["."]}),
    ("chat", {"messages": USER, "presence_penalty": 0.5}),
    ("chat", {"messages": USER, "presence_penalty": 0, "logit_bias": {}}),
    ("chat", {"messages": USER, "logit_bias": {"5": 1.0}}),
    ("chat", {"messages": USER, "stream_options": {"include_usage": True}}),
    ("chat", {"messages": USER, "top_logprobs": 2}),
    ("chat", {"messages": USER, "top_logprobs": 2, "logprobs": True}),
    ("chat", {"messages": USER, "tool_choice": "required"}),
    ("chat", {"messages": USER, "tool_choice": "required", "tools": [_tool_call()]}),
    ("chat", {"messages": USER, "response_format": {"type": "json_schema"}}),
    ("chat", {"messages": USER, "response_format": {"type": "json_object"}}),
]


def test_a_body_is_taken_exactly_when_the_published_schema_says_it_is_valid(
    http: httpx.Client,
) -> None:
    from jsonschema import Draft202012Validator

    spec = http.get(str(http.base_url).removesuffix("/v1/") + "/openapi.json").json()
    models = {"chat": "ChatCompletionRequest", "completions": "CompletionRequest"}
    disagree = []
    for endpoint, body in AGREEMENT:
        schema = {"$ref": f"#/components/schemas/{models[endpoint]}", **spec}
        valid = Draft202012Validator(schema).is_valid(body)
        sent = {"model": NAME, "max_tokens": 3, **body}
        r = http.post(f"/{endpoint.replace('chat', 'chat/completions')}", json=sent)
        assert r.status_code in (200, 400), r.text
        if valid != (r.status_code == 200):
            disagree.append((body, valid, r.status_code, r.text[:200]))
    assert disagree == []


def test_metrics_are_published_as_prometheus_text(http: httpx.Client) -> None:
    root = str(http.base_url).removesuffix("/v1/")
    op = http.get(root + "/openapi.json").json()["paths"]["/metrics"]["get"]
    (media,) = op["responses"]["200"]["content"]  # said JSON before
    r = http.get(root + "/metrics")
    assert media == r.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    assert "kimmy" in r.text or "# HELP" in r.text


def test_a_method_a_route_does_not_take_is_405_with_allow(http: httpx.Client) -> None:
    r = http.request("TRACE", "/models")
    assert r.status_code == 405 and r.json()["error"]["code"] == "method_not_allowed"
    assert r.headers["allow"] == "GET"  # was missing
    assert http.request("DELETE", "/chat/completions").headers["allow"] == "POST"
