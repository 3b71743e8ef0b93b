"""`reduce_outputs` against a model with a real tokenizer and a real 4,096-token limit:
1,000 results reduce to one answer, every call fits and sets max_tokens, and every input id
reaches the answer through the tree."""

from __future__ import annotations

import re
from typing import Any

import pytest

from kimmy_swarm.agents.synthesis import Reduced, reduce_outputs
from kimmy_swarm.swarm.errors import (
    ConfigError,
    ContextOverflowError,
    ModelRateLimitedError,
    ModelRequestError,
)
from kimmy_swarm.swarm.llm import TokenBudget
from tests.agents.synthesis.conftest import TokenModel, varied_texts

TASK = "Write one report of what the researchers found, citing the ids."
_CITED = re.compile(r"\[([^\]\s]+)\]")


def _reached(reduced: Reduced) -> set[str]:
    """The input ids reachable from the final text through the tags each text cites."""
    digests = {d.tag: d for d in reduced.digests}
    seen: set[str] = set()
    frontier = _CITED.findall(reduced.text)
    while frontier:
        tag = frontier.pop()
        if tag in seen:
            continue
        seen.add(tag)
        if tag in digests:
            frontier.extend(_CITED.findall(digests[tag].text))
    return seen - set(digests)


def _tree_ok(reduced: Reduced, ids: list[str]) -> None:
    """Structural provenance: every digest covers its children; the top covers all ids."""
    digests = {d.tag: d for d in reduced.digests}

    def covers(tags: tuple[str, ...]) -> list[str]:
        return [k for tag in tags for k in (digests[tag].covers if tag in digests else (tag,))]

    for d in reduced.digests:
        assert list(d.covers) == covers(d.children)
    assert covers(reduced.sources) == ids


async def test_a_thousand_outputs_reduce_within_the_context(tokenizer: Any) -> None:
    model = TokenModel(tokenizer, context_length=4096)
    ids = [f"research-{n:04d}" for n in range(1000)]
    items = list(zip(ids, varied_texts(1000, seed=7), strict=True))
    reduced = await reduce_outputs(
        model, instructions=TASK, items=items, context_tokens=4096, max_tokens=512
    )
    calls = model.calls
    # every call set max_tokens, and no answered call went past the context
    assert all(isinstance(c.options.get("max_tokens"), int) for c in calls)
    assert all(c.prompt_tokens + c.options["max_tokens"] <= 4096 for c in model.answered)
    # provenance: the tree covers every id once, and the texts lead to every id
    assert reduced.ids == tuple(ids)
    _tree_ok(reduced, ids)
    assert _reached(reduced) == set(ids)
    # shape: calls are the digests plus the final call plus the rejected ones
    assert reduced.calls == len(calls) == len(reduced.digests) + 1 + reduced.rejected
    assert reduced.rejected == sum(c.rejected for c in calls)
    # ~350-character results, ~1.5 characters a token: 10-14 fit a 3,456-token prompt; the
    # first call is a small probe; then ~85 digests, whose ~5 digests make the final prompt
    assert reduced.levels == 2
    level_one = [d for d in reduced.digests if d.level == 1]
    level_two = [d for d in reduced.digests if d.level == 2]
    assert sum(len(d.children) for d in level_one) == 1000
    assert 1000 / 14 < len(level_one) < 1000 / 10
    assert sum(len(d.children) for d in level_two) == len(level_one)
    assert 2 <= len(level_two) <= 8 and reduced.sources == tuple(d.tag for d in level_two)
    assert model.max_in_flight == 8  # the default concurrency, used
    assert reduced.max_prompt_tokens == max(c.prompt_tokens for c in model.answered)
    assert reduced.max_prompt_tokens > 4096 * 0.6  # the budget is used, not wasted
    assert reduced.usage.model_calls == len(model.answered)
    print(
        f"\n1,000 outputs: levels {reduced.levels}, calls {reduced.calls} "
        f"(digests {len(reduced.digests)}: "
        f"{[sum(d.level == n for d in reduced.digests) for n in range(1, reduced.levels + 1)]}, "
        f"rejected {reduced.rejected}), max prompt {reduced.max_prompt_tokens} tokens + "
        f"max_tokens ≤ 4096"
    )


