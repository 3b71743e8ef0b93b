"""Per-attempt timeouts for thousands of concurrent subtasks, one timer per time bucket.

`asyncio.timeout` arms one timer per subtask; with 10,000 subtasks that is 10,000 heap
entries pushed and cancelled. Subtasks started in the same few milliseconds with the same
timeout share a bucket here, and each bucket arms one timer that cancels every task still
in it. Deadlines are rounded up to the bucket width (a timeout fires up to 10 ms, or 0.1%, late).
"""

from __future__ import annotations

import asyncio
import math


class Deadline:
    """One attempt's deadline; `expired` is set just before its task is cancelled."""

    __slots__ = ("bucket", "expired", "task")

    def __init__(self, task: asyncio.Task[object], bucket: float) -> None:
        self.task = task
        self.bucket = bucket
        self.expired = False


class Deadlines:
    """Arms and disarms per-attempt deadlines on the running loop.

    A bucket's timer stays armed when its bucket empties (sub-agents that finish fast would
    otherwise arm and cancel a timer each); it fires once, finds nothing, and is gone.
    Buckets are `resolution_s` wide, or 0.1% of the timeout for long timeouts, so a run
    holds at most about a thousand of them per timeout value.
    """

    def __init__(self, resolution_s: float = 0.01) -> None:
        self.resolution_s = resolution_s
        self._buckets: dict[float, set[Deadline]] = {}
        self._widths: dict[float, float] = {}

    def arm(self, timeout_s: float) -> Deadline:
        """A deadline `timeout_s` from now for the current task."""
        loop = asyncio.get_running_loop()
        task = asyncio.current_task(loop)
        if task is None:
            raise RuntimeError("Deadlines.arm must be called from inside a task")
        width = self._widths.get(timeout_s)
        if width is None:
            width = self._widths[timeout_s] = max(self.resolution_s, timeout_s / 1000)
        when = math.ceil((loop.time() + timeout_s) / width) * width
        bucket = self._buckets.get(when)
        if bucket is None:
            bucket = self._buckets[when] = set()
            loop.call_at(when, self._fire, when)
        deadline = Deadline(task, when)
        bucket.add(deadline)
        return deadline

    def disarm(self, deadline: Deadline) -> None:
        bucket = self._buckets.get(deadline.bucket)
        if bucket is not None:
            bucket.discard(deadline)

    def _fire(self, when: float) -> None:
        for deadline in self._buckets.pop(when, ()):
            deadline.expired = True
            deadline.task.cancel()


__all__ = ["Deadline", "Deadlines"]
