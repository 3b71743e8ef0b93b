"""Sub-agents waiting for the subtasks they spawned (an orchestrator's `wait`).

A waiting sub-agent is *parked*: it does not count against the run's concurrency while it
waits (the run loop adds `parked` to the room it dispatches into), so the subtasks it waits
for can start even when it holds the last slot. The run loop calls `notify` with the ids of
every result it applies, after the result is durable.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Literal

from kimmy_swarm.swarm.errors import WaitError

if TYPE_CHECKING:
    from kimmy_swarm.swarm.schema import Subtask, SubtaskResult
    from kimmy_swarm.swarm.steps import RunState

WaitMode = Literal["all", "any"]


class Waits:
    """The waiting sub-agents of one run.

    Args:
        state: the run's state (subtasks, their results).
        on_parked: called when a sub-agent parks (there is room for one more to start).
    """

    def __init__(self, state: RunState, on_parked: Callable[[], None]) -> None:
        self.state = state
        self.on_parked = on_parked
        #: Sub-agents waiting right now.
        self.parked = 0
        self._waiters: dict[str, list[asyncio.Future[None]]] = {}

    def close(self) -> None:
        self.on_parked = _nothing

    def notify(self, ids: Sequence[str]) -> None:
        """Wake the sub-agents waiting on any of `ids` (which now have results)."""
        if not self._waiters:
            return
        for key in ids:
            for fut in self._waiters.pop(key, ()):
                if not fut.done():
                    fut.set_result(None)

    def _check(self, waiter: Subtask, ids: Sequence[str]) -> None:
        subtasks = self.state.subtasks
        unknown = [i for i in ids if i not in subtasks]
        if unknown:
            raise WaitError(f"{waiter.id!r} cannot wait for unknown subtasks {unknown}", unknown)
        foreign = [i for i in ids if subtasks[i].parent != waiter.id]
        if foreign:
            raise WaitError(
                f"{waiter.id!r} can wait only for subtasks it spawned; not for {foreign}",
                foreign,
            )
        stuck = [i for i in ids if self._depends_on(i, waiter.id)]
        if stuck:
            raise WaitError(
                f"{waiter.id!r} cannot wait for {stuck}: they depend on it, so they start "
                "only after it finishes",
                stuck,
            )

    def _depends_on(self, key: str, target: str) -> bool:
        subtasks, seen, stack = self.state.subtasks, set(), [key]
        while stack:
            for dep in subtasks[stack.pop()].depends_on:
                if dep == target:
                    return True
                if dep not in seen and dep in subtasks:
                    seen.add(dep)
                    stack.append(dep)
        return False

    def _finished(self, ids: Sequence[str]) -> dict[str, SubtaskResult]:
        results = self.state.results
        return {i: results[i] for i in ids if i in results}

    async def wait(
        self, waiter: Subtask, ids: Sequence[str], mode: WaitMode, timeout_s: float | None
    ) -> dict[str, SubtaskResult]:
        """Wait for `ids` (see `SubtaskContext.wait`)."""
        if mode not in ("all", "any"):
            raise WaitError(f"wait mode must be 'all' or 'any', got {mode!r}")
        if timeout_s is not None and not timeout_s >= 0:
            raise WaitError(f"wait timeout must be a number of seconds ≥ 0, got {timeout_s!r}")
        self._check(waiter, ids)
        got = self._finished(ids)
        if len(got) == len(ids) or (mode == "any" and got) or timeout_s == 0:
            return got
        loop = asyncio.get_running_loop()
        until = None if timeout_s is None else loop.time() + timeout_s
        self.parked += 1
        self.on_parked()
        fut: asyncio.Future[None] | None = None
        try:
            while True:
                fut = loop.create_future()
                for key in ids:
                    if key not in self.state.results:
                        self._waiters.setdefault(key, []).append(fut)
                left = None if until is None else until - loop.time()
                if left is not None and left <= 0:
                    return self._finished(ids)
                try:
                    await asyncio.wait_for(fut, left)
                except TimeoutError:
                    return self._finished(ids)
                got = self._finished(ids)
                if len(got) == len(ids) or (mode == "any" and got):
                    return got
        finally:
            self.parked -= 1
            if fut is not None and not fut.done():
                fut.cancel()
            for key in ids:
                waiting = self._waiters.get(key)
                if waiting is not None:
                    waiting[:] = [f for f in waiting if not f.done()]
                    if not waiting:
                        del self._waiters[key]


def _nothing() -> None:
    """A callback arriving after its run ended has nothing left to do."""


__all__ = ["WaitMode", "Waits"]
