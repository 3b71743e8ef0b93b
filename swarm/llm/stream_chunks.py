"""A streamed chat completion (`stream=True`): its server-sent chunks, put back together.

An OpenAI-compatible server answers `stream=True` with `data: {chunk}` lines: the role, then
pieces of the content (`choices[0].delta.content`) and of each tool call
(`delta.tool_calls[i]`: its id and name once, its arguments in pieces), the finish reason,
and — with `stream_options.include_usage` — a last chunk with the usage; `data: [DONE]`
ends it. `ChunkAssembler` takes the chunks in order, gives back each piece of text as a
`Delta` the moment it arrives (what a live view shows), and at the end the completion the
chunks add up to, in the shape a non-streamed answer has, so one parser reads both
(`_openai_wire.parse_completion`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

#: What a piece of a streamed answer is: its text, a tool call's name, or a piece of a tool
#: call's arguments.
DeltaKind = Literal["content", "tool_name", "tool_arguments"]


@dataclass(frozen=True, slots=True)
class Delta:
    """One piece of a streamed answer, as it arrived.

    Attributes:
        text: the piece.
        kind: `content`, `tool_name` or `tool_arguments`.
        index: the tool call it belongs to (0 for content).
    """

    text: str
    kind: DeltaKind = "content"
    index: int = 0


#: Receives each piece of a streamed answer as it arrives.
DeltaFn = Callable[[Delta], None]


class StreamError(Exception):
    """The stream said it failed (an `error` object in place of a chunk)."""


def sse_data(line: str) -> str | None:
    """The payload of one `data:` line of a server-sent event stream (None: another field,
    a comment or a blank line)."""
    if not line.startswith("data:"):
        return None
    return line[5:].strip()


class ChunkAssembler:
    """The chunks of one streamed chat completion, put back together (see the module)."""

    def __init__(self) -> None:
        self._content: list[str] = []
        self._calls: dict[int, dict[str, Any]] = {}
        self._logprobs: list[Any] = []
        self._finish: str | None = None
        self._usage: Any = None
        self._model = ""
        #: Chunks taken so far.
        self.chunks = 0

    def add(self, chunk: Any) -> list[Delta]:
        """Take one chunk (a decoded `data:` payload); returns the pieces of text it adds.

        Raises:
            StreamError: the chunk is the server's error report.
            ValueError: the chunk is not a chat-completion chunk.
        """
        if not isinstance(chunk, dict):
            raise ValueError(f"a stream chunk is a JSON object, got {json.dumps(chunk)[:200]}")
        if "error" in chunk and "choices" not in chunk:
            error = chunk["error"]
            message = error.get("message") if isinstance(error, dict) else error
            raise StreamError(str(message))
        self.chunks += 1
        self._model = chunk.get("model") or self._model
        if chunk.get("usage"):
            self._usage = chunk["usage"]
        out: list[Delta] = []
        for choice in chunk.get("choices") or ():
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue  # n > 1 is never asked for
            delta = choice.get("delta") or {}
            text = delta.get("content")
            if text:
                self._content.append(text)
                out.append(Delta(text))
            for piece in delta.get("tool_calls") or ():
                out += self._tool_piece(piece)
            logprobs = choice.get("logprobs")
            if isinstance(logprobs, dict) and logprobs.get("content"):
                self._logprobs += logprobs["content"]
            if choice.get("finish_reason"):
                self._finish = choice["finish_reason"]
        return out

    def _tool_piece(self, piece: dict[str, Any]) -> list[Delta]:
        index = int(piece.get("index", len(self._calls)))
        call = self._calls.setdefault(
            index, {"id": None, "type": "function", "function": {"name": "", "arguments": ""}}
        )
        if piece.get("id"):
            call["id"] = piece["id"]
        function = piece.get("function") or {}
        out: list[Delta] = []
        if function.get("name"):
            call["function"]["name"] += function["name"]
            out.append(Delta(function["name"], "tool_name", index))
        arguments = function.get("arguments")
        if arguments:
            if not isinstance(arguments, str):  # some servers send an object
                arguments = json.dumps(arguments)
            call["function"]["arguments"] += arguments
            out.append(Delta(arguments, "tool_arguments", index))
        return out

    def completion(self) -> dict[str, Any]:
        """What the chunks add up to, as a non-streamed chat completion's JSON body."""
        message: dict[str, Any] = {
            "role": "assistant",
            "content": "".join(self._content) if self._content else None,
        }
        if self._calls:
            message["tool_calls"] = [
                {**call, "id": call["id"] or f"call_{i}"} for i, call in sorted(self._calls.items())
            ]
        choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": self._finish}
        if self._logprobs:
            choice["logprobs"] = {"content": self._logprobs}
        return {"model": self._model, "choices": [choice], "usage": self._usage}


__all__ = [
    "ChunkAssembler",
    "Delta",
    "DeltaFn",
    "DeltaKind",
    "StreamError",
    "sse_data",
]
