"""`ScriptedChat`: a `ChatModel` that plays back a script — the test double for sub-agents.

It is strict on purpose: a call beyond the script raises `UnexpectedModelCall`, and
`assert_consumed()` (run automatically by `async with`) fails if steps were left unused, so
a test notices when code calls the model more or less often than it should.

Example:
    async with ScriptedChat(["first answer", ModelTimeoutError("slow"), "second"]) as m:
        await m.chat([{"role": "user", "content": "hi"}])   # -> content "first answer"
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Sequence
from types import TracebackType
from typing import Any, Self, TypeAlias

from kimmy_swarm.swarm.llm.types import ChatResponse, Message, MessageLike
from kimmy_swarm.swarm.schema import Usage

#: What a callable step returns: a full response or the content of one.
StepResult: TypeAlias = ChatResponse | str
#: A callable step: `(messages, options) -> ChatResponse | str`, sync or async.
StepFunction: TypeAlias = Callable[
    [list[dict[str, Any]], dict[str, Any]], StepResult | Awaitable[StepResult]
]
#: One step of a script: a response, its content, an exception to raise, or a function.
Step: TypeAlias = ChatResponse | str | BaseException | StepFunction

_PREVIEW_CHARS = 120


class UnexpectedModelCall(AssertionError):
    """A `ScriptedChat` was called more times than its script has steps."""


class ScriptedChat:
    """Answers each `chat` call with the next scripted step.

    Steps:
        - `ChatResponse`: returned as is (its `usage` is whatever it carries).
        - `str`: a content-only response, `finish_reason="stop"`, `usage.model_calls=1`.
        - an exception instance: raised (e.g. `ModelRateLimitedError(...)` to test retries).
        - a callable `(messages, options) -> ChatResponse | str` (may be async): computed
          from the call; `messages` are plain dicts, `options` holds every keyword option.

    Steps are taken in the order calls start, so concurrent callers get them in the
    order they called. Every call is recorded in `calls` as `(messages, options)`.

    Args:
        steps: The script.
        name: The model name reported by `name` and in string-step responses.

    Raises:
        TypeError: A step is none of the kinds above (an exception *class* included).
    """

    def __init__(self, steps: Iterable[Step] = (), *, name: str = "scripted") -> None:
        self._steps: list[Step] = list(steps)
        for index, step in enumerate(self._steps):
            _check_step(index, step)
        self.name = name
        self.calls: list[tuple[list[dict[str, Any]], dict[str, Any]]] = []
        self._repeat_last = False

    @classmethod
    def always(cls, step: Step, *, name: str = "scripted") -> ScriptedChat:
        """A model that answers any number of calls with `step` (e.g. for load tests)."""
        model = cls([step], name=name)
        model._repeat_last = True
        return model

    @property
    def remaining(self) -> int:
        """How many scripted steps no call has used yet (0 for `always`)."""
        return 0 if self._repeat_last else max(0, len(self._steps) - len(self.calls))

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
    ) -> ChatResponse:
        """Record the call and play the next step.

        Raises:
            UnexpectedModelCall: The script has no step left for this call.
        """
        wire = [m.to_openai() if isinstance(m, Message) else dict(m) for m in messages]
        options: dict[str, Any] = {
            "tools": list(tools) if tools is not None else None,
            "tool_choice": tool_choice,
            "response_format": response_format,
            "temperature": temperature,
            "max_tokens": max_tokens,
            "stop": [stop] if isinstance(stop, str) else (list(stop) if stop else None),
            "seed": seed,
            "logprobs": logprobs,
            "top_logprobs": top_logprobs,
        }
        number = len(self.calls) + 1
        self.calls.append((wire, options))
        if number <= len(self._steps):
            step = self._steps[number - 1]
        elif self._repeat_last:
            step = self._steps[-1]
        else:
            raise UnexpectedModelCall(
                f"ScriptedChat {self.name!r} got call #{number} but its script has only "
                f"{len(self._steps)} step(s); last user message: {_last_user(wire)!r}"
            )
        return await self._play(step, number, wire, options)

    def assert_consumed(self) -> None:
        """Fail if scripted steps were never used.

        Raises:
            AssertionError: Says how many steps are left, and how many calls were made.
        """
        if self.remaining:
            raise AssertionError(
                f"ScriptedChat {self.name!r}: {self.remaining} of {len(self._steps)} scripted "
                f"step(s) were never used ({len(self.calls)} call(s) made)"
            )

    async def aclose(self) -> None:
        """Nothing to release; present for the `ChatModel` protocol."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:  # on failure, the original error is the one worth seeing
            self.assert_consumed()

    async def _play(
        self, step: Step, number: int, messages: list[dict[str, Any]], options: dict[str, Any]
    ) -> ChatResponse:
        if isinstance(step, BaseException):
            raise step
        if isinstance(step, ChatResponse | str):
            return self._as_response(step, number)
        result = step(messages, options)
        if inspect.isawaitable(result):
            result = await result
        if not isinstance(result, ChatResponse | str):
            raise TypeError(
                f"ScriptedChat {self.name!r}: step for call #{number} returned "
                f"{type(result).__name__}; expected ChatResponse or str"
            )
        return self._as_response(result, number)

    def _as_response(self, result: StepResult, number: int) -> ChatResponse:
        if isinstance(result, ChatResponse):
            return result
        return ChatResponse(
            content=result, finish_reason="stop", usage=Usage(model_calls=1), model=self.name
        )


def _check_step(index: int, step: object) -> None:
    if isinstance(step, type) and issubclass(step, BaseException):
        raise TypeError(
            f"step {index} is the exception class {step.__name__}; pass an instance, "
            f"e.g. {step.__name__}('message')"
        )
    if not isinstance(step, ChatResponse | str | BaseException) and not callable(step):
        raise TypeError(
            f"step {index} is a {type(step).__name__}; expected ChatResponse, str, "
            "an exception instance or a callable (messages, options) -> ChatResponse | str"
        )


def _last_user(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            text = str(message.get("content") or "")
            return text if len(text) <= _PREVIEW_CHARS else text[:_PREVIEW_CHARS] + "…"
    return "(no user message)"


__all__ = ["ScriptedChat", "Step", "StepFunction", "UnexpectedModelCall"]
