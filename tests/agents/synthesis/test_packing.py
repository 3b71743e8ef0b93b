"""Packing one reduce level: every chunk stays within its budget, in order, greedily; a cut
block fits and says how much was cut."""

from __future__ import annotations

import itertools

from kimmy_swarm.agents import synthesis
from kimmy_swarm.agents.synthesis import Block, block_tokens, cut_to, pack
from kimmy_swarm.swarm.llm import TokenBudget
from tests.agents.synthesis.conftest import varied_texts


def test_public_api_is_pinned() -> None:
    assert sorted(synthesis.__all__) == [
        "Block", "Digest", "Reduced", "block_tokens", "cut_to", "pack",
        "reduce_outputs",
    ]  # fmt: skip


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
