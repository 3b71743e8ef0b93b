"""The agent loop's own error, and how an error is shown to a model and in events.

A sub-agent's model fails its subtask by its answers in three ways: still invalid after the
repair turn (`swarm.errors.ModelBehaviourError`), a task too long for its context
(`swarm.errors.ContextOverflowError`, also raised by the reduce tree of `agents.synthesis`),
or no valid answer within its role's `max_steps` (`AgentStepLimitError`, also the
orchestrator's turn limit). `agents.fallback` hands these to the role's offline procedure.
"""

from __future__ import annotations

from kimmy_swarm.swarm.errors import LimitError

#: The most characters of an error's text that a tool result or an event carries.
MAX_ERROR_CHARS = 500


class AgentStepLimitError(LimitError):
    """A sub-agent took more model turns than its role allows without a valid answer."""


def error_text(exc: BaseException) -> str:
    """`Type: message`, cut to `MAX_ERROR_CHARS`: a failed tool call as the model reads it,
    and a model's error as a fallback step and the output's `fallback_error` record it."""
    return f"{type(exc).__name__}: {exc}"[:MAX_ERROR_CHARS]


__all__ = ["MAX_ERROR_CHARS", "AgentStepLimitError", "error_text"]
