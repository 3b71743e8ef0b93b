"""A `ChatModel` with a real tokenizer and a real context limit, for the synthesis tests.

`TokenModel` counts each prompt with the `kimmy serve --tiny` BPE tokenizer and chat
template (so the counts are what that server would say), rejects a call whose prompt +
`max_tokens` exceeds its context with `kimmy serve`'s own wording, and answers naming the
tags (`[id]` at the start of a line) it was shown — so provenance can be followed through
the reduce tree. It carries no server profile, so its budget is the one kept by its name
(`swarm.llm.profile_of`); those are forgotten after every test.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from kimmy_swarm.model.presets import tiny_tokenizer
from kimmy_swarm.model.serve.chat import render_chat
from kimmy_swarm.model.serve.protocol import ChatMessage
from kimmy_swarm.swarm.errors import ModelRequestError
from kimmy_swarm.swarm.llm.server_profile import forget_shared_budgets
from kimmy_swarm.swarm.llm.types import ChatResponse, Message, MessageLike
from kimmy_swarm.swarm.schema import Usage

_TAG = re.compile(r"^\[([^\]\n]+)\]", re.MULTILINE)


@dataclass(frozen=True)
class Call:
    """One call the model got."""

    messages: list[dict[str, Any]]
    options: dict[str, Any]
    prompt_tokens: int
    rejected: bool

    @property
    def user(self) -> str:
        return str(self.messages[-1].get("content") or "")


class TokenModel:
    """A model of `context_length` tokens that counts with the tiny tokenizer.

    Args:
        tokenizer: the `kimmy serve --tiny` tokenizer.
        context_length: the context limit (prompt + max_tokens).
        name: the model name (shared budgets are per name).
        tells_context: expose `context_length` (as `OpenAIChat` after `check()` does).
        wording: the rejection's text (`{prompt}`, `{max_tokens}`, `{context}` filled in).
        verbose: pad every summary to its `max_tokens` (a model that always says the most).
    """

    def __init__(
        self,
        tokenizer: Any,
        *,
        context_length: int = 4096,
        name: str = "tiny-4k",
        tells_context: bool = True,
        wording: str = (
            "prompt ({prompt} tokens) + max_tokens ({max_tokens}) is more than "
            "max_model_len {context}"
        ),
        verbose: bool = False,
    ) -> None:
        self.tokenizer = tokenizer
        self.limit = context_length
        self.name = name
        if tells_context:
            self.context_length = context_length
        self.wording = wording
        self.verbose = verbose
        self.calls: list[Call] = []
        #: Calls in flight now, and at most (each call yields to the loop once).
        self.in_flight = self.max_in_flight = 0

    @property
    def answered(self) -> list[Call]:
        return [c for c in self.calls if not c.rejected]

    def count(self, messages: Sequence[dict[str, Any]], tools: Any = None) -> int:
        parsed = [ChatMessage.model_validate(m) for m in messages]
        return len(render_chat(self.tokenizer, parsed, tools).ids)

    async def chat(self, messages: Sequence[MessageLike], **options: Any) -> ChatResponse:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(0)  # let concurrent callers in, as a server would
            return self._answer(messages, options)
        finally:
            self.in_flight -= 1

    def _answer(self, messages: Sequence[MessageLike], options: dict[str, Any]) -> ChatResponse:
        wire = [m.to_openai() if isinstance(m, Message) else dict(m) for m in messages]
        prompt = self.count(wire)
        max_tokens = options.get("max_tokens")
        budget = max_tokens if max_tokens is not None else self.limit - prompt
        if prompt + budget > self.limit:
            self.calls.append(Call(wire, options, prompt, rejected=True))
            text = self.wording.format(prompt=prompt, max_tokens=budget, context=self.limit)
            raise ModelRequestError(
                f"model server at http://fake/v1/chat/completions answered HTTP 400: {text}",
                status=400,
            )
        self.calls.append(Call(wire, options, prompt, rejected=False))
        content = self.answer(wire, options, budget)
        completion = len(self.tokenizer.encode(content))
        usage = Usage(
            prompt_tokens=prompt,
            completion_tokens=completion,
            total_tokens=prompt + completion,
            model_calls=1,
        )
        return ChatResponse(content=content, finish_reason="stop", usage=usage, model=self.name)

    def answer(self, messages: list[dict[str, Any]], options: dict[str, Any], limit: int) -> str:
        """Name every tag shown; a JSON `Answer` when a schema is asked for."""
        tags = _TAG.findall(str(messages[-1].get("content") or ""))
        cited = " ".join(f"[{tag}]" for tag in tags)
        if options.get("response_format") is not None:
            return json.dumps({"answer": f"A report built on {cited or 'nothing'}.", "sources": []})
        text = f"Summary of {len(tags)} items: {cited}"
        if self.verbose:
            text += " and further detail" * limit
        ids = self.tokenizer.encode(text)
        return self.tokenizer.decode(ids[:limit])  # a server stops at max_tokens

    async def aclose(self) -> None:
        return None


@pytest.fixture(scope="session")
def tokenizer() -> Any:
    return tiny_tokenizer()


@pytest.fixture(autouse=True)
def _fresh_budgets() -> Iterator[None]:
    forget_shared_budgets()
    yield
    forget_shared_budgets()


_WORDS = tuple(
    word
    for line in (
        "kernel cache latency tokens prefill decode batch scheduler throughput swarm agent",
        "result finding source claim evidence theme paper dataset column mean variance model",
        "attention state chunk page memory bound error retry budget context window summary",
        "writer checker researcher analyst report figure table value percent accuracy loss",
    )
    for word in line.split()
)


def varied_texts(count: int, *, seed: int = 0, low: int = 200, high: int = 500) -> list[str]:
    """`count` texts of `low`-`high` characters: words, numbers, punctuation, some code."""
    rng = random.Random(seed)
    texts = []
    for index in range(count):
        size = rng.randint(low, high)
        parts: list[str] = []
        while sum(len(p) + 1 for p in parts) < size:
            kind = rng.random()
            if kind < 0.7:
                parts.append(rng.choice(_WORDS))
            elif kind < 0.85:
                parts.append(f"{rng.uniform(0, 1000):.{rng.randint(0, 3)}f}")
            elif kind < 0.95:
                parts.append(rng.choice(("(see doc-", "x=", "f(", "{'k':", "→", "e.g.,")))
            else:
                parts.append(f"item{index}.")
        texts.append(" ".join(parts)[:size])
    return texts
