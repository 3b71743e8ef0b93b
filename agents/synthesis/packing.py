"""Token-budgeted packing: the items of one reduce level into chunks that fit one prompt.

An item is a `Block`: an input result (its id as tag) or a digest of several (a generated
tag), shown to the model as `[tag] label` and its text. Packing is greedy and keeps the
order, so neighbouring results (often about the same thing) share a summary. A block too
large for any chunk is cut first, and what is shown says how much was cut.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace

from kimmy_swarm.swarm.llm.budget import TokenBudget

#: Between two blocks of a prompt.
SEPARATOR = "\n\n"
#: A cut falls on whitespace when there is some this close to the cut point.
_WORD_SLACK = 40


@dataclass(frozen=True, slots=True)
class Block:
    """One item of a reduce level.

    Attributes:
        key: the tag shown in brackets (an input id, or a digest's tag).
        text: the text shown (what is left of it when cut).
        covers: the input ids it stands for (itself, for an input).
        label: shown after the tag (e.g. "digest of 12 results").
        chars: the length of the text before any cut.
    """

    key: str
    text: str
    covers: tuple[str, ...]
    label: str = ""
    chars: int = -1

    def __post_init__(self) -> None:
        if self.chars < 0:
            object.__setattr__(self, "chars", len(self.text))

    @property
    def cut(self) -> int:
        """Characters of the original text not shown."""
        return self.chars - len(self.text)

    def head(self) -> str:
        return f"[{self.key}]" + (f" {self.label}" if self.label else "")

    def render(self) -> str:
        """The block as the model sees it."""
        note = _note(self.cut, self.chars) if self.cut else ""
        return f"{self.head()}\n{self.text}{note}"


def _note(cut: int, chars: int) -> str:
    return f" … [cut: {cut:,} of {chars:,} characters not shown]"


def block_tokens(block: Block, budget: TokenBudget) -> int:
    """The estimated tokens a block takes in a prompt, its separator included."""
    return budget.tokens(len(block.render()) + len(SEPARATOR))


def cut_to(block: Block, max_tokens: int, budget: TokenBudget) -> Block:
    """`block`, its text cut (at a word where one is near) to fit `max_tokens` tokens.

    The text shown ends with a note saying how many characters were cut. A block that fits
    is returned as it is; one whose tag and note alone do not fit loses all of its text.
    """
    if block_tokens(block, budget) <= max_tokens:
        return block
    fixed = len(block.head()) + 1 + len(_note(block.chars, block.chars)) + len(SEPARATOR)
    keep = max(0, min(len(block.text), budget.chars(max_tokens) - fixed))
    text = block.text[:keep]
    space = text.rfind(" ", max(0, keep - _WORD_SLACK))
    if 0 < space < keep and keep < len(block.text):
        text = text[:space]
    return replace(block, text=text)


def pack(blocks: Sequence[Block], capacity: int, cost: Callable[[Block], int]) -> list[list[Block]]:
    """Blocks in order into chunks of at most `capacity` tokens each (by `cost`).

    A block costing more than `capacity` gets a chunk of its own (cut it first: `cut_to`).
    """
    chunks: list[list[Block]] = []
    rest: Iterable[Block] = blocks
    while True:
        chunk, rest = take(rest, capacity, cost)
        if not chunk:
            return chunks
        chunks.append(chunk)


def take(
    blocks: Iterable[Block], capacity: int, cost: Callable[[Block], int]
) -> tuple[list[Block], Iterator[Block]]:
    """The first chunk of `pack` (at least one block, if any), and the blocks after it."""
    it = iter(blocks)
    chunk: list[Block] = []
    used = 0
    for block in it:
        tokens = cost(block)
        if chunk and used + tokens > capacity:
            return chunk, itertools.chain([block], it)
        chunk.append(block)
        used += tokens
    return chunk, it


__all__ = ["SEPARATOR", "Block", "block_tokens", "cut_to", "pack", "take"]
