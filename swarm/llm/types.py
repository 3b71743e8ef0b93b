"""Chat-completions data in OpenAI semantics: messages, tool calls, responses, logprobs."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from kimmy_swarm.swarm.schema import Usage


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class FunctionCall(_Model):
    name: str
    #: The arguments as the model wrote them: a JSON string (it may be invalid JSON).
    arguments: str = "{}"

    def parsed_arguments(self) -> Any:
        """The arguments decoded from JSON (raises `json.JSONDecodeError` if invalid)."""
        return json.loads(self.arguments or "{}")


class ToolCall(_Model):
    id: str
    type: Literal["function"] = "function"
    function: FunctionCall


class Message(_Model):
    """One chat message. `tool_calls` on assistant turns, `tool_call_id` on tool results."""

    role: Literal["system", "user", "assistant", "tool", "developer"]
    content: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None

    def to_openai(self) -> dict[str, Any]:
        """The message in the shape the widest range of servers accept: `content` always
        present (`""` beside tool calls, never null or missing: chat templates such as
        llama.cpp's read `message.content` on every message)."""
        wire = self.model_dump(exclude_none=True)
        wire.setdefault("content", "")
        return wire


class TopLogprob(_Model):
    token: str
    logprob: float
    #: The token's id in the model's vocabulary, when the server sends it (`kimmy serve` does,
    #: as an extension of OpenAI's format); None from servers that do not.
    token_id: int | None = None


class TokenLogprob(_Model):
    """One sampled token with its log-probability (and the alternatives, when asked)."""

    token: str
    logprob: float
    bytes: list[int] | None = None
    top_logprobs: list[TopLogprob] = Field(default_factory=list)
    #: The sampled token's id, when the server sends it (see `TopLogprob.token_id`).
    token_id: int | None = None


class ChatResponse(_Model):
    """What a `ChatModel` returns for one call."""

    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    finish_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)
    model: str = ""
    logprobs: list[TokenLogprob] | None = None

    @property
    def message(self) -> Message:
        """The assistant message to append to the conversation."""
        return Message(
            role="assistant", content=self.content, tool_calls=self.tool_calls or None
        )

    def json(self) -> JsonValue:  # type: ignore[override]
        """The content decoded as JSON (raises `json.JSONDecodeError` if it is not)."""
        return json.loads(self.content or "")


MessageLike = Message | dict[str, Any]


def function_tool(name: str, description: str, parameters: dict[str, Any]) -> dict[str, Any]:
    """One entry of a chat call's `tools` list: a function the model may call.

    Every tool spec on the swarm side is built here, so the shape servers are sent is
    defined once.

    Args:
        name: what the model calls it.
        description: what it does, for the model.
        parameters: the JSON schema of its arguments (an object schema).
    """
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }

__all__ = [
    "ChatResponse",
    "FunctionCall",
    "Message",
    "MessageLike",
    "TokenLogprob",
    "ToolCall",
    "TopLogprob",
    "function_tool",
]
