"""`TokenBudget` and `TokenEstimate`: the estimate only moves to the pessimistic side, a
rejection teaches the ratio and the context, a shared estimate learns for every reader; and
`context_tokens` reads a client's context length."""

from __future__ import annotations

from typing import Any

import pytest

from kimmy_swarm.model.presets import tiny_tokenizer
from kimmy_swarm.swarm.errors import ConfigError
from kimmy_swarm.swarm.llm import (
    ContextOverflow,
    ScriptedChat,
    TokenBudget,
    TokenEstimate,
    context_tokens,
)
from kimmy_swarm.swarm.llm.budget import DEFAULT_CONTEXT_TOKENS
from tests.agents.synthesis.conftest import varied_texts


def _messages(text: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": "Be brief."}, {"role": "user", "content": text}]


def test_budget_is_context_minus_max_tokens_minus_margin() -> None:
    budget = TokenBudget(4096)
    assert (budget.margin, budget.chars_per_token) == (128, 2.5)
    assert budget.prompt_limit(1024) == 4096 - 1024 - 128
    assert budget.tokens("x" * 100) == 40 and budget.chars(40) == 100
    # the chat template's tokens are counted per message
    assert budget.prompt_tokens(_messages("x" * 100)) > budget.tokens(len("Be brief.") + 100)
    assert TokenBudget(4096, margin=0).prompt_limit(96) == 4000


def test_the_ratio_only_moves_to_the_pessimistic_side() -> None:
    tokenizer = tiny_tokenizer()
    budget = TokenBudget(4096)
    text = " ".join(varied_texts(10, seed=2))
    messages = _messages(text)
    real = len(tokenizer.encode(text))  # ~1.5 characters a token for this small BPE
    budget.observe(messages, real + 20)
    learned = budget.chars_per_token
    assert learned < 2.5 and budget.calibrated
    # an optimistic count (a large vocabulary, or words counted as tokens) changes nothing
    budget.observe(messages, real // 3)
    assert budget.chars_per_token == learned
    # counts too small to tell (or none: a scripted model) are ignored
    budget.observe(_messages("hi"), 30)
    budget.observe(messages, 0)
    assert budget.chars_per_token == learned and budget.observations == 2
    # a more pessimistic one wins; estimates then cover the server's count
    budget.observe(messages, real * 2)
    assert budget.chars_per_token < learned
    assert budget.prompt_tokens(messages) >= real * 2


def test_a_rejection_lowers_the_ratio_and_learns_the_context() -> None:
    budget = TokenBudget()  # nobody said the context: 4,096 assumed, not known
    assert (budget.context_tokens, budget.context_known) == (4096, False)
    messages = _messages("x" * 10_000)
    assert budget.reject(messages, ContextOverflow(prompt_tokens=8000, context_tokens=2048), 512)
    assert (budget.context_tokens, budget.context_known) == (2048, True)
    assert budget.chars_per_token == pytest.approx(10_009 / (8000 - 24), rel=1e-3)
    # a rejection that says nothing still shrinks the ratio, down to a floor
    before = budget.chars_per_token
    assert budget.reject(messages, ContextOverflow(), 512)
    assert budget.chars_per_token == pytest.approx(before * 0.8)
    for _ in range(40):
        budget.reject(messages, ContextOverflow(), 512)
    assert budget.chars_per_token == 0.25
    assert not budget.reject(messages, ContextOverflow(), 512)  # nothing left to learn
    # a known context only goes down
    budget.tell_context(8192)
    assert budget.context_tokens == 2048


@pytest.mark.parametrize("kwargs", [{"context_tokens": 8}, {"chars_per_token": 0.1},
                                    {"context_tokens": 100, "margin": 100}])  # fmt: skip
def test_bad_budgets_are_config_errors(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        TokenBudget(**kwargs)


def test_budgets_over_one_estimate_learn_for_each_other() -> None:
    estimate = TokenEstimate()
    small, large = TokenBudget(2048, estimate=estimate), TokenBudget(32_768, estimate=estimate)
    messages = _messages("x" * 4000)
    small.observe(messages, 3000)  # far more tokens than 2.5 characters each
    assert large.chars_per_token == small.chars_per_token == estimate.chars_per_token < 2.5
    assert large.calibrated and large.observations == 1
    assert large.reject(messages, ContextOverflow(prompt_tokens=4000), 512)
    assert small.rejections == 1 and small.chars_per_token < 4000 / 3000
    assert (small.context_tokens, large.context_tokens) == (2048, 32_768)  # each its own
    with pytest.raises(ConfigError, match=r"chars_per_token 3\.0"):
        TokenBudget(chars_per_token=3.0, estimate=estimate)


class _Told:
    def __init__(self, name: str, length: object) -> None:
        self.name = name
        self.context_length = length


def test_context_tokens_reads_the_clients_length_else_the_default() -> None:
    assert context_tokens(_Told("m", 8192), 4096) == 8192
    assert context_tokens(ScriptedChat(), 2048) == 2048  # a scripted model says none
    assert context_tokens(_Told("m", None)) == DEFAULT_CONTEXT_TOKENS == 4096
    assert context_tokens(_Told("m", True), 100) == 100  # not a length


def test_a_counted_conversations_next_turn_is_sized_from_the_count() -> None:
    """An agent's conversation at the pessimistic ratio as a whole was judged 40% over its
    real size (the 0.5B orchestrator's turns were cut to the 64-token floor at 5,600 of
    8,192 tokens); the server's count of the turn before now sizes all but the new messages."""
    tokenizer = tiny_tokenizer()
    budget = TokenBudget(8192)
    budget.observe(_messages("a b"), 100)  # an ids-and-JSON call: a low ratio learned
    budget.estimate.reject(_messages("x" * 400), 300)
    ratio = budget.chars_per_token
    prose = " ".join(varied_texts(40, seed=3))
    turn = _messages(prose)
    counted = len(tokenizer.encode(prose)) + 20
    assert budget.prompt_tokens(turn) > counted * 1.2  # the whole estimate runs high
    budget.observe(turn, counted)
    assert budget.chars_per_token == ratio  # an optimistic count moves no ratio
    reply = {"role": "assistant", "content": "noted"}
    more = {"role": "user", "content": "y" * 300}
    following = [*turn, reply, more]
    expected = counted + budget.tokens(len("noted") + 300) + 2 * 8
    assert budget.prompt_tokens(following) == expected
    assert budget.prompt_tokens(turn) == counted
    # other tools, or another first message, are another conversation: estimated whole
    tools = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
    assert budget.prompt_tokens(following, tools) > counted * 1.2
    assert budget.prompt_tokens([{"role": "system", "content": "Be terse."}, *following[1:]]) > (
        counted * 1.2
    )


def test_counted_prompts_keep_the_most_recent_conversations() -> None:
    from kimmy_swarm.swarm.llm.counted_prompts import CountedPrompts

    counts = CountedPrompts(capacity=2)
    first, second, third = _messages("one"), _messages("two"), _messages("three")
    counts.record(first, 10)
    counts.record(second, 20)
    assert counts.longest_prefix([*first, {"role": "user", "content": "more"}]) == (2, 10)
    counts.record(third, 30)  # the least recently used (second) goes
    assert len(counts) == 2
    assert counts.longest_prefix(second) == (0, 0)
    assert counts.longest_prefix(first) == (2, 10) and counts.longest_prefix(third) == (2, 30)
    counts.record(first, 0)  # no count: nothing kept
    assert counts.longest_prefix(first) == (2, 10)
    with pytest.raises(ValueError, match="capacity 0"):
        CountedPrompts(capacity=0)
