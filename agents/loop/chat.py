"""One model call within a token budget: a rejection as too long teaches the budget, and
the call is made again where the caller can make it fit.

Both agent loops call their model through `chat_within_budget`: a sub-agent's
(`agents.loop.policy`) and the orchestrator's (`agents.orchestrator.agent.ModelTurns`).

- Each try's `max_tokens` is fixed, or sized from the conversation (the orchestrator gives
  a turn what the context leaves of its `max_tokens`).
- A server's rejection as too long (`agents.synthesis.context_overflow`) goes to the
  caller's `OnOverflow`: `retries` says whether to try again at all (or raises the caller's
  own error); then the budget learns from it (`TokenBudget.reject`), and `resend` gives the
  conversation to send again, or None to give up (the server's error is raised).
- An answered call's prompt count corrects the budget (`TokenBudget.observe`).

A sub-agent sends its opening again once, with the upstream results reduced to a digest;
the orchestrator asks the same conversation again while the budget learns, up to a limit.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from kimmy_swarm.swarm.errors import ModelRequestError
from kimmy_swarm.swarm.llm.overflow import context_overflow

if TYPE_CHECKING:
    from kimmy_swarm.swarm.llm.budget import TokenBudget
    from kimmy_swarm.swarm.llm.overflow import ContextOverflow
    from kimmy_swarm.swarm.llm.protocol import ChatModel
    from kimmy_swarm.swarm.llm.types import ChatResponse

#: The `max_tokens` of a call: fixed, or sized from the conversation before each try.
MaxTokens = int | Callable[[Sequence[dict[str, Any]]], int]


@dataclass(frozen=True)
class Rejection:
    """One call the server rejected as too long.

    Attributes:
        overflow: the numbers the server gave.
        error: the server's error.
        messages: the conversation that was sent.
        max_tokens: the call's `max_tokens`.
        count: how many tries of this chat were rejected before it.
    """

    overflow: ContextOverflow
    error: ModelRequestError
    messages: list[dict[str, Any]]
    max_tokens: int
    count: int


class OnOverflow(Protocol):
    """What a caller does when the server rejects its call as too long."""

    def retries(self, rejection: Rejection) -> bool:
        """Whether to teach the budget and try again (False: the server's error is raised);
        may raise the caller's own error instead."""
        ...

    async def resend(self, rejection: Rejection, learned: bool) -> Sequence[dict[str, Any]] | None:
        """The conversation to send next, once the budget has learned from the rejection
        (`learned`: whether that changed it); None gives up (the server's error is raised)."""
        ...


async def chat_within_budget(
    model: ChatModel,
    budget: TokenBudget,
    messages: Sequence[dict[str, Any]],
    options: Mapping[str, Any],
    *,
    max_tokens: MaxTokens,
    on_overflow: OnOverflow | None = None,
) -> tuple[ChatResponse, list[dict[str, Any]]]:
    """Call `model` with `messages` and `options` (their `tools` count in the budget).

    Returns:
        The response, and the conversation that was answered (the one sent last).

    Raises:
        ModelRequestError: the server rejected the call, and it was not made again.
    """
    tools = options.get("tools")
    sent = list(messages)
    for count in itertools.count():
        limit = max_tokens(sent) if callable(max_tokens) else max_tokens
        try:
            response = await model.chat(sent, max_tokens=limit, **options)
        except ModelRequestError as exc:
            overflow = context_overflow(exc)
            if overflow is None or on_overflow is None:
                raise
            rejection = Rejection(overflow, exc, sent, limit, count)
            if not on_overflow.retries(rejection):
                raise
            learned = budget.reject(sent, overflow, limit, tools)
            resent = await on_overflow.resend(rejection, learned)
            if resent is None:
                raise
            sent = list(resent)
            continue
        budget.observe(sent, response.usage.prompt_tokens, tools)
        return response, sent
    raise AssertionError("unreachable")  # pragma: no cover


__all__ = ["MaxTokens", "OnOverflow", "Rejection", "chat_within_budget"]
