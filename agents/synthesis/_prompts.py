"""The messages of the reduce tree: a summary of one chunk, and the final synthesis."""

from __future__ import annotations

from collections.abc import Sequence

from kimmy_swarm.agents.synthesis.packing import SEPARATOR, Block

SUMMARY_SYSTEM = (
    "You condense results of a swarm's sub-agents so that a later step can synthesize "
    "them. Keep every fact, number, name and source id that matters for the task; drop "
    "repetition and filler. Each item starts with its tag in square brackets: after each "
    "statement cite the tags of the items it comes from, like [tag], and keep the tags "
    "that digests cite. Reply with the digest only, as plain text."
)

FINAL_SYSTEM = (
    "You synthesize the results of a swarm's sub-agents into what the task asks for. Some "
    "items are digests of several results. Each item starts with its tag in square "
    "brackets: after each statement cite the tags it rests on, like [tag]. State nothing "
    "the items do not support."
)


def _blocks(blocks: Sequence[Block]) -> str:
    return SEPARATOR.join(block.render() for block in blocks)


def summary_messages(
    instructions: str, blocks: Sequence[Block], summary_tokens: int
) -> list[dict[str, str]]:
    """Condense one chunk into a digest of at most `summary_tokens` tokens."""
    words = max(16, summary_tokens * 3 // 5)
    user = (
        f"The task these results serve:\n{instructions}\n\n{len(blocks)} items:\n\n"
        f"{_blocks(blocks)}\n\nWrite one digest of these items, at most about {words} words."
    )
    return [{"role": "system", "content": SUMMARY_SYSTEM}, {"role": "user", "content": user}]


def final_messages(
    instructions: str, blocks: Sequence[Block], total: int, system: str | None = None
) -> list[dict[str, str]]:
    """The synthesis over what is left: the inputs themselves, or digests of `total`."""
    digests = sum(1 for block in blocks if len(block.covers) != 1 or block.key != block.covers[0])
    shown = f"{len(blocks)} items" + (
        f", {digests} of them digests; {total} results in all" if digests else ""
    )
    user = f"{instructions}\n\nThe results ({shown}):\n\n{_blocks(blocks)}"
    return [
        {"role": "system", "content": system or FINAL_SYSTEM},
        {"role": "user", "content": user},
    ]
