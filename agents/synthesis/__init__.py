"""Synthesis that scales past one context: a reduce tree over a learned token budget.

- `reduce_outputs`: (id, text) items, however many, packed into chunks that fit, condensed
  level by level (concurrently), then one final synthesis; `Reduced` says what it covers.
- `pack`, `cut_to`, `block_tokens`, `Block`: the packing of one level into chunks that fit
  one prompt by a `swarm.llm.TokenBudget`.

The budget itself (`TokenBudget`, `shared_budget`, `context_tokens`) and the reading of a
server's "prompt too long" rejection (`context_overflow`) are the model client's concerns:
`swarm.llm`.
"""

from kimmy_swarm.agents.synthesis.packing import Block, block_tokens, cut_to, pack
from kimmy_swarm.agents.synthesis.reduce import Digest, Reduced, reduce_outputs

__all__ = [
    "Block",
    "Digest",
    "Reduced",
    "block_tokens",
    "cut_to",
    "pack",
    "reduce_outputs",
]
