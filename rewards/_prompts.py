"""Prompt rows shared by the trainer exports (`rewards.trl`, `rewards.verl`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kimmy_swarm.swarm.errors import UserError

#: A task (a mapping, JSON text or a pydantic model such as `SpawnTask`) and its prompt.
TaskPrompt = tuple[Any, Sequence[Mapping[str, Any]]]


def checked_messages(messages: Sequence[Mapping[str, Any]], where: str) -> list[dict[str, str]]:
    """`messages` as plain `{"role", "content"}` dicts (what dataset columns hold).

    Raises:
        UserError: no message, or one without string `role` and `content`.
    """
    out = []
    for i, m in enumerate(messages):
        if not (
            isinstance(m, Mapping)
            and isinstance(m.get("role"), str)
            and isinstance(m.get("content"), str)
        ):
            raise UserError(
                f"{where}: message {i} must be a dict with string 'role' and 'content'; got {m!r}"
            )
        out.append({"role": m["role"], "content": m["content"]})
    if not out:
        raise UserError(f"{where}: a prompt needs at least one message")
    return out


__all__ = ["TaskPrompt", "checked_messages"]
