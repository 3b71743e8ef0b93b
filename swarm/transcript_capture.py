"""What the store keeps of each sub-agent's conversation: the transcript setting, and the
size-capped records of messages, answers, tool arguments and results that go into events.

    RunConfig(transcripts=TranscriptCapture(content=False))   # a sensitive run: sizes only
    KIMMY_TRANSCRIPTS=off kimmy review …                        # the same from the shell

With `content` on (the default), every model call records the messages it sent that the
previous call of the same attempt had not (the whole conversation is their concatenation),
the request's shape (tools offered, structured output, max_tokens) and the model's answer
(content, tool calls, finish reason); every tool call its arguments and result. Each text is
kept whole up to `max_chars` characters; a longer one is cut there and says so:
`… [cut at 16,000 of 52,313 characters]`. With `content` off, only what is not content is
kept: roles, tool names, finish reasons, sizes, and error messages (a tool's error may quote
its arguments).
"""

from __future__ import annotations

import json
import os
import reprlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kimmy_swarm.swarm.errors import ConfigError

if TYPE_CHECKING:
    from kimmy_swarm.swarm.llm.types import ChatResponse

#: Characters of one text (message content, tool arguments, tool result) kept by default.
DEFAULT_MAX_CHARS = 16_000
ENV_MODE = "KIMMY_TRANSCRIPTS"
ENV_MAX_CHARS = "KIMMY_TRANSCRIPT_MAX_CHARS"
_MODES = {"full": True, "on": True, "off": False, "metadata": False}


@dataclass(frozen=True, slots=True)
class TranscriptCapture:
    """The transcript setting of a run (`RunConfig.transcripts`).

    Attributes:
        content: keep what was said (messages, answers, tool arguments and results);
            False keeps only roles, tool names, finish reasons and sizes.
        max_chars: characters of one text kept whole; longer texts are cut, saying where.
    """

    content: bool = True
    max_chars: int = DEFAULT_MAX_CHARS

    def __post_init__(self) -> None:
        if not isinstance(self.content, bool):
            raise ConfigError(f"transcripts content must be true or false, got {self.content!r}")
        if type(self.max_chars) is not int or self.max_chars < 100:
            raise ConfigError(
                f"transcripts max_chars must be an integer ≥ 100, got {self.max_chars!r}"
            )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> TranscriptCapture:
        """The setting from `KIMMY_TRANSCRIPTS` (`full`, the default, or `off`) and
        `KIMMY_TRANSCRIPT_MAX_CHARS`.

        Raises:
            ConfigError: a variable has a value that is not allowed.
        """
        env = os.environ if environ is None else environ
        mode = env.get(ENV_MODE, "full").strip().lower() or "full"
        if mode not in _MODES:
            raise ConfigError(
                f"{ENV_MODE}={env.get(ENV_MODE)!r} is not allowed; use full or off"
            )
        raw = env.get(ENV_MAX_CHARS, "").strip()
        try:
            limit = int(raw) if raw else DEFAULT_MAX_CHARS
        except ValueError:
            raise ConfigError(
                f"{ENV_MAX_CHARS}={raw!r} is not an integer number of characters"
            ) from None
        return cls(content=_MODES[mode], max_chars=limit)

    @classmethod
    def parse(cls, mode: str) -> TranscriptCapture:
        """`full` or `off` (the CLI's `--transcripts`), with the default size cap."""
        key = mode.strip().lower()
        if key not in _MODES:
            raise ConfigError(f"transcripts mode {mode!r} is not allowed; use full or off")
        return cls(content=_MODES[key])

    # --- records ------------------------------------------------------------------------

    def text(self, value: str | None) -> str | None:
        """`value` whole, or cut at `max_chars` with the cut stated."""
        return cut(value, self.max_chars) if value is not None else None

    def message(self, message: Any) -> dict[str, Any]:
        """One chat message as recorded (a dict in the OpenAI shape)."""
        msg = message if isinstance(message, dict) else message.to_openai()
        content = msg.get("content")
        if not self.content:
            out: dict[str, Any] = {"role": msg.get("role")}
            if isinstance(content, str):
                out["chars"] = len(content)
            if msg.get("tool_calls"):
                out["tool_calls"] = [_call_name(c) for c in msg["tool_calls"]]
            if msg.get("tool_call_id"):
                out["tool_call_id"] = msg["tool_call_id"]
            return out
        if isinstance(content, str) and len(content) > self.max_chars:
            return {**msg, "content": self.text(content)}
        if not isinstance(content, str | None):  # content parts (text, images): as JSON
            return {**msg, "content": self.text(json.dumps(content, default=str))}
        return msg

    def request(self, options: Mapping[str, Any]) -> dict[str, Any]:
        """The shape of a request: tools offered, structured output, sampling settings."""
        out: dict[str, Any] = {}
        tools = options.get("tools")
        if tools:
            out["tools"] = [_tool_name(t) for t in tools]
        fmt = options.get("response_format")
        if isinstance(fmt, Mapping):
            schema = fmt.get("json_schema")
            name = schema.get("name") if isinstance(schema, Mapping) else None
            out["response_format"] = name or fmt.get("type")
        for key in ("max_tokens", "temperature", "tool_choice"):
            value = options.get(key)
            if isinstance(value, int | float | str) and not isinstance(value, bool):
                out[key] = value
        return out

    def response(self, response: ChatResponse) -> dict[str, Any]:
        """The model's answer: content, tool calls (name, arguments, id), finish reason."""
        out: dict[str, Any] = {"finish_reason": response.finish_reason}
        if self.content:
            out["content"] = self.text(response.content)
            out["tool_calls"] = [
                {
                    "id": c.id,
                    "name": c.function.name,
                    "arguments": self.text(c.function.arguments),
                }
                for c in response.tool_calls
            ]
        else:
            out["chars"] = len(response.content or "")
            out["tool_calls"] = [{"id": c.id, "name": c.function.name} for c in response.tool_calls]
        return out

    def value(self, value: Any) -> str | None:
        """A tool's argument or result as recorded text (None with content off).

        Strings are kept (cut at `max_chars`); other values are shown by a bounded repr,
        so a huge structure costs no more than its first items.
        """
        if not self.content:
            return None
        if isinstance(value, str):
            return self.text(value)
        return self.text(_REPR.repr(value))


