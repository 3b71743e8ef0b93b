"""The pieces of a run's streamed answers: held while each call streams, handed on a few at a
time.

A streamed answer arrives a token or so per chunk; an event per chunk would cost an event
(built and delivered to every sink) per token of every sub-agent, and even a Python call per
piece shows in a fan-out of thousands. So a streamed call gets a plain list to append its
pieces to (`open` returns its `append`), which the batcher holds until the call ends; two
kinds of reader use it:

- the run's sinks that handle `TokenDelta` events (`Swarm.stream`, a JSON-lines view):
  every `interval_s` while calls stream — and when a call ends, before its `model_called`
  event — the pieces appended since are published as `TokenDelta` events, consecutive
  pieces of the same kind joined into one. What a person watching sees arrives at most
  `interval_s` late (vLLM's `--stream-interval` makes the same trade on the server side).
  When no sink handles them, no event is built and no timer runs.
- the run's live file (`swarm.live_tokens`), which reads the answer a watched sub-agent is
  writing straight from here (`answer`), a few times a second, and nobody else's.
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
    """One streamed call's pieces so far, and how many of them were published."""

    __slots__ = ("call", "pieces", "sent")

    def __init__(self, call: int) -> None:
        self.call = call
        self.pieces: list[Delta] = []
        self.sent = 0


class DeltaBatcher:
    """Holds the pieces of the run's streamed calls while they stream and publishes them as
    `TokenDelta` events where a sink handles those (see the module)."""

    def __init__(self, journal: Journal, interval_s: float = INTERVAL_S) -> None:
        self.journal = journal
        self.interval_s = interval_s
        #: Whether any sink of the run handles `TokenDelta` events (else none is built).
        self.publishing = journal.wants(ev.TokenDelta)
        self._open: dict[tuple[str, int], _Stream] = {}
        #: Each streaming sub-agent's latest call still open.
        self._latest: dict[str, _Stream] = {}
        self._timer: asyncio.TimerHandle | None = None

    def open(self, subtask_id: str, call: int) -> DeltaFn:
        """A streamed call `call` (of this attempt) of `subtask_id` begins; returns what
        its pieces go to, as they arrive."""
        stream = self._open[(subtask_id, call)] = self._latest[subtask_id] = _Stream(call)
        if self.publishing and self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self.interval_s, self._tick)
        return stream.pieces.append

    def end(self, subtask_id: str, call: int) -> None:
        """The call ended (answered or not): publish what is left of it now."""
        stream = self._open.pop((subtask_id, call), None)
        if stream is None:
            return
        if self._latest.get(subtask_id) is stream:
            del self._latest[subtask_id]
        if self.publishing and len(stream.pieces) > stream.sent:
            self._publish(subtask_id, call, stream.pieces[stream.sent :])

    def answer(self, subtask_id: str) -> tuple[int, list[Delta]] | None:
        """The latest call `subtask_id` is streaming now and its pieces so far (the list
        grows as they arrive; read it, do not change it), or None when it streams nothing."""
        stream = self._latest.get(subtask_id)
        return None if stream is None else (stream.call, stream.pieces)

    def _tick(self) -> None:
        """Publish the pieces appended since the last tick; tick again while calls stream."""
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
        self._latest.clear()

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
