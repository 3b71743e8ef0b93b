"""Token ids on `kimmy serve`'s logprobs (an extension of OpenAI's format, as vLLM's): every
entry and every alternative carries the id that decodes to its text, in chat answers,
streamed chat chunks and text completions; the swarm's `OpenAIChat` reads them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from kimmy_swarm.model.presets import tiny_model, tiny_tokenizer
from kimmy_swarm.model.serve.async_engine import AsyncEngine
from kimmy_swarm.model.serve.factory import build_engine
from kimmy_swarm.model.serve.server import ServerThread, create_app
from kimmy_swarm.swarm.llm import OpenAIChat

TOK = tiny_tokenizer(vocab_size=384, num_docs=40)
MODEL = tiny_model(TOK, seed=1)
NAME = "tiny-ids"
USER = [{"role": "user", "content": "What does a list do?"}]
ASK = {"model": NAME, "temperature": 0, "max_tokens": 10, "ignore_eos": True}


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    engine = build_engine(MODEL, TOK, max_num_seqs=4, max_model_len=1024, page_size=4,
                          num_pages=512)  # fmt: skip
    with ServerThread(create_app(AsyncEngine(engine), model_name=NAME)) as server:
        yield server.base_url


def _sse(response: httpx.Response) -> list[dict[str, Any]]:
    data = [line.removeprefix("data: ") for line in response.iter_lines() if line]
    assert data[-1] == "[DONE]"
    return [json.loads(d) for d in data[:-1]]


def _check_entry(entry: dict[str, Any]) -> None:
    assert TOK.decode([entry["token_id"]]) == entry["token"]
    for top in entry.get("top_logprobs", []):
        assert isinstance(top["token_id"], int)
        assert TOK.decode([top["token_id"]]) == top["token"]


def test_chat_logprobs_carry_token_ids_that_decode_to_their_text(url: str) -> None:
    with httpx.Client(base_url=url, timeout=120) as http:
        body = {**ASK, "messages": USER, "logprobs": True, "top_logprobs": 2}
        choice = http.post("/chat/completions", json=body).json()["choices"][0]
        entries = choice["logprobs"]["content"]
        assert len(entries) == 10
        for e in entries:
            _check_entry(e)
            assert e["token_id"] == e["top_logprobs"][0]["token_id"]  # greedy: the top one
        ids = [e["token_id"] for e in entries]
        assert TOK.decode(ids, skip_special_tokens=True) == choice["message"]["content"]
        with http.stream("POST", "/chat/completions", json={**body, "stream": True}) as r:
            chunks = _sse(r)
        streamed = [e for c in chunks if c["choices"] for e in (c["choices"][0]["logprobs"]
                    or {"content": []})["content"]]  # fmt: skip
        assert streamed == entries


def test_text_completions_carry_the_token_ids_of_their_tokens(url: str) -> None:
    with httpx.Client(base_url=url, timeout=120) as http:
        body = {**ASK, "prompt": "def parse(line):", "logprobs": 1}
        choice = http.post("/completions", json=body).json()["choices"][0]
        lp = choice["logprobs"]
        assert len(lp["token_ids"]) == len(lp["tokens"]) == 10
        assert [TOK.decode([t]) for t in lp["token_ids"]] == lp["tokens"]
        with http.stream("POST", "/completions", json={**body, "stream": True}) as r:
            chunks = _sse(r)
        streamed = [i for c in chunks if c["choices"] and c["choices"][0]["logprobs"]
                    for i in c["choices"][0]["logprobs"]["token_ids"]]  # fmt: skip
        assert streamed == lp["token_ids"]


async def test_the_swarm_client_parses_the_token_ids(url: str) -> None:
    async with OpenAIChat(url, NAME) as model:
        reply = await model.chat(USER, max_tokens=8, temperature=0, logprobs=True,
                                 top_logprobs=2)  # fmt: skip
    assert reply.logprobs is not None and len(reply.logprobs) == 8
    for lp in reply.logprobs:
        assert lp.token_id is not None and TOK.decode([lp.token_id]) == lp.token
        assert [t.token_id is not None for t in lp.top_logprobs] == [True, True]
    ids = [lp.token_id for lp in reply.logprobs if lp.token_id is not None]
    assert TOK.decode(ids, skip_special_tokens=True) == reply.content
