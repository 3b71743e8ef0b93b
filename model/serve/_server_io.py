"""The HTTP side of `server.py`: error bodies, request-event collection that stops when the
client leaves, server-sent events, and engine events turned into OpenAI responses."""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import math
import time
from collections.abc import AsyncIterator, Coroutine
from typing import Any, TypeVar

from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ValidationError
from starlette.types import Receive, Scope, Send

from kimmy_swarm.model.errors import EngineOverloadedError
from kimmy_swarm.model.serve.async_engine import RequestStream
from kimmy_swarm.model.serve.chat import OutputMode, assistant_message, token_logprob
from kimmy_swarm.model.serve.protocol import (
    ChatChoice,
    ChatCompletion,
    ChatCompletionChunk,
    ChoiceLogprobs,
    ChunkChoice,
    Completion,
    CompletionChoice,
    CompletionLogprobs,
    Delta,
    ErrorBody,
    ErrorDetail,
    PromptTokensDetails,
    TokenLogprobOut,
    ToolCallDelta,
    Usage,
)
from kimmy_swarm.model.serve.types import TokenEvent
from kimmy_swarm.model.tokenizer import Tokenizer

_T = TypeVar("_T")
DONE = b"data: [DONE]\n\n"


class ApiError(Exception):
    """An error answered as OpenAI's error body with `status`."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.message, self.type = status, message, type
        self.param, self.code, self.headers = param, code, headers

    def body(self) -> dict[str, Any]:
        detail = ErrorDetail(message=self.message, type=self.type, param=self.param, code=self.code)
        return ErrorBody(error=detail).model_dump()

    def response(self) -> JSONResponse:
        return JSONResponse(self.body(), self.status, headers=self.headers)


def same_secret(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode(), expected.encode())


def too_large(size: int, limit: int) -> ApiError:
    return ApiError(
        413,
        f"the request body has {size} bytes; this server takes at most {limit}",
        code="request_too_large",
    )


def overloaded(e: EngineOverloadedError) -> ApiError:
    wait = max(1, math.ceil(e.retry_after))
    return ApiError(
        503,
        f"the engine is overloaded ({e}); retry after {wait} s",
        type="server_error",
        code="overloaded",
        headers={"Retry-After": str(wait)},
    )


_TYPE_TAGS = {"str", "int", "float", "bool", "dict", "list", "none"}


def _loc(parts: tuple[int | str, ...]) -> str:
    """`("messages", 0, "content")` → "messages[0].content"; union-member tags dropped."""
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        elif p.isidentifier() and p not in _TYPE_TAGS and not p[0].isupper():
            out += f".{p}" if out else p
    return out or "(body)"


def first_problem(e: ValidationError) -> tuple[str, str]:
    """(param, message) of the most telling error: a rule broken rather than a wrong type
    in one branch of a union."""
    errors = e.errors(include_url=False)
    pick = next((x for x in errors if not x["type"].endswith("_type")), errors[0])
    param = _loc(tuple(pick["loc"]))
    msg = str(pick["msg"]).removeprefix("Value error, ")
    if pick["type"] == "extra_forbidden":
        return param, f"unrecognized request argument {param!r}: this server does not know it"
    if pick["type"] == "missing":
        return param, f"{param} is required"
    return param, f"{param}: {msg}"


async def collect(stream: RequestStream) -> list[TokenEvent]:
    return [event async for event in stream]


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def _cancel(task: asyncio.Future[Any]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def unless_disconnected(receive: Receive, work: Coroutine[Any, Any, _T]) -> _T | None:
    """Run `work` until it ends or the client disconnects (then it is cancelled: None)."""
    task = asyncio.ensure_future(work)
    watch = asyncio.ensure_future(_disconnected(receive))
    try:
        await asyncio.wait({task, watch}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        await _cancel(watch)
        if not task.done():
            await _cancel(task)
    return None if task.cancelled() else task.result()


class EventStream(StreamingResponse):
    """Server-sent events that stop (and close their source, which aborts the request) as
    soon as the client disconnects, even while no event is being sent."""

    def __init__(self, events: AsyncIterator[bytes]) -> None:
        super().__init__(
            events, media_type="text/event-stream", headers={"Cache-Control": "no-cache"}
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def pump() -> None:
            await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
            async for chunk in self.body_iterator:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})

        try:
            with contextlib.suppress(OSError):  # the client went away during a send
                await unless_disconnected(receive, pump())
        finally:
            await self.body_iterator.aclose()  # type: ignore[attr-defined]


def sse(data: BaseModel | dict[str, Any]) -> bytes:
    body = data if isinstance(data, dict) else data.model_dump(mode="json")
    return b"data: " + json.dumps(body, ensure_ascii=False).encode() + b"\n\n"


def usage(stream: RequestStream, events: list[TokenEvent]) -> Usage:
    n = sum(1 for e in events if e.token_id is not None)
    return Usage(
        prompt_tokens=stream.prompt_tokens,
        completion_tokens=n,
        total_tokens=stream.prompt_tokens + n,
        prompt_tokens_details=PromptTokensDetails(cached_tokens=stream.cached_tokens),
    )


def _finish(events: list[TokenEvent]) -> str:
    reason = next((e.finish_reason for e in reversed(events) if e.finish_reason), "stop")
    return "stop" if reason == "abort" else reason


def _stream_error(e: Exception) -> list[bytes]:
    # the status line (200) is already sent: the error travels as an event, as vLLM does
    err = ApiError(500, f"{type(e).__name__}: {e}", type="server_error")
    return [sse(err.body()), DONE]


class ChatOutput:
    """Engine events → a chat completion, or its chunks."""

    def __init__(self, rid: str, model: str, tokenizer: Tokenizer, mode: OutputMode) -> None:
        self.rid, self.model, self.tokenizer, self.mode = rid, model, tokenizer, mode
        self.created = int(time.time())

    def _logprobs(self, events: list[TokenEvent]) -> list[TokenLogprobOut]:
        return [lp for e in events if (lp := token_logprob(self.tokenizer, e)) is not None]

    def completion(self, events: list[TokenEvent], stream: RequestStream) -> ChatCompletion:
        text = "".join(e.text for e in events)
        message, finish = assistant_message(text, self.mode, _finish(events))
        lps = self._logprobs(events)
        choice = ChatChoice(
            message=message, logprobs=ChoiceLogprobs(content=lps) if lps else None,
            finish_reason=finish,
        )  # fmt: skip
        return ChatCompletion(
            id=self.rid, created=self.created, model=self.model, choices=[choice],
            usage=usage(stream, events),
        )  # fmt: skip

    def _chunk(
        self,
        delta: Delta | None,
        *,
        logprobs: list[TokenLogprobOut] | None = None,
        finish: str | None = None,
        usage: Usage | None = None,
    ) -> bytes:
        choices = [] if delta is None else [
            ChunkChoice(delta=delta, finish_reason=finish,
                        logprobs=ChoiceLogprobs(content=logprobs) if logprobs else None)
        ]  # fmt: skip
        chunk = ChatCompletionChunk(
            id=self.rid, created=self.created, model=self.model, choices=choices, usage=usage
        )
        body = chunk.model_dump(mode="json", exclude={"usage"} if usage is None else set())
        for c, d in zip(body["choices"], choices, strict=True):
            c["delta"] = d.delta.model_dump(mode="json", exclude_none=True)
        return sse(body)

    async def sse(self, stream: RequestStream, *, include_usage: bool) -> AsyncIterator[bytes]:
        """Role first, then content (or, when tools may be called, the whole answer at the
        end: a tool call is only known once the text is complete: its content, then its
        tool calls), the finish, the usage."""
        yield self._chunk(Delta(role="assistant", content=""))
        buffered = bool(self.mode.tool_names)
        events: list[TokenEvent] = []
        try:
            async for e in stream:
                events.append(e)
                lp = token_logprob(self.tokenizer, e)
                if not buffered and (e.text or lp is not None):
                    yield self._chunk(Delta(content=e.text), logprobs=None if lp is None else [lp])
        except Exception as exc:  # noqa: BLE001 — reported in the stream (see _stream_error)
            for line in _stream_error(exc):
                yield line
            return
        finish = _finish(events)
        if buffered:
            message, finish = assistant_message("".join(e.text for e in events), self.mode, finish)
            lps = self._logprobs(events) or None
            if message.content is not None or not message.tool_calls:
                yield self._chunk(Delta(content=message.content), logprobs=lps)
                lps = None
            if message.tool_calls:
                calls = [
                    ToolCallDelta(index=i, **c.model_dump())
                    for i, c in enumerate(message.tool_calls)
                ]
                yield self._chunk(Delta(tool_calls=calls), logprobs=lps)
        yield self._chunk(Delta(), finish=finish)
        if include_usage:
            yield self._chunk(None, usage=usage(stream, events))
        yield DONE


class TextOutput:
    """Engine events → a text completion (`/v1/completions`), or its chunks."""

    def __init__(self, rid: str, model: str, tokenizer: Tokenizer | None) -> None:
        self.rid, self.model, self.tokenizer = rid, model, tokenizer
        self.created = int(time.time())

    def _logprobs(self, events: list[TokenEvent], offset: int = 0) -> CompletionLogprobs | None:
        lps = [lp for e in events if (lp := token_logprob(self.tokenizer, e)) is not None]
        if not lps:
            return None
        offsets = []
        for lp in lps:
            offsets.append(offset)
            offset += len(lp.token)
        return CompletionLogprobs(
            tokens=[lp.token for lp in lps],
            token_ids=[lp.token_id for lp in lps],
            token_logprobs=[lp.logprob for lp in lps],
            top_logprobs=[{t.token: t.logprob for t in lp.top_logprobs} for lp in lps],
            text_offset=offsets,
        )

    def _body(
        self, text: str, logprobs: CompletionLogprobs | None, finish: str | None, u: Usage | None
    ) -> Completion:
        choices = [] if u is not None and not text and finish is None else [
            CompletionChoice(text=text, logprobs=logprobs, finish_reason=finish)
        ]  # fmt: skip
        return Completion(
            id=self.rid, created=self.created, model=self.model, choices=choices, usage=u
        )

    def completion(self, events: list[TokenEvent], stream: RequestStream) -> Completion:
        text = "".join(e.text for e in events)
        return self._body(text, self._logprobs(events), _finish(events), usage(stream, events))

    async def sse(self, stream: RequestStream, *, include_usage: bool) -> AsyncIterator[bytes]:
        events: list[TokenEvent] = []
        offset = 0
        try:
            async for e in stream:
                events.append(e)
                lps = self._logprobs([e], offset)
                offset += len(lps.tokens[0]) if lps else 0
                if e.text or lps is not None:
                    yield sse(self._body(e.text, lps, None, None).model_dump(exclude={"usage"}))
        except Exception as exc:  # noqa: BLE001 — reported in the stream (see _stream_error)
            for line in _stream_error(exc):
                yield line
            return
        yield sse(self._body("", None, _finish(events), None).model_dump(exclude={"usage"}))
        if include_usage:
            yield sse(self._body("", None, None, usage(stream, events)))
        yield DONE