async def test_items_that_fit_take_one_call(tokenizer: Any) -> None:
    model = TokenModel(tokenizer)
    items = [("a", "alpha result"), ("b", "beta result")]
    reduced = await reduce_outputs(
        model, instructions=TASK, items=items, context_tokens=4096, max_tokens=256
    )
    assert (reduced.levels, reduced.calls, reduced.digests, reduced.ids) == (0, 1, (), ("a", "b"))
    assert reduced.sources == ("a", "b") and "[a] [b]" in reduced.text
    assert model.calls[0].options["max_tokens"] == 256


async def test_summaries_as_long_as_allowed_still_converge(tokenizer: Any) -> None:
    model = TokenModel(tokenizer, context_length=1024, verbose=True)
    items = list(zip([f"r{n}" for n in range(150)], varied_texts(150, seed=11), strict=True))
    reduced = await reduce_outputs(
        model, instructions=TASK, items=items, context_tokens=1024, max_tokens=160
    )
    assert reduced.ids == tuple(i for i, _ in items)
    _tree_ok(reduced, [i for i, _ in items])
    assert reduced.levels >= 3  # digests of 128 tokens: few fit a 1,024-token prompt
    for level in range(2, reduced.levels + 1):  # every level above the inputs shrinks
        below = sum(d.level == level - 1 for d in reduced.digests)
        assert sum(d.level == level for d in reduced.digests) <= (below + 1) // 2
    assert all(c.prompt_tokens + c.options["max_tokens"] <= 1024 for c in model.answered)


async def test_an_overflow_rejection_shrinks_the_chunk_and_succeeds(tokenizer: Any) -> None:
    # The budget is told 3 characters a token (and is calibrated by a made-up observation):
    # far too optimistic for this tokenizer, so its first chunks are rejected.
    model = TokenModel(tokenizer, context_length=2048)
    budget = TokenBudget(2048, chars_per_token=3.0)
    budget.estimate.observations = 1  # skip the small probe call: the first chunk is full size
    items = list(zip([f"r{n}" for n in range(60)], varied_texts(60, seed=3), strict=True))
    reduced = await reduce_outputs(
        model, instructions=TASK, items=items, context_tokens=2048, max_tokens=256, budget=budget
    )
    assert reduced.rejected >= 1 and model.calls[0].rejected
    assert budget.chars_per_token < 3.0 and budget.rejections == reduced.rejected
    assert reduced.ids == tuple(i for i, _ in items) and _reached(reduced) == {i for i, _ in items}
    assert all(c.prompt_tokens + c.options["max_tokens"] <= 2048 for c in model.answered)


@pytest.mark.parametrize(
    "wording",
    [
        "This model's maximum context length is {context} tokens. However, you requested "
        "{prompt} tokens ({prompt} in the messages, {max_tokens} in the completion).",
        "the request exceeds the available context size, try increasing it",
    ],
)
async def test_other_servers_rejections_are_understood(tokenizer: Any, wording: str) -> None:
    model = TokenModel(tokenizer, context_length=2048, wording=wording)
    budget = TokenBudget(2048, chars_per_token=3.0)
    budget.estimate.observations = 1
    items = list(zip([f"r{n}" for n in range(40)], varied_texts(40, seed=5), strict=True))
    reduced = await reduce_outputs(
        model, instructions=TASK, items=items, context_tokens=2048, max_tokens=256, budget=budget
    )
    assert reduced.rejected >= 1 and reduced.ids == tuple(i for i, _ in items)


