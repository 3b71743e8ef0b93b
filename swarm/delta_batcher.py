"""The pieces of streamed answers, handed to a run's sinks a few at a time.

A streamed answer arrives a token or so per chunk; one `TokenDelta` event per chunk would
cost an event (built and delivered to every sink) per token of every sub-agent. The
batcher gathers each call's pieces and delivers them every `interval_s` (and when the call
ends, before its `model_called` event), consecutive pieces of the same kind joined into one
event: what a person watching sees arrives at most `interval_s` late (vLLM's
`--stream-interval` makes the same trade on the server side).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from kimmy_swarm.swarm import events as ev

if TYPE_CHECKING:
    from kimmy_swarm.swarm.journal import Journal
    from kimmy_swarm.swarm.llm.stream_chunks import Delta

#: Seconds a piece may wait to be delivered with the ones after it.
INTERVAL_S = 0.05


class DeltaBatcher:
    """Gathers the pieces of the run's streamed answers and publishes them as `TokenDelta`
    events (see the module)."""

    def __init__(self, journal: Journal, interval_s: float = INTERVAL_S) -> None:
        self.journal = journal
        self.interval_s = interval_s
        self._pieces: dict[tuple[str, int], list[Delta]] = {}
        self._timer: asyncio.TimerHandle | None = None

    def add(self, subtask_id: str, call: int, piece: Delta) -> None:
        """One piece of call `call` (of this attempt) of `subtask_id`, as it arrived."""
        key = (subtask_id, call)
        pending = self._pieces.get(key)
        if pending is None:
            self._pieces[key] = [piece]
        else:
            pending.append(piece)
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self.interval_s, self.flush)

    def end(self, subtask_id: str, call: int) -> None:
        """The call ended: deliver what is left of it now."""
        pieces = self._pieces.pop((subtask_id, call), None)
        if pieces:
            self._publish(subtask_id, call, pieces)

    def flush(self) -> None:
        """Deliver every piece gathered."""
        self._timer = None
        gathered, self._pieces = self._pieces, {}
        for (subtask_id, call), pieces in gathered.items():
            self._publish(subtask_id, call, pieces)

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._pieces.clear()

    def _publish(self, subtask_id: str, call: int, pieces: list[Delta]) -> None:
        start = 0
        for end in range(1, len(pieces) + 1):
            if end < len(pieces) and (pieces[end].kind, pieces[end].index) == (
                pieces[start].kind,
                pieces[start].index,
            ):
                continue
            first = pieces[start]
            text = first.text if end - start == 1 else "".join(p.text for p in pieces[start:end])
            self.journal.publish(
                ev.TokenDelta, type="token_delta", subtask_id=subtask_id, call=call, text=text,
                kind=first.kind, index=first.index,
            )  # every field given: the event is built on the fast path  # fmt: skip
            start = end


__all__ = ["INTERVAL_S", "DeltaBatcher"]
