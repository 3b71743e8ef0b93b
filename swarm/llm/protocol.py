"""The `ChatModel` protocol: the one interface sub-agents use to talk to a model."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from kimmy_swarm.swarm.llm.types import ChatResponse, MessageLike


@runtime_checkable
class ChatModel(Protocol):
    """OpenAI chat-completions semantics.

    `chat` takes the conversation and the usual options (`tools`, `tool_choice`,
    `response_format` with a JSON schema, `temperature`, `max_tokens`, `stop`, `seed`,
    `logprobs`, `top_logprobs`) and returns one `ChatResponse`. Failures raise
    `swarm.errors.ModelError` subclasses whose `retryable` flag the scheduler obeys.

    A model may also say what its server honours, in an optional `capabilities` attribute
    (`swarm.llm.capabilities`); one that does not honours everything.
    """

    name: str

    async def chat(
        self,
        messages: Sequence[MessageLike],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        tool_choice: str | dict[str, Any] | None = None,
        response_format: dict[str, Any] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        stop: Sequence[str] | None = None,
        seed: int | None = None,
        logprobs: bool = False,
        top_logprobs: int | None = None,
    ) -> ChatResponse: ...

    async def aclose(self) -> None: ...


__all__ = ["ChatModel"]
