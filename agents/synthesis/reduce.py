"""`reduce_outputs`: synthesis over more results than one prompt can hold.

A hierarchical reduce. The (id, text) items are packed into chunks that fit one prompt
(`packing`); each chunk is condensed by one model call into a digest tagged with the ids it
covers; the digests are packed and condensed again, level by level, until everything left
fits one prompt; then one final call synthesizes. Every call sets `max_tokens`, so prompt
+ completion never exceeds the context by the estimate (`TokenBudget`), and the estimate
learns from every answer. The chunks of a level run concurrently (at most `concurrency`
calls in flight).

When the server still rejects a prompt as too long, the budget learns from the rejection
(a lower characters-per-token ratio; the server's own counts where it gives them), the
chunk is split to fit the corrected estimate, and the halves are retried. Every such retry
lowers the ratio, and the attempts per chunk are bounded, so it never loops forever.

Example:
    reduced = await reduce_outputs(model, instructions="Write the review.",
                                   items=[("r1", "..."), ("r2", "...")],
                                   context_tokens=4096, max_tokens=1024)
    reduced.text, reduced.ids, reduced.levels, reduced.calls
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from kimmy_swarm.agents.synthesis._prompts import final_messages, summary_messages
from kimmy_swarm.agents.synthesis.packing import Block, block_tokens, cut_to, take
from kimmy_swarm.swarm.errors import ConfigError, ContextOverflowError, ModelRequestError
from kimmy_swarm.swarm.llm.budget import PROBE_CHARS_PER_TOKEN, TokenBudget
from kimmy_swarm.swarm.llm.overflow import context_overflow
from kimmy_swarm.swarm.llm.protocol import ChatModel
from kimmy_swarm.swarm.llm.types import ChatResponse
from kimmy_swarm.swarm.schema import Usage
from kimmy_swarm.swarm.tasks import first_error, gather_all

#: Prompt tokens the estimate of a chunk's fixed part may be off by (digits of counts).
_SLACK = 4
#: The least room a chunk needs for its blocks to be worth a call.
_MIN_BLOCK_TOKENS = 32
#: Chunks are packed to this share of the room a prompt may take, so that a chunk packed
#: while other calls were in flight still fits when their counts lower the ratio a little.
_PACK_FILL = 0.97


@dataclass(frozen=True, slots=True)
class Digest:
    """One summary in the reduce tree.

    Attributes:
        tag: how later prompts cite it (`digest-<level>.<n>`).
        text: the model's summary.
        covers: the input ids it stands for, in input order.
        children: the tags (input ids or digest tags) of the items it summarized.
        level: 1 for a summary of inputs, 2 for a summary of those, …
    """

    tag: str
    text: str
    covers: tuple[str, ...]
    children: tuple[str, ...]
    level: int


@dataclass(frozen=True, slots=True)
class Reduced:
    """What a reduce produced.

    Attributes:
        text: the final synthesis.
        ids: the input ids the final answer covers, in input order (all of them).
        levels: summary levels before the final call (0: everything fitted one prompt).
        calls: model calls made, rejected ones included.
        digests: every summary of the tree (its provenance: `children` lead to the inputs).
        sources: the tags shown to the final call.
        cut: tags (input ids or digests) whose text was cut to fit, with a note saying so.
        rejected: calls the server rejected as too long (each was split and retried).
        max_prompt_tokens: the most prompt tokens an answered call used (server's count).
        usage: the usage of all calls.
    """

    text: str
    ids: tuple[str, ...]
    levels: int
    calls: int
    digests: tuple[Digest, ...] = ()
    sources: tuple[str, ...] = ()
    cut: tuple[str, ...] = ()
    rejected: int = 0
    max_prompt_tokens: int = 0
    usage: Usage = field(default_factory=Usage)


async def reduce_outputs(
    model: ChatModel,
    *,
    instructions: str,
    items: Sequence[tuple[str, str]],
    context_tokens: int,
    max_tokens: int,
    summary_tokens: int | None = None,
    budget: TokenBudget | None = None,
    concurrency: int = 8,
    system: str | None = None,
    max_levels: int = 16,
    max_attempts: int = 4,
) -> Reduced:
    """Synthesize `items` with `model`, however many, in calls that fit its context.

    Args:
        model: any `ChatModel` (inside a swarm: the sub-agent's metered `ctx.model`).
        instructions: what the synthesis is for (the task); every prompt shows it.
        items: `(id, text)` pairs; ids must be unique.
        context_tokens: the model's context length (see `context_tokens(model, default)`).
        max_tokens: the final answer's `max_tokens`.
        summary_tokens: `max_tokens` of each digest (default: the smaller of `max_tokens`
            and an eighth of the context).
        budget: a budget to learn into and from (shared across calls); by default a new one
            of `context_tokens`. A given budget's context length is the one used.
        concurrency: the most calls in flight at once.
        system: the final call's system message (default: a synthesis prompt).
        max_levels: the most summary levels.
        max_attempts: the most rejections as too long one chunk may get before giving up.

    Raises:
        ConfigError: duplicate ids, or options that leave no room for a prompt.
        ContextOverflowError: a prompt still could not be made to fit.
        ModelError: a call failed otherwise (as the model raised it).
    """
    budget = TokenBudget(context_tokens) if budget is None else budget
    if summary_tokens is None:
        summary_tokens = min(max_tokens, max(32, budget.context_tokens // 8))
    _check(items, budget, max_tokens, summary_tokens, concurrency, max_levels, max_attempts)
    reducer = _Reducer(
        model,
        budget,
        instructions,
        [key for key, _ in items],
        system=system,
        summary_tokens=summary_tokens,
        max_attempts=max_attempts,
        concurrency=concurrency,
    )
    blocks = [Block(key, text, (key,)) for key, text in items]
    return await reducer.run(blocks, max_tokens, max_levels)


def _check(
    items: Sequence[tuple[str, str]],
    budget: TokenBudget,
    max_tokens: int,
    summary_tokens: int,
    concurrency: int,
    max_levels: int,
    max_attempts: int,
) -> None:
    for name, value in (
        ("max_tokens", max_tokens),
        ("summary_tokens", summary_tokens),
        ("concurrency", concurrency),
        ("max_levels", max_levels),
        ("max_attempts", max_attempts),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"{name} {value!r} is not an integer >= 1")
    for name, value in (("max_tokens", max_tokens), ("summary_tokens", summary_tokens)):
        if budget.prompt_limit(value) < 4 * _MIN_BLOCK_TOKENS:
            raise ConfigError(
                f"{name} {value} leaves no room for a prompt in a context of "
                f"{budget.context_tokens} tokens (margin {budget.margin}); lower it"
            )
    seen: set[str] = set()
    duplicates: set[str] = set()
    for key, _ in items:
        (duplicates if key in seen else seen).add(key)
    if duplicates:
        raise ConfigError(f"item ids must be unique; repeated: {', '.join(sorted(duplicates)[:5])}")


class _Reducer:
    """The state of one reduce: the model, the budget, counters, the tree so far."""

    def __init__(
        self,
        model: ChatModel,
        budget: TokenBudget,
        instructions: str,
        ids: list[str],
        *,
        system: str | None,
        summary_tokens: int,
        max_attempts: int,
        concurrency: int,
    ) -> None:
        self.model = model
        self.budget = budget
        self.instructions = instructions
        self.ids = ids
        self.system = system
        self.summary_tokens = summary_tokens
        self.max_attempts = max_attempts
        #: Calls in flight; and chunks of a level packed, not yet done (the same bound).
        self.limit = asyncio.Semaphore(concurrency)
        self.slots = asyncio.Semaphore(concurrency)
        self.prefix = _tag_prefix(ids)
        self.calls = self.rejected = self.max_prompt = 0
        self.usages: list[Usage] = []
        self.digests: list[Digest] = []
        self.cut: dict[str, None] = {}

    async def run(self, blocks: list[Block], max_tokens: int, max_levels: int) -> Reduced:
        level = 0
        for _ in range(max_levels + 2 * self.max_attempts + 1):
            messages = final_messages(self.instructions, blocks, len(self.ids), self.system)
            if self.budget.fits(messages, max_tokens):
                response = await self._call(messages, max_tokens)
                if response is not None:
                    return self._result(response, blocks, level)
                continue  # learned from the rejection: check again
            if level == max_levels:
                break
            level += 1
            blocks = await self._level(blocks, level)
        raise ContextOverflowError(
            f"{len(self.ids)} items could not be reduced to one prompt of "
            f"{self.budget.prompt_limit(max_tokens)} tokens in {level} levels "
            f"(max_levels {max_levels}; {self.rejected} rejections as too long)"
        )

    def _result(self, response: ChatResponse, blocks: list[Block], levels: int) -> Reduced:
        covered = {key for block in blocks for key in block.covers}
        return Reduced(
            text=response.content or "",
            ids=tuple(key for key in self.ids if key in covered),
            levels=levels,
            calls=self.calls,
            digests=tuple(self.digests),
            sources=tuple(block.key for block in blocks),
            cut=tuple(self.cut),
            rejected=self.rejected,
            max_prompt_tokens=self.max_prompt,
            usage=Usage.total(self.usages),
        )

    # --- one level ---------------------------------------------------------------------

    def _capacity(self) -> int:
        """The tokens a summary prompt has for its blocks."""
        fixed = self.budget.prompt_tokens(summary_messages(self.instructions, [], 0))
        return self.budget.prompt_limit(self.summary_tokens) - fixed - _SLACK

    def _take(
        self, blocks: list[Block], level: int, *, probe: bool = False
    ) -> tuple[list[Block], list[Block]]:
        """The next chunk of a level, packed by the ratio known now; and the blocks after it."""
        room = self._capacity()
        capacity = int(room * _PACK_FILL)
        # Above the inputs every chunk must take two blocks, or a level might not shrink.
        cap = capacity if level == 1 else capacity // 2
        if cap < _MIN_BLOCK_TOKENS:
            raise ContextOverflowError(
                f"the instructions ({len(self.instructions):,} characters) leave no room for "
                f"results in a context of {self.budget.context_tokens} tokens"
            )
        if probe:
            scale = PROBE_CHARS_PER_TOKEN / self.budget.chars_per_token
            capacity = min(capacity, max(_MIN_BLOCK_TOKENS, int(room * scale)))
        fitted = (self._fit(block, cap) for block in blocks)
        chunk, _ = take(fitted, capacity, lambda block: block_tokens(block, self.budget))
        return chunk, blocks[len(chunk) :]

    def _fit(self, block: Block, max_tokens: int) -> Block:
        fitted = cut_to(block, max_tokens, self.budget)
        if fitted.cut:
            self.cut[block.key] = None
        return fitted

    async def _level(self, blocks: list[Block], level: int) -> list[Block]:
        """Condense one level. Each chunk is packed just before its call, by the ratio the
        calls answered so far have taught, so later chunks are packed better."""
        done: list[tuple[str, list[Block]]] = []
        if not self.budget.calibrated and len(blocks) > 1:
            # A small call first: its usage corrects the ratio before the rest is packed.
            first, blocks = self._take(blocks, level, probe=True)
            done += await self._digest(first, level)
        tasks: list[asyncio.Task[list[tuple[str, list[Block]]]]] = []
        try:
            async with asyncio.TaskGroup() as group:
                while blocks:
                    await self.slots.acquire()
                    chunk, blocks = self._take(blocks, level)
                    tasks.append(group.create_task(self._digest(chunk, level, slot=True)))
        except BaseExceptionGroup as failed:
            first = first_error(failed)
            raise first from first.__cause__
        for task in tasks:
            done += task.result()
        return self._tag(done, level)

    def _tag(self, done: list[tuple[str, list[Block]]], level: int) -> list[Block]:
        """The digests of a level as the blocks of the next, tagged in input order."""
        out = []
        for index, (text, chunk) in enumerate(done, 1):
            covers = tuple(key for block in chunk for key in block.covers)
            tag = f"{self.prefix}{level}.{index}"
            children = tuple(block.key for block in chunk)
            self.digests.append(Digest(tag, text, covers, children, level))
            label = f"digest of {len(covers)} result{'s' if len(covers) != 1 else ''}"
            out.append(Block(tag, text, covers, label))
        return out

    async def _digest(
        self, chunk: list[Block], level: int, *, slot: bool = False
    ) -> list[tuple[str, list[Block]]]:
        """Condense one chunk: `(summary, blocks)` pairs (more than one if it was split).

        With `slot`, it gives back the level's packing slot its caller took, when done."""
        try:
            return await self._condense(chunk, level)
        finally:
            if slot:
                self.slots.release()

    async def _condense(self, chunk: list[Block], level: int) -> list[tuple[str, list[Block]]]:
        for _ in range(self.max_attempts):
            messages = summary_messages(self.instructions, chunk, self.summary_tokens)
            if not self.budget.fits(messages, self.summary_tokens):
                if len(chunk) > 1:  # the ratio went down since packing: split
                    half = len(chunk) // 2
                    parts = await gather_all(
                        [self._digest(chunk[:half], level), self._digest(chunk[half:], level)]
                    )
                    return parts[0] + parts[1]
                chunk = [self._fit(chunk[0], self._capacity())]
                messages = summary_messages(self.instructions, chunk, self.summary_tokens)
                if not self.budget.fits(messages, self.summary_tokens):
                    break
            response = await self._call(messages, self.summary_tokens)
            if response is not None:
                return [((response.content or "").strip() or "(empty summary)", chunk)]
        raise ContextOverflowError(
            f"a chunk of {len(chunk)} item(s) ({', '.join(b.key for b in chunk[:3])}"
            f"{', …' if len(chunk) > 3 else ''}) still does not fit a prompt of "
            f"{self.budget.prompt_limit(self.summary_tokens)} tokens after "
            f"{self.max_attempts} attempts ({self.budget!r})"
        )

    # --- one call ----------------------------------------------------------------------

    async def _call(self, messages: list[dict[str, str]], max_tokens: int) -> ChatResponse | None:
        """One call; None when the server rejected it as too long (the budget learned)."""
        async with self.limit:
            self.calls += 1
            try:
                response = await self.model.chat(messages, max_tokens=max_tokens)
            except ModelRequestError as exc:
                overflow = context_overflow(exc)
                if overflow is None:
                    raise
                self.rejected += 1
                if not self.budget.reject(messages, overflow, max_tokens):
                    raise ContextOverflowError(
                        f"the server rejects a prompt as too long and the estimate cannot "
                        f"shrink further ({self.budget!r}): {exc}"
                    ) from exc
                return None
        self.usages.append(response.usage)
        self.budget.observe(messages, response.usage.prompt_tokens)
        self.max_prompt = max(self.max_prompt, response.usage.prompt_tokens)
        return response


def _tag_prefix(ids: Iterable[str]) -> str:
    """`digest-`, or a variant no input id starts with (tags never collide with ids)."""
    prefix = "digest-"
    taken = list(ids)
    while any(key.startswith(prefix) for key in taken):
        prefix = "_" + prefix
    return prefix


__all__ = ["Digest", "Reduced", "reduce_outputs"]
