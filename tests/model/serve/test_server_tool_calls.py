"""`kimmy serve` with a chat template that writes its own `<tool_call>` blocks (Qwen2.5's
kind), over a tiny random model: forced calls are valid blocks whatever the weights (the
grammar), read back as OpenAI `tool_calls`; streams carry the same calls; earlier calls and
their results go back through the template; "auto" answers are text or valid calls."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from kimmy_swarm.model.presets import tiny_model
from kimmy_swarm.model.serve.async_engine import AsyncEngine
from kimmy_swarm.model.serve.factory import build_engine
from kimmy_swarm.model.serve.server import ServerThread, create_app
from kimmy_swarm.model.serve.structured import validate
from kimmy_swarm.model.serve.tool_calls import ToolCallGrammar
from tests.support.tool_templates import TOOLS_TEMPLATE, with_template

pytest.importorskip("xgrammar")  # the `serve` extra
pytest.importorskip("jsonschema")

TOK = with_template(TOOLS_TEMPLATE)
MODEL = tiny_model(TOK, seed=1)
NAME = "tiny-tools"
USER = [{"role": "user", "content": "Which list method sorts in place?"}]
LOOKUP = {
    "type": "object",
    "properties": {"query": {"type": "string", "maxLength": 12}, "limit": {"enum": [1, 5, 10]}},
    "required": ["query", "limit"],
    "additionalProperties": False,
}
DONE = {"type": "object", "properties": {"ok": {"type": "boolean"}}}  # bounded: a random
TOOLS = [  # model writes an open object ({"type": "object"}) until max_tokens
    {"type": "function", "function": {"name": "lookup", "parameters": LOOKUP}},
    {"type": "function", "function": {"name": "done", "parameters": DONE}},
]
SCHEMAS = {"lookup": LOOKUP, "done": DONE}


@pytest.fixture(scope="module")
def http() -> Iterator[httpx.Client]:
    engine = build_engine(MODEL, TOK, max_num_seqs=8, max_model_len=2048, page_size=4)
    app = create_app(AsyncEngine(engine), model_name=NAME)
    with ServerThread(app) as server, httpx.Client(base_url=server.base_url, timeout=120) as c:
        yield c


def _chat(http: httpx.Client, **body: Any) -> dict[str, Any]:
    r = http.post("/chat/completions", json={"model": NAME, "messages": USER, **body})
    assert r.status_code == 200, r.text
    return r.json()["choices"][0]


def _valid(calls: list[dict[str, Any]]) -> list[str]:
    for c in calls:
        assert c["type"] == "function" and c["id"].startswith("call_")
        validate(SCHEMAS[c["function"]["name"]], c["function"]["arguments"])
    return [c["function"]["name"] for c in calls]


@pytest.mark.parametrize(
    ("choice", "parallel"),
    [("required", False), ("required", True), ({"type": "function", "function": {"name": "done"}},
                                                True)],
)  # fmt: skip
def test_forced_calls_are_valid_with_random_weights(
    http: httpx.Client, choice: Any, parallel: bool
) -> None:
    names: list[str] = []
    for seed in range(4):
        choice_out = _chat(http, tools=TOOLS, tool_choice=choice, parallel_tool_calls=parallel,
                           seed=seed, max_tokens=400)  # fmt: skip
        message = choice_out["message"]
        assert choice_out["finish_reason"] == "tool_calls", message
        assert message["content"] is None  # only blocks: no text around them
        called = _valid(message["tool_calls"])
        assert len(called) == 1 or parallel
        names += called
    if isinstance(choice, dict):
        assert set(names) == {"done"}


def test_a_streamed_call_equals_the_non_streamed_one(http: httpx.Client) -> None:
    body = {"model": NAME, "messages": USER, "tools": TOOLS, "tool_choice": "required",
            "parallel_tool_calls": False, "seed": 3, "max_tokens": 400}  # fmt: skip
    full = _chat(http, **{k: v for k, v in body.items() if k not in ("model", "messages")})
    with http.stream("POST", "/chat/completions", json={**body, "stream": True}) as r:
        data = [line.removeprefix("data: ") for line in r.iter_lines() if line]
    assert data[-1] == "[DONE]"
    deltas = [json.loads(d)["choices"][0] for d in data[:-1]]
    (calls,) = [d["delta"]["tool_calls"] for d in deltas if "tool_calls" in d["delta"]]
    assert all(d["delta"].get("content") in (None, "") for d in deltas)
    assert [c["index"] for c in calls] == [0] and _valid(calls)
    expected = full["message"]["tool_calls"][0]["function"]
    assert calls[0]["function"] == expected  # the same call (ids differ)
    assert deltas[-1]["finish_reason"] == "tool_calls"


def test_history_goes_back_through_the_template(http: httpx.Client) -> None:
    args = '{"query": "sort", "limit": 1}'
    call = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": args}}
    history = [
        *USER,
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "list.sort()"},
    ]
    r = http.post("/chat/completions", json={"model": NAME, "messages": history,
                                             "tools": TOOLS, "max_tokens": 1})  # fmt: skip
    assert r.status_code == 200, r.text
    text = TOK.apply_chat_template(
        [
            USER[0],
            {"role": "assistant", "content": "", "tool_calls": [
                {**call, "function": {"name": "lookup",
                                      "arguments": {"query": "sort", "limit": 1}}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "list.sort()"},
        ],
        tools=TOOLS,
    )  # fmt: skip
    assert '<tool_call>\n{"name": "lookup", "arguments": {"query": "sort", "limit": 1}}' in text
    assert r.json()["usage"]["prompt_tokens"] == len(TOK.encode(text))


def test_auto_answers_are_text_or_valid_calls(http: httpx.Client) -> None:
    from kimmy_swarm.model.serve.chat import output_mode
    from kimmy_swarm.model.serve.protocol import ChatCompletionRequest

    req = ChatCompletionRequest.model_validate({"messages": USER, "tools": TOOLS})
    assert isinstance(output_mode(req, TOK).json_schema, ToolCallGrammar)  # constrained
    for seed in range(3):
        out = _chat(http, tools=TOOLS, seed=seed, max_tokens=60)
        message = out["message"]
        if out["finish_reason"] == "tool_calls":
            _valid(message["tool_calls"])
        else:
            assert message["tool_calls"] is None and isinstance(message["content"], str)
