"""The turns agents record (`AgentTurn` events), kept per subtask so a later attempt — a
retry, or a resumed run — can continue the conversation where the last one stopped."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kimmy_swarm.swarm import events as ev
from kimmy_swarm.swarm.unvalidated import trusted

if TYPE_CHECKING:
    from kimmy_swarm.swarm.journal import Journal


class TurnLog:
    """Records agents' turns and hands each subtask its own.

    Args:
        journal: where the `AgentTurn` events go (and the store, through it).
        earlier: the turns of earlier sessions by subtask id (from the store, on resume).
    """

    def __init__(
        self, journal: Journal, earlier: Mapping[str, Sequence[ev.AgentTurn]] | None = None
    ) -> None:
        self.journal = journal
        self._turns: dict[str, list[ev.AgentTurn]] = {
            k: list(v) for k, v in (earlier or {}).items()
        }

    def of(self, subtask_id: str) -> tuple[ev.AgentTurn, ...]:
        """The turns recorded so far by `subtask_id`, oldest first."""
        return tuple(self._turns.get(subtask_id, ()))

    def record(
        self,
        subtask_id: str,
        attempt: int,
        *,
        messages: Sequence[Any],
        spawned: Sequence[str] = (),
        state: Any = None,
        logprobs: Sequence[Any] | None = None,
    ) -> ev.AgentTurn:
        """Record one turn (its step is the next of the subtask's, over all attempts)."""
        turns = self._turns.setdefault(subtask_id, [])
        fields = {
            "subtask_id": subtask_id,
            "attempt": attempt,
            "step": len(turns) + 1,
            "messages": list(messages),
            "spawned": list(spawned),
            "state": state,
            "logprobs": list(logprobs) if logprobs is not None else None,
        }
        turn = trusted(
            ev.AgentTurn, {**fields, "run_id": self.journal.run_id, "seq": 0, "ts": time.time()}
        )
        turns.append(turn)
        self.journal.emit(ev.AgentTurn, **fields)
        return turn


__all__ = ["TurnLog"]
