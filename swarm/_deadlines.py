"""Per-attempt timeouts for thousands of concurrent subtasks, one timer per time bucket.

`asyncio.timeout` arms one timer per subtask; with 10,000 subtasks that is 10,000 heap
entries pushed and cancelled. Subtasks started in the same few milliseconds with the same
timeout share a bucket here, and each bucket arms one timer that cancels every task still
in it. Deadlines are rounded up to `resolution_s` (a timeout fires up to 10 ms late).
"""

from __future__ import annotations

import asyncio
import math


class Deadline:
    """One attempt's deadline; `expired` is set just before its task is cancelled."""

    __slots__ = ("bucket", "expired", "task")

    def __init__(self, task: asyncio.Task[object], bucket: int) -> None:
        self.task = task
        self.bucket = bucket
        self.expired = False


class Deadlines:
    """Arms and disarms per-attempt deadlines on the running loop."""

    def __init__(self, resolution_s: float = 0.01) -> None:
        self.resolution_s = resolution_s
        self._buckets: dict[int, set[Deadline]] = {}
        self._timers: dict[int, asyncio.TimerHandle] = {}

    def arm(self, timeout_s: float) -> Deadline:
        """A deadline `timeout_s` from now for the current task."""
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("Deadlines.arm must be called from inside a task")
        key = math.ceil((loop.time() + timeout_s) / self.resolution_s)
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = set()
            self._timers[key] = loop.call_at(key * self.resolution_s, self._fire, key)
        deadline = Deadline(task, key)
        bucket.add(deadline)
        return deadline

    def disarm(self, deadline: Deadline) -> None:
        bucket = self._buckets.get(deadline.bucket)
        if bucket is None:
            return
        bucket.discard(deadline)
        if not bucket:  # nothing left to time out: drop the timer too
            del self._buckets[deadline.bucket]
            self._timers.pop(deadline.bucket).cancel()

    def _fire(self, key: int) -> None:
        self._timers.pop(key, None)
        for deadline in self._buckets.pop(key, ()):
            deadline.expired = True
            deadline.task.cancel()


__all__ = ["Deadline", "Deadlines"]
