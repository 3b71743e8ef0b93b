"""The admission gate on model calls: at most the current call limit in flight, FIFO.

Lowering the admission limit only stops new sub-agents from starting; sub-agents already
running (a burst that all got 429 and now retries) would still call the server at the old
concurrency. This gate holds every model call to the current limit as well, so a back-off
reaches the server at once. Waiters are served first come, first served.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable


class CallGate:
    """Counts model calls in flight and makes callers wait while `limit()` are."""

    __slots__ = ("_limit", "_waiters", "in_flight")

    def __init__(self, limit: Callable[[], float]) -> None:
        self._limit = limit
        self._waiters: deque[asyncio.Future[None]] = deque()
        self.in_flight = 0

    def try_acquire(self) -> bool:
        """Take a slot if one is free and nobody waits; never blocks."""
        if self.in_flight < self._limit() and not self._waiters:
            self.in_flight += 1
            return True
        return False

    async def acquire(self) -> None:
        """Take a slot, waiting for one if the limit is reached (or others wait already)."""
        if self.in_flight < self._limit() and not self._waiters:
            self.in_flight += 1
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        try:
            await fut  # the releaser counted the slot for us
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():  # granted as we were cancelled: pass it on
                self.release()
            elif fut in self._waiters:
                self._waiters.remove(fut)
            raise

    def release(self) -> None:
        """Give a slot back and let waiters in."""
        self.in_flight -= 1
        self.wake()

    def wake(self) -> None:
        """Admit waiters while there is room (call it when the limit rises too)."""
        while self._waiters and self.in_flight < self._limit():
            fut = self._waiters.popleft()
            if not fut.done():
                self.in_flight += 1
                fut.set_result(None)


__all__ = ["CallGate"]
