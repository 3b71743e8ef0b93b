"""The pieces of streamed answers, handed to a run's sinks a few at a time.

A streamed answer arrives a token or so per chunk; an event per chunk would cost an event
(built and delivered to every sink) per token of every sub-agent, and even a Python call per
piece shows in a fan-out of thousands. So a streamed call gets a plain list to append its
pieces to (`open` returns its `append`); every `interval_s` while calls stream — and when a
call ends, before its `model_called` event — the pieces appended since are delivered as
`TokenDelta` events, consecutive pieces of the same kind joined into one. What a person
watching sees arrives at most `interval_s` late (vLLM's `--stream-interval` makes the same
trade on the server side).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from kimmy_swarm.swarm import events as ev

if TYPE_CHECKING:
    from kimmy_swarm.swarm.journal import Journal
    from kimmy_swarm.swarm.llm.stream_chunks import Delta, DeltaFn

#: Seconds a piece may wait to be delivered with the ones after it.
INTERVAL_S = 0.05


class _Stream:
    """One streamed call's pieces, and how many of them were delivered."""

    __slots__ = ("pieces", "sent")

    def __init__(self) -> None:
        self.pieces: list[Delta] = []
        self.sent = 0


class DeltaBatcher:
    """Gathers the pieces of the run's streamed calls and publishes them as `TokenDelta`
    events (see the module)."""

    def __init__(self, journal: Journal, interval_s: float = INTERVAL_S) -> None:
        self.journal = journal
        self.interval_s = interval_s
        self._open: dict[tuple[str, int], _Stream] = {}
        self._timer: asyncio.TimerHandle | None = None

    def open(self, subtask_id: str, call: int) -> DeltaFn:
        """A streamed call `call` (of this attempt) of `subtask_id` begins; returns what
        its pieces go to, as they arrive."""
        stream = self._open[(subtask_id, call)] = _Stream()
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self.interval_s, self._tick)
        return stream.pieces.append

    def end(self, subtask_id: str, call: int) -> None:
        """The call ended (answered or not): deliver what is left of it now."""
        stream = self._open.pop((subtask_id, call), None)
        if stream is not None and len(stream.pieces) > stream.sent:
            self._publish(subtask_id, call, stream.pieces[stream.sent :])

    def _tick(self) -> None:
        """Deliver the pieces appended since the last tick; tick again while calls stream."""
        self._timer = None
        for (subtask_id, call), stream in self._open.items():
            count = len(stream.pieces)
            if count > stream.sent:
                new = stream.pieces[stream.sent : count]
                stream.sent = count
                self._publish(subtask_id, call, new)
        if self._open:
            self._timer = asyncio.get_running_loop().call_later(self.interval_s, self._tick)

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._open.clear()

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