def cut(text: str, limit: int) -> str:
    """`text` whole, or its first `limit` characters and where it was cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]} … [cut at {limit:,} of {len(text):,} characters]"


def _bounded_repr() -> reprlib.Repr:
    r = reprlib.Repr()
    r.maxlevel, r.maxlist, r.maxtuple, r.maxdict, r.maxset = 4, 30, 30, 30, 30
    r.maxstring, r.maxother, r.maxlong = 2_000, 400, 80
    return r


_REPR = _bounded_repr()


def _call_name(call: Any) -> str:
    fn = call.get("function") if isinstance(call, Mapping) else getattr(call, "function", None)
    if isinstance(fn, Mapping):
        return str(fn.get("name", "?"))
    return str(getattr(fn, "name", "?"))


def _tool_name(tool: Any) -> str:
    if isinstance(tool, Mapping):
        fn = tool.get("function")
        if isinstance(fn, Mapping):
            return str(fn.get("name", "?"))
        return str(tool.get("name", "?"))
    return str(getattr(tool, "name", "?"))


def new_messages(
    sent: Sequence[Any] | None, messages: Sequence[Any]
) -> tuple[int, Sequence[Any]]:
    """Where `messages` goes on from what was `sent` before: `(first, new)`.

    A conversation grows by appending, so the messages of the previous call are (the same
    objects) at the start of this one; only the rest is new. Otherwise (a conversation
    rebuilt, or another one) the whole of it is new, from 0.
    """
    n = len(sent) if sent else 0
    if n and len(messages) >= n and all(a is b for a, b in zip(sent, messages, strict=False)):
        return n, messages[n:]
    return 0, messages


__all__ = [
    "DEFAULT_MAX_CHARS",
    "ENV_MAX_CHARS",
    "ENV_MODE",
    "TranscriptCapture",
    "cut",
    "new_messages",
]
