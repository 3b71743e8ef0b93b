"""Per-attempt timeouts for thousands of concurrent subtasks, one timer per time bucket.

`asyncio.timeout` arms one timer per subtask; with 10,000 subtasks that is 10,000 heap
entries pushed and cancelled, and as many objects for the garbage collector to trace.
Here tasks started in the same few milliseconds with the same timeout share a bucket, each
bucket arms one timer that cancels every task still in it, and nothing is allocated per
attempt. Deadlines are rounded up to the bucket width: a timeout fires up to 10 ms (or
0.1% of the timeout) late.
"""

from __future__ import annotations

import asyncio
import math


class Deadlines:
    """Arms and disarms per-attempt deadlines of tasks on the running loop.

    A bucket's timer stays armed when its bucket empties (sub-agents that finish fast would
    otherwise arm and cancel a timer each); it fires once, finds nothing, and is gone.
    """

    def __init__(self, resolution_s: float = 0.01) -> None:
        self.resolution_s = resolution_s
        self._buckets: dict[float, set[asyncio.Task[object]]] = {}
        self._armed: dict[asyncio.Task[object], float] = {}
        self._expired: set[asyncio.Task[object]] = set()
        self._widths: dict[float, float] = {}

    def arm(self, task: asyncio.Task[object], timeout_s: float) -> None:
        """Cancel `task` about `timeout_s` from now unless it is disarmed first."""
        loop = asyncio.get_running_loop()
        width = self._widths.get(timeout_s)
        if width is None:
            width = self._widths[timeout_s] = max(self.resolution_s, timeout_s / 1000)
        when = math.ceil((loop.time() + timeout_s) / width) * width
        bucket = self._buckets.get(when)
        if bucket is None:
            bucket = self._buckets[when] = set()
            loop.call_at(when, self._fire, when)
        bucket.add(task)
        self._armed[task] = when

    def disarm(self, task: asyncio.Task[object]) -> bool:
        """Disarm `task`'s deadline; returns whether it had expired (and cancelled the task)."""
        when = self._armed.pop(task, None)
        if when is not None:
            bucket = self._buckets.get(when)
            if bucket is not None:
                bucket.discard(task)
        if task in self._expired:
            self._expired.discard(task)
            return True
        return False

    def pause(self, task: asyncio.Task[object]) -> float | None:
        """Disarm `task`'s deadline for a while (it waits for a person); returns the seconds
        it had left, for `arm` to continue with (None: it had no deadline armed)."""
        when = self._armed.get(task)
        if when is None:
            return None
        self.disarm(task)
        return max(0.0, when - asyncio.get_running_loop().time())

    def _fire(self, when: float) -> None:
        for task in self._buckets.pop(when, ()):
            self._armed.pop(task, None)
            self._expired.add(task)
            task.cancel()


__all__ = ["Deadlines"]
