"""Behaviours of the test server: how it answers one chat-completions request.

A behaviour is any function `ServerRequest -> Reply`. The constructors here build the common
ones; `tests.support.openai_server` re-exports them all. They run in server threads, so a
hand-written behaviour must be thread-safe.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeAlias


@dataclass(frozen=True)
class ServerRequest:
    """One request as the server received it."""

    method: str
    path: str
    #: Header names lower-cased.
    headers: dict[str, str]
    #: The parsed JSON body, or `None` (no body, or not JSON).
    body: Any
    #: Requests in flight when this one arrived, itself included.
    in_flight: int


@dataclass(frozen=True)
class Reply:
    """What the server sends back for one request."""

    status: int = 200
    body: bytes = b""
    headers: Mapping[str, str] = field(default_factory=dict)
    #: Wait this long before answering (cut short when the server stops).
    delay_s: float = 0.0
    #: Close the connection without answering at all.
    disconnect: bool = False
    #: Send these pieces one at a time, `piece_delay_s` apart, as a server-sent event
    #: stream (the connection closes after the last); `body` is then ignored.
    pieces: Sequence[bytes] = ()
    piece_delay_s: float = 0.0


Behaviour: TypeAlias = Callable[[ServerRequest], Reply]
ToolCallSpec: TypeAlias = tuple[str, Mapping[str, Any]]
LogprobSpec: TypeAlias = tuple[str, float] | Mapping[str, Any]


# --- behaviours ------------------------------------------------------------------------


def completion(
    request: ServerRequest,
    content: str | None,
    *,
    usage: tuple[int, int] | None = None,
    tool_calls: Sequence[ToolCallSpec] | None = None,
    logprobs: Sequence[LogprobSpec] | None = None,
    finish_reason: str | None = None,
) -> dict[str, Any]:
    """A chat-completion body. `usage=None` counts whitespace-separated words."""
    calls = [
        {
            "id": f"call_{index}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(dict(arguments))},
        }
        for index, (name, arguments) in enumerate(tool_calls or ())
    ]
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = calls
    prompt, completion_tokens = usage if usage is not None else _word_usage(request, content)
    choice: dict[str, Any] = {
        "index": 0,
        "message": message,
        "finish_reason": finish_reason or ("tool_calls" if calls else "stop"),
        "logprobs": {"content": [_logprob(x) for x in logprobs]} if logprobs else None,
    }
    body = request.body if isinstance(request.body, dict) else {}
    return {
        "id": f"chatcmpl-{time.monotonic_ns()}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model") or "test-model",
        "choices": [choice],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt + completion_tokens,
        },
    }


def reply(
    content: str | None = "ok",
    *,
    usage: tuple[int, int] | None = None,
    tool_calls: Sequence[ToolCallSpec] | None = None,
    logprobs: Sequence[LogprobSpec] | None = None,
    finish_reason: str | None = None,
) -> Behaviour:
    """Answer 200 with a chat completion.

    Args:
        content: The assistant message content.
        usage: `(prompt_tokens, completion_tokens)`; `None` counts words.
        tool_calls: `(name, arguments)` pairs, sent as OpenAI tool calls `call_0`, `call_1`…
        logprobs: `(token, logprob)` pairs or full OpenAI logprob dicts.
        finish_reason: Defaults to "tool_calls" when there are tool calls, else "stop".
    """

    def behaviour(request: ServerRequest) -> Reply:
        body = completion(
            request,
            content,
            usage=usage,
            tool_calls=tool_calls,
            logprobs=logprobs,
            finish_reason=finish_reason,
        )
        return json_reply(200, body)

    return behaviour


def tool_call(
    name: str, arguments: Mapping[str, Any], *, usage: tuple[int, int] | None = None
) -> Behaviour:
    """Answer with one tool call (`id="call_0"`) and no content."""
    return reply(None, usage=usage, tool_calls=[(name, arguments)])


def streamed(
    chunks: Sequence[Mapping[str, Any] | str], *, done: bool = True, delay_s: float = 0.0
) -> Behaviour:
    """Answer a `stream=True` call: each chunk as one `data:` line of a server-sent event
    stream (a str is sent as it is), then `data: [DONE]` (unless `done` is False: a stream
    cut short); with `delay_s`, one line at a time, that long apart."""
    lines = [c if isinstance(c, str) else json.dumps(c) for c in chunks]
    if done:
        lines.append("[DONE]")
    events = [f"data: {line}\n\n".encode() for line in lines]
    if delay_s > 0:
        return lambda request: Reply(pieces=events, piece_delay_s=delay_s)
    return lambda request: Reply(body=b"".join(events))


def streamed_text(words: Sequence[str], *, delay_s: float = 0.0) -> Behaviour:
    """A streamed answer whose content is `words`, one chunk each, with a usage chunk."""
    chunks: list[Mapping[str, Any]] = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}
    ]
    chunks += [{"choices": [{"index": 0, "delta": {"content": w}}]} for w in words]
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    usage = {"prompt_tokens": 5, "completion_tokens": len(words), "total_tokens": 5 + len(words)}
    chunks.append({"choices": [], "usage": usage})
    return streamed(chunks, delay_s=delay_s)


def status(code: int, body: Any = None, headers: Mapping[str, str] | None = None) -> Behaviour:
    """Answer with HTTP `code`. `body` may be bytes, str or JSON; `None` is an OpenAI error."""
    if body is None:
        body = {"error": {"message": f"test server says {code}", "type": "test", "code": code}}
    payload = body if isinstance(body, bytes) else _encode(body)
    reply_ = Reply(status=code, body=payload, headers=dict(headers or {}))
    return lambda request: reply_


def malformed(body: bytes = b"{not json", *, code: int = 200) -> Behaviour:
    """Answer `code` with `body` as is, labelled `application/json`."""
    return lambda request: Reply(status=code, body=body)


def delay(seconds: float, then: Behaviour | None = None) -> Behaviour:
    """Wait `seconds` (in the server thread), then answer as `then` does (default: echo)."""
    answer = then or echo()
    return lambda request: replace(answer(request), delay_s=seconds)


def disconnect() -> Behaviour:
    """Close the connection without sending any response."""
    return lambda request: Reply(disconnect=True)


def computed(fn: Callable[[dict[str, Any]], str | Reply]) -> Behaviour:
    """Answer from the request JSON: `fn(body)` returns the content, or a full `Reply`."""

    def behaviour(request: ServerRequest) -> Reply:
        result = fn(request.body if isinstance(request.body, dict) else {})
        return result if isinstance(result, Reply) else reply(result)(request)

    return behaviour


def echo(prefix: str = "") -> Behaviour:
    """Answer with `prefix` + the content of the last user message.

    When the request asks for a `json_schema` response format, the answer is what a
    constrained server would send instead: a JSON object that fits the schema, its string
    properties holding that text (`{"answer": "<text>", "sources": []}` for the agents'
    `Answer`).
    """

    def last_user(body: dict[str, Any]) -> str:
        users = [m for m in body.get("messages") or [] if m.get("role") == "user"]
        text = prefix + (str(users[-1].get("content") or "") if users else "")
        schema = _json_schema(body.get("response_format"))
        return text if schema is None else json.dumps(_fitting(schema, text, schema))

    return computed(last_user)


def _json_schema(
    response_format: Any, formats: tuple[str, ...] = ("json_schema",)
) -> dict[str, Any] | None:
    """The JSON schema a `response_format` asks for, if it asks for one in one of `formats`:
    OpenAI's `json_schema` type, llama.cpp's `json_object` with a `schema` key."""
    if not isinstance(response_format, dict) or response_format.get("type") not in formats:
        return None
    if response_format["type"] == "json_object":
        schema = response_format.get("schema")
        return schema if isinstance(schema, dict) else None
    schema = (response_format.get("json_schema") or {}).get("schema")
    return schema if isinstance(schema, dict) else {}


def _fitting(schema: dict[str, Any], text: str, root: dict[str, Any]) -> Any:
    """A value that fits `schema` (pydantic's JSON schemas: `$ref`, `anyOf`, the basic
    types): strings are `text`, numbers 0, arrays empty, objects have every property."""
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for part in ref[2:].split("/"):
            target = target[part]
        return _fitting(target, text, root)
    for key in ("anyOf", "oneOf", "allOf"):
        options = [s for s in schema.get(key) or [] if s.get("type") != "null"]
        if options:
            return _fitting(options[0], text, root)
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type", "object")
    if kind == "string":
        return text
    if kind in ("integer", "number"):
        return 0
    if kind == "boolean":
        return False
    if kind == "array":
        return []
    if kind == "null":
        return None
    properties = schema.get("properties") or {}
    return {name: _fitting(sub, text, root) for name, sub in properties.items()}


def honouring(schema_formats: tuple[str, ...] = ("json_schema",)) -> Behaviour:
    """A server that honours what a request asks, as vLLM does: a forced `tool_choice` gets
    the call (a named tool: that one; "required": one call of every tool offered, in
    parallel) with arguments that fit the tool's parameters; a response format that gives a
    schema in one of `schema_formats` (`json_schema`: OpenAI's, as vLLM; `json_object`
    with `schema`: llama.cpp's), a JSON object that fits it; anything else, "yes". With
    `logprobs`, the content comes with one entry per word."""

    def behaviour(request: ServerRequest) -> Reply:
        body = request.body if isinstance(request.body, dict) else {}
        calls = _forced_calls(body)
        schema = _json_schema(body.get("response_format"), schema_formats)
        content: str | None = "yes"
        if calls:
            content = None
        elif schema is not None:
            content = json.dumps(_fitting(schema, "yes", schema))
        words = [(w, -0.5) for w in (content or "").split()] if body.get("logprobs") else None
        return reply(content, tool_calls=calls or None, logprobs=words or None)(request)

    return behaviour


def _forced_calls(body: dict[str, Any]) -> list[ToolCallSpec]:
    """The calls a forced `tool_choice` makes (none when it forces none)."""
    choice = body.get("tool_choice")
    functions = [t["function"] for t in body.get("tools") or []]
    if isinstance(choice, dict):
        functions = [f for f in functions if f["name"] == choice["function"]["name"]]
    elif choice != "required":
        return []
    calls: list[ToolCallSpec] = []
    for f in functions:
        parameters = f.get("parameters") or {}
        calls.append((f["name"], _fitting(parameters, "yes", parameters)))
    return calls


def probes_honoured(then: Behaviour) -> Behaviour:
    """`then`, with `swarm.llm.capabilities`' probe requests answered by `honouring()`: a
    scripted model behind a server that honours everything, probed first by the CLI."""
    from kimmy_swarm.swarm.llm.capabilities import PROBE_PREFIX

    capable = honouring()

    def behaviour(request: ServerRequest) -> Reply:
        body = request.body if isinstance(request.body, dict) else {}
        first = (body.get("messages") or [{}])[0].get("content") or ""
        return capable(request) if str(first).startswith(PROBE_PREFIX) else then(request)

    return behaviour


def busy_above(
    limit: int, *, busy: Behaviour | None = None, then: Behaviour | None = None
) -> Behaviour:
    """An overloaded server: `busy` (default 503) when more than `limit` requests are in flight."""
    refuse = busy or status(503, headers={"Retry-After": "0"})
    answer = then or echo()
    return lambda request: refuse(request) if request.in_flight > limit else answer(request)


def together(parties: int, *, timeout_s: float = 5.0, then: Behaviour | None = None) -> Behaviour:
    """Hold each request until `parties` requests are waiting at once, then answer all.

    A deterministic concurrency check: if the client never has `parties` requests in flight
    together, the wait times out and the request is answered 500 (and recorded in
    `srv.errors`). Reusable: every group of `parties` requests is released together.
    """
    barrier = threading.Barrier(parties)
    answer = then or echo()

    def behaviour(request: ServerRequest) -> Reply:
        barrier.wait(timeout_s)
        return answer(request)

    return behaviour


def json_reply(code: int, body: Any) -> Reply:
    return Reply(status=code, body=_encode(body))


def _encode(body: Any) -> bytes:
    return body.encode() if isinstance(body, str) else json.dumps(body).encode()


def _logprob(spec: LogprobSpec) -> dict[str, Any]:
    if isinstance(spec, Mapping):
        return dict(spec)
    token, logprob = spec
    return {"token": token, "logprob": logprob, "bytes": list(token.encode()), "top_logprobs": []}


def _word_usage(request: ServerRequest, content: str | None) -> tuple[int, int]:
    body = request.body if isinstance(request.body, dict) else {}
    words = sum(len(str(m.get("content") or "").split()) for m in body.get("messages") or [])
    return words, len((content or "").split())


__all__ = [
    "Behaviour",
    "Reply",
    "ServerRequest",
    "busy_above",
    "completion",
    "computed",
    "delay",
    "disconnect",
    "echo",
    "honouring",
    "json_reply",
    "malformed",
    "probes_honoured",
    "reply",
    "status",
    "streamed",
    "streamed_text",
    "together",
    "tool_call",
]
