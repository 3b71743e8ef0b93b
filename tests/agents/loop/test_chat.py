"""`chat_within_budget`: one model call whose rejection as too long teaches the budget and is
made again when the caller's `OnOverflow` says how (the sub-agent's digest and the
orchestrator's smaller turn are tested end to end in `tests/agents/synthesis/
test_policy_digest.py` and `tests/agents/orchestrator/test_orchestrator_loop.py`)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from kimmy_swarm.agents.loop import Rejection, chat_within_budget
from kimmy_swarm.swarm.errors import ContextOverflowError, ModelRequestError
from kimmy_swarm.swarm.llm import ScriptedChat, TokenBudget
from kimmy_swarm.swarm.llm.types import ChatResponse
from kimmy_swarm.swarm.schema import Usage

TOO_LONG = ModelRequestError(
    "answered HTTP 400: prompt (3000 tokens) + max_tokens (512) is more than max_model_len 4096"
)
REFUSED = ModelRequestError("answered HTTP 400: unknown parameter 'foo'")
OPENING = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "x" * 4000}]
SHORTER = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "digest"}]


def _answer(prompt_tokens: int = 0) -> ChatResponse:
    return ChatResponse(content="done", usage=Usage(prompt_tokens=prompt_tokens))


@dataclass
class Hook:
    """An `OnOverflow` that retries up to `retries_left` times, sending `resent` (None:
    give up), and keeps what it was shown."""

    retries_left: int = 1
    resent: Sequence[dict[str, Any]] | None = None
    shown: list[tuple[Rejection, bool | None]] = field(default_factory=list)

    def retries(self, rejection: Rejection) -> bool:
        self.shown.append((rejection, None))
        return rejection.count < self.retries_left

    async def resend(self, rejection: Rejection, learned: bool) -> Sequence[dict[str, Any]] | None:
        self.shown.append((rejection, learned))
        return self.resent


def _chat(model: ScriptedChat, budget: TokenBudget, hook: Hook | None, **kw: Any) -> Any:
    options = {"temperature": 0.0}
    return asyncio.run(
        chat_within_budget(
            model, budget, OPENING, options, max_tokens=kw.get("max_tokens", 512),
            on_overflow=hook,
        )
    )  # fmt: skip


def test_an_answered_call_returns_the_conversation_and_corrects_the_budget() -> None:
    model = ScriptedChat([_answer(prompt_tokens=2000)])
    budget = TokenBudget(4096)
    response, sent = _chat(model, budget, Hook())
    assert response.content == "done" and sent == OPENING and sent is not OPENING
    assert model.calls[0][1]["max_tokens"] == 512 and model.calls[0][1]["temperature"] == 0.0
    assert budget.observations == 1 and budget.chars_per_token < 2.5  # the server's count


def test_a_rejection_teaches_the_budget_before_the_conversation_is_sent_again() -> None:
    model = ScriptedChat([TOO_LONG, _answer()])
    budget = TokenBudget()
    hook = Hook(resent=SHORTER)
    response, sent = _chat(model, budget, hook)
    assert response.content == "done" and sent == SHORTER
    assert [messages for messages, _ in model.calls] == [OPENING, SHORTER]
    assert budget.rejections == 1 and budget.context_tokens == 4096  # the server said so
    (asked, _), (resend, learned) = hook.shown
    assert asked is resend and learned is True
    assert asked.count == 0 and asked.max_tokens == 512 and asked.messages == OPENING
    assert asked.error is TOO_LONG and asked.overflow.prompt_tokens == 3000


def test_the_servers_error_stands_when_the_caller_gives_up() -> None:
    # no retry at all: the budget learns nothing
    budget = TokenBudget()
    with pytest.raises(ModelRequestError, match="max_model_len"):
        _chat(ScriptedChat([TOO_LONG]), budget, Hook(retries_left=0))
    assert budget.rejections == 0
    # a retry the caller has nothing to send for: the budget has learned
    with pytest.raises(ModelRequestError, match="max_model_len"):
        _chat(ScriptedChat([TOO_LONG]), budget, Hook(resent=None))
    assert budget.rejections == 1
    # no hook: the error goes as it is
    with pytest.raises(ModelRequestError, match="max_model_len"):
        _chat(ScriptedChat([TOO_LONG]), TokenBudget(), None)


def test_other_rejections_are_not_shown_to_the_caller() -> None:
    hook = Hook(resent=SHORTER)
    with pytest.raises(ModelRequestError, match="unknown parameter"):
        _chat(ScriptedChat([REFUSED]), TokenBudget(), hook)
    assert hook.shown == []


def test_the_caller_may_raise_its_own_error_for_a_rejection() -> None:
    class Refuse(Hook):
        def retries(self, rejection: Rejection) -> bool:
            raise ContextOverflowError(f"does not fit: {rejection.error}") from rejection.error

    with pytest.raises(ContextOverflowError, match="does not fit") as caught:
        _chat(ScriptedChat([TOO_LONG]), TokenBudget(), Refuse())
    assert caught.value.__cause__ is TOO_LONG


def test_max_tokens_sized_per_try_from_the_budget_it_learned() -> None:
    model = ScriptedChat([TOO_LONG, TOO_LONG, _answer()])
    budget = TokenBudget(8192)
    sizes: list[int] = []

    def room(sent: Sequence[dict[str, Any]]) -> int:
        sizes.append(budget.context_tokens - budget.prompt_tokens(sent) - budget.margin)
        return min(1500, sizes[-1])

    hook = Hook(retries_left=2, resent=OPENING)
    response, _ = _chat(model, budget, hook, max_tokens=room)
    assert response.content == "done"
    assert [options["max_tokens"] for _, options in model.calls] == [min(1500, s) for s in sizes]
    assert sizes[0] > sizes[1]  # the server named a 4,096 context: less room after
    assert [r.count for r, learned in hook.shown if learned is not None] == [0, 1]
