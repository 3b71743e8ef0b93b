"""`ContextOverflowError`: a prompt that no split or retry could make fit the model's context.

Recognizing the server's rejection itself (`context_overflow`) is the model client's
concern and lives in `swarm.llm.overflow`.
"""

from __future__ import annotations

from swarm.errors import LimitError


class ContextOverflowError(LimitError):
    """A prompt could not be made to fit the model's context (after splits and retries)."""


__all__ = ["ContextOverflowError"]