async def test_an_item_larger_than_a_chunk_is_cut_and_says_so(tokenizer: Any) -> None:
    model = TokenModel(tokenizer, context_length=2048)
    huge = " ".join(varied_texts(60, seed=1))  # ~20,000 characters: many chunks' worth
    items = [("small", "a short result"), ("huge", huge)]
    reduced = await reduce_outputs(
        model, instructions=TASK, items=items, context_tokens=2048, max_tokens=256
    )
    assert reduced.cut == ("huge",) and reduced.ids == ("small", "huge")
    shown = next(c.user for c in model.answered if "[huge]" in c.user)
    note = re.search(r"\[cut: ([\d,]+) of ([\d,]+) characters not shown\]", shown)
    assert note is not None and int(note.group(2).replace(",", "")) == len(huge)
    assert int(note.group(1).replace(",", "")) > len(huge) / 2
    assert all(c.prompt_tokens + c.options["max_tokens"] <= 2048 for c in model.answered)


async def test_a_rejection_that_is_not_about_length_is_raised(tokenizer: Any) -> None:
    model = TokenModel(tokenizer, context_length=2048, wording="unknown model {prompt}")
    budget = TokenBudget(2048, chars_per_token=3.0)
    budget.estimate.observations = 1
    items = list(zip([f"r{n}" for n in range(40)], varied_texts(40, seed=5), strict=True))
    with pytest.raises(ModelRequestError, match="unknown model"):
        await reduce_outputs(
            model,
            instructions=TASK,
            items=items,
            context_tokens=2048,
            max_tokens=256,
            budget=budget,
        )


async def test_a_server_that_keeps_rejecting_ends_in_a_typed_error(tokenizer: Any) -> None:
    class Never(TokenModel):
        async def chat(self, messages: Any, **options: Any) -> Any:
            raise ModelRequestError("HTTP 400: prompt (9999 tokens) is too long", status=400)

    with pytest.raises(ContextOverflowError):
        await reduce_outputs(
            Never(tokenizer),
            instructions=TASK,
            items=[("a", "x" * 50)],
            context_tokens=2048,
            max_tokens=256,
        )


async def test_bad_options_are_config_errors(tokenizer: Any) -> None:
    model = TokenModel(tokenizer)
    with pytest.raises(ConfigError, match="unique"):
        await reduce_outputs(
            model,
            instructions=TASK,
            items=[("a", "x"), ("a", "y")],
            context_tokens=4096,
            max_tokens=64,
        )
    with pytest.raises(ConfigError, match="no room"):
        await reduce_outputs(
            model, instructions=TASK, items=[("a", "x")], context_tokens=1024, max_tokens=1000
        )
    assert model.calls == []


async def test_calls_of_a_level_run_concurrently_within_the_bound(tokenizer: Any) -> None:
    model = TokenModel(tokenizer, context_length=2048)
    items = list(zip([f"r{n}" for n in range(120)], varied_texts(120, seed=8), strict=True))
    reduced = await reduce_outputs(
        model, instructions=TASK, items=items, context_tokens=2048, max_tokens=256, concurrency=3
    )
    assert model.max_in_flight == 3 and reduced.ids == tuple(i for i, _ in items)


async def test_a_failed_call_stops_the_level_and_is_raised_as_itself(tokenizer: Any) -> None:
    class Flaky(TokenModel):
        started = 0

        async def chat(self, messages: Any, **options: Any) -> Any:
            self.started += 1
            if self.started == 5:
                raise ModelRateLimitedError("HTTP 429: slow down", status=429)
            return await super().chat(messages, **options)

    model = Flaky(tokenizer, context_length=2048)
    items = list(zip([f"r{n}" for n in range(120)], varied_texts(120, seed=8), strict=True))
    with pytest.raises(ModelRateLimitedError, match="slow down"):  # retryable, not a group
        await reduce_outputs(
            model, instructions=TASK, items=items, context_tokens=2048, max_tokens=256
        )
    assert model.started < 12  # the level's other chunks were not all sent
