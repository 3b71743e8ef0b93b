"""`TokenBudget`, packing and overflow recognition: the estimate only moves to the
pessimistic side, packing keeps every chunk within its budget, a cut says how much."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

import agents.synthesis as synthesis
from agents.synthesis import (
    Block,
    ContextOverflow,
    TokenBudget,
    block_tokens,
    context_overflow,
    cut_to,
    pack,
)
from swarm.errors import ConfigError, ModelRequestError, ModelServerError
from tests.agents.synthesis.conftest import varied_texts


def _messages(text: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": "Be brief."}, {"role": "user", "content": text}]


def test_public_api_is_pinned() -> None:
    assert sorted(synthesis.__all__) == sorted(
        [
            "DEFAULT_CHARS_PER_TOKEN", "DEFAULT_CONTEXT_TOKENS", "Block", "ContextOverflow",
            "Digest", "Reduced", "TokenBudget", "block_tokens",
            "context_overflow", "context_tokens", "cut_to", "forget_shared_budgets",
            "message_chars", "pack", "reduce_outputs", "shared_budget",
        ]
    )  # fmt: skip


def test_budget_is_context_minus_max_tokens_minus_margin() -> None:
    budget = TokenBudget(4096)
    assert (budget.margin, budget.chars_per_token) == (128, 2.5)
    assert budget.prompt_limit(1024) == 4096 - 1024 - 128
    assert budget.tokens("x" * 100) == 40 and budget.chars(40) == 100
    # the chat template's tokens are counted per message
    assert budget.prompt_tokens(_messages("x" * 100)) > budget.tokens(len("Be brief.") + 100)
    assert TokenBudget(4096, margin=0).prompt_limit(96) == 4000


def test_the_ratio_only_moves_to_the_pessimistic_side(tokenizer: Any) -> None:
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


@pytest.mark.parametrize(
    ("message", "prompt", "context"),
    [
        ("prompt (8007 tokens) + max_tokens (1024) is more than max_model_len 4096", 8007, 4096),
        ("5000 is more than this model's context length (4096 tokens)", None, 4096),
        ("This model's maximum context length is 4096 tokens. However, you requested 5120 "
         "tokens (4096 in the messages, 1024 in the completion).", 4096, 4096),
        ("This model's maximum context length is 4096 tokens. However, your request has "
         "5000 input tokens. Please reduce the length of the input messages.", 5000, 4096),
        ("'max_tokens' or 'max_completion_tokens' is too large: 1024. This model's maximum "
         "context length is 4096 tokens and your request has 3500 input tokens "
         "(1024 > 4096 - 3500).", 3500, 4096),
        ("The decoder prompt (length 5000) is longer than the maximum model length of 4096.",
         5000, 4096),
        ("The input (5000 tokens) is longer than the model's context length (4096 tokens).",
         5000, 4096),
        ("the request exceeds the available context size, try increasing it", None, None),
    ],
)  # fmt: skip
def test_servers_overflow_wordings_are_read(
    message: str, prompt: int | None, context: int | None
) -> None:
    error = ModelRequestError(f"model server at http://x/v1 answered HTTP 400: {message}")
    assert context_overflow(error) == ContextOverflow(prompt, context)


def test_other_errors_are_not_overflows() -> None:
    assert context_overflow(ModelRequestError("HTTP 400: top_logprobs must be <= 20")) is None
    assert context_overflow(ModelRequestError("HTTP 404: the model 'x' does not exist")) is None
    assert context_overflow(ModelServerError("HTTP 500: context length exceeded")) is None


def test_packing_keeps_each_chunk_within_its_budget() -> None:
    budget = TokenBudget(4096, chars_per_token=1.5)
    texts = varied_texts(200, seed=4, low=50, high=900)
    blocks = [Block(f"id{n}", text, (f"id{n}",)) for n, text in enumerate(texts)]

    def cost(block: Block) -> int:
        return block_tokens(block, budget)

    chunks = pack(blocks, 1000, cost)
    assert [b for chunk in chunks for b in chunk] == blocks  # all, once, in order
    assert all(sum(cost(b) for b in chunk) <= 1000 for chunk in chunks)
    # greedy: no chunk could have taken the next chunk's first block
    for chunk, after in itertools.pairwise(chunks):
        assert sum(cost(b) for b in chunk) + cost(after[0]) > 1000
    # a block larger than a chunk gets one of its own
    big = Block("big", "y" * 5000, ("big",))
    assert pack([blocks[0], big, blocks[1]], 1000, cost) == [[blocks[0]], [big], [blocks[1]]]


def test_a_cut_block_fits_and_says_how_much_was_cut() -> None:
    budget = TokenBudget(4096)
    text = " ".join(varied_texts(30, seed=6))
    block = Block("doc-1", text, ("doc-1",))
    cut = cut_to(block, 200, budget)
    assert block_tokens(cut, budget) <= 200
    assert cut.chars == len(text) and cut.cut == len(text) - len(cut.text) > 0
    assert text.startswith(cut.text)
    assert cut.render().endswith(f"[cut: {cut.cut:,} of {len(text):,} characters not shown]")
    assert cut_to(block, 10_000, budget) is block  # what fits is left alone
    # a second cut counts from the original length
    again = cut_to(cut, 100, budget)
    assert again.chars == len(text) and again.cut > cut.cut
