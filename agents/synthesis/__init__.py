"""Synthesis that scales past one context: a learned token budget and a reduce tree.

- `TokenBudget`: a conservative token estimate for a tokenizer we do not have, corrected by
  every server count (it only moves to the pessimistic side), and the prompt room of a call
  (`context - max_tokens - margin`); `context_tokens(model, default)` reads a client's
  context length; `shared_budget(model)` is the process's budget for a model.
- `reduce_outputs`: (id, text) items, however many, packed into chunks that fit, condensed
  level by level (concurrently), then one final synthesis; `Reduced` says what it covers.
- `context_overflow`: a server's "prompt too long" rejection, with the numbers it gives.
"""

from agents.synthesis.budget import (
    DEFAULT_CHARS_PER_TOKEN,
    DEFAULT_CONTEXT_TOKENS,
    TokenBudget,
    context_tokens,
    forget_shared_budgets,
    message_chars,
    shared_budget,
)
from agents.synthesis.overflow import ContextOverflow, context_overflow
from agents.synthesis.packing import Block, block_tokens, cut_to, pack
from agents.synthesis.reduce import Digest, Reduced, reduce_outputs

__all__ = [
    "DEFAULT_CHARS_PER_TOKEN",
    "DEFAULT_CONTEXT_TOKENS",
    "Block",
    "ContextOverflow",
    "Digest",
    "Reduced",
    "TokenBudget",
    "block_tokens",
    "context_overflow",
    "context_tokens",
    "cut_to",
    "forget_shared_budgets",
    "message_chars",
    "pack",
    "reduce_outputs",
    "shared_budget",
]
