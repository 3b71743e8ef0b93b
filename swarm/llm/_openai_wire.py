"""The chat-completions wire format: request checks, and JSON bodies to typed results.

Pure functions, kept apart from the I/O in `openai_chat.py`, so each mapping can be read
(and tested) on its own.
"""

from __future__ import annotations

import json
import math
import time
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from kimmy_swarm.swarm.errors import (
    ConfigError,
    ModelError,
    ModelRateLimitedError,
    ModelRequestError,
    ModelResponseError,
    ModelServerError,
    ModelTimeoutError,
)
from kimmy_swarm.swarm.llm.redact import redact_url
from kimmy_swarm.swarm.llm.types import (
    ChatResponse,
    FunctionCall,
    Message,
    MessageLike,
    TokenLogprob,
    ToolCall,
)
from kimmy_swarm.swarm.schema import Usage

_SNIPPET_CHARS = 300


def validate_base_url(base_url: str) -> str:
    try:
        parts = urlsplit(base_url) if isinstance(base_url, str) else None
    except ValueError:  # e.g. an unclosed `[` of an IPv6 host
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        shown = redact_url(base_url) if isinstance(base_url, str) else base_url
        raise ConfigError(
            f"base URL {shown!r} is not an http(s) URL; expected e.g. http://127.0.0.1:8000/v1"
        )
    return base_url.rstrip("/")


def endpoint(base_url: str, path: str) -> str:
    """`base_url` with `path` appended to its path; a query string (a token) stays last."""
    parts = urlsplit(base_url)
    joined = parts.path.rstrip("/") + "/" + path
    return urlunsplit((parts.scheme, parts.netloc, joined, parts.query, parts.fragment))


def require_positive(name: str, value: float) -> None:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if not ok or not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{name} {value!r} is not allowed; expected a number of seconds > 0")


def wire_message(message: MessageLike) -> dict[str, Any]:
    """A message as sent: `Message.to_openai()`, or a dict with the same normalisation —
    `content` present and a string (`""` for a null or missing one beside tool calls)."""
    if isinstance(message, Message):
        return message.to_openai()
    wire = dict(message)
    if wire.get("content") is None:
        wire["content"] = ""
    return wire


def snippet(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= _SNIPPET_CHARS else text[:_SNIPPET_CHARS] + "…"


def status_error(response: httpx.Response, url: str) -> ModelError:
    """Map a non-2xx answer to the `ModelError` the scheduler should see."""
    code = response.status_code
    detail = server_message(response)
    message = f"model server at {url} answered HTTP {code}" + (f": {detail}" if detail else "")
    if code in (429, 503):  # both say "overloaded, back off"
        return ModelRateLimitedError(
            message, status=code, retry_after=retry_after(response.headers.get("retry-after"))
        )
    if code == 408:
        return ModelTimeoutError(message, status=code)
    if code >= 500:
        return ModelServerError(message, status=code)
    return ModelRequestError(message, status=code)


def server_message(response: httpx.Response) -> str:
    """The error text a server put in its body: OpenAI, vLLM and FastAPI shapes, else raw."""
    try:
        data = response.json()
    except ValueError:
        return snippet(response.text.strip())
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return snippet(error["message"])
        if isinstance(error, str):
            return snippet(error)
        for key in ("message", "detail"):
            if isinstance(data.get(key), str):
                return snippet(data[key])
    return snippet(data)


def retry_after(value: str | None) -> float | None:
    """Seconds to wait from a `Retry-After` header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        from email.utils import parsedate_to_datetime  # rare path; keeps the import cheap

        try:
            seconds = parsedate_to_datetime(value).timestamp() - time.time()
        except (TypeError, ValueError):
            return None
    return max(0.0, seconds) if math.isfinite(seconds) else None


#: Where servers put a model's context length in its `/models` card: vLLM and `kimmy serve`
#: say `max_model_len`; others `context_length` or `context_window`.
CONTEXT_KEYS = ("max_model_len", "context_length", "context_window")


def model_cards(data: Any, url: str, status: int) -> list[dict[str, Any]]:
    """The model cards of a `/models` body (`data[]`, each with an `id`)."""
    try:
        cards = [dict(item) for item in data["data"]]
        for card in cards:
            card["id"] = str(card["id"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelResponseError(
            f"model server at {url} answered HTTP {status} without a model list (data[].id): "
            f"{snippet(data)}",
            status=status,
        ) from exc
    return cards


def card_context_length(card: dict[str, Any]) -> int | None:
    """The context length a model card states (a positive integer), or None."""
    for key in CONTEXT_KEYS:
        value = card.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def parse_completion(data: Any, url: str, status: int) -> ChatResponse:
    """Turn a chat-completion JSON body into a `ChatResponse`."""
    try:
        choice = data["choices"][0]
        message = choice["message"]
        if not isinstance(message, dict):
            raise TypeError(f"choices[0].message is a {type(message).__name__}")
    except (KeyError, IndexError, TypeError) as exc:
        raise ModelResponseError(
            f"model server at {url} answered HTTP {status} without choices[0].message: "
            f"{snippet(data)}",
            status=status,
        ) from exc
    try:
        return ChatResponse(
            content=message.get("content"),
            tool_calls=parse_tool_calls(message.get("tool_calls")),
            finish_reason=choice.get("finish_reason"),
            usage=parse_usage(data.get("usage")),
            model=data.get("model") or "",
            logprobs=parse_logprobs(choice.get("logprobs")),
        )
    except (ValueError, TypeError, KeyError, AttributeError) as exc:  # ValidationError too
        raise ModelResponseError(
            f"model server at {url} answered HTTP {status} with a malformed chat completion "
            f"({type(exc).__name__}: {exc}): {snippet(data)}",
            status=status,
        ) from exc


def parse_tool_calls(raw: Any) -> list[ToolCall]:
    calls: list[ToolCall] = []
    for index, item in enumerate(raw or []):
        function = item["function"]
        arguments = function.get("arguments")
        if arguments is None:
            arguments = "{}"
        elif not isinstance(arguments, str):  # some servers send an object, not a string
            arguments = json.dumps(arguments)
        calls.append(
            ToolCall(
                id=item.get("id") or f"call_{index}",
                function=FunctionCall(name=function["name"], arguments=arguments),
            )
        )
    return calls


def parse_usage(raw: Any) -> Usage:
    if not isinstance(raw, dict):
        return Usage(model_calls=1)
    prompt = int(raw.get("prompt_tokens") or 0)
    completion = int(raw.get("completion_tokens") or 0)
    total = int(raw.get("total_tokens") or prompt + completion)
    return Usage(
        prompt_tokens=prompt, completion_tokens=completion, total_tokens=total, model_calls=1
    )


def parse_logprobs(raw: Any) -> list[TokenLogprob] | None:
    """`choices[0].logprobs.content` as typed entries. Each entry's (and alternative's)
    `token_id` is read when the server sends one (`kimmy serve`'s extension); OpenAI's own
    entries have none and leave it None."""
    if not isinstance(raw, dict) or raw.get("content") is None:
        return None
    return [TokenLogprob.model_validate(item) for item in raw["content"]]
