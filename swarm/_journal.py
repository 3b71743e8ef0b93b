"""The event journal of one run: numbering, group commit to the store, delivery to sinks.

With a store, events are buffered and written in one SQLite transaction per event-loop
iteration (group commit). Work that must wait for durability — releasing a finished
subtask's dependents — is queued with `after_commit` and runs right after that transaction.
Without a store and without sinks, no event object is built at all.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from swarm._trusted import trusted
from swarm.errors import StoreError

if TYPE_CHECKING:
    from swarm.events import Event
    from swarm.store import RunStore


class EventSink(Protocol):
    """Anything that wants every event of a run (progress views, streams, tests)."""

    def handle(self, event: Event) -> None: ...


class Journal:
    """Numbers, stores and delivers the events of one run."""

    def __init__(
        self,
        run_id: str,
        *,
        store: RunStore | None,
        sinks: Sequence[EventSink],
        seq_start: int,
        on_fatal: Callable[[BaseException], None],
    ) -> None:
        self.run_id = run_id
        self.store = store
        self.sinks = list(sinks)
        self.seq = seq_start
        self.on_fatal = on_fatal
        self.listened = store is not None or bool(self.sinks)
        self._buffer: list[Any] = []
        self._posts: list[Callable[[], None]] = []
        self._scheduled = False

    def emit(self, cls: type[Any], **fields: Any) -> None:
        """Build, number and record one event of type `cls`."""
        seq = self.seq
        self.seq += 1
        if not self.listened:  # nobody records or watches: build nothing
            return
        fields.update(run_id=self.run_id, seq=seq, ts=time.time())
        event = trusted(cls, fields)  # every field is the runtime's own, of the right type
        if self.store is None:
            self._deliver(event)
            return
        self._buffer.append(event)
        self._schedule()

    def after_commit(self, fn: Callable[[], None]) -> None:
        """Run `fn` once every event emitted so far is durable."""
        if self.store is None:
            fn()
            return
        self._posts.append(fn)
        self._schedule()

    def _schedule(self) -> None:
        if not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self.flush)

    def _deliver(self, event: Any) -> None:
        for sink in self.sinks:
            try:
                sink.handle(event)
            except Exception as exc:  # noqa: BLE001  a broken sink stops the run, loudly
                self.on_fatal(exc)

    def flush(self) -> None:
        """Commit buffered events, deliver them, then run what waited for the commit."""
        self._scheduled = False
        events, self._buffer = self._buffer, []
        posts, self._posts = self._posts, []
        if events and self.store is not None:
            try:
                self.store.append(self.run_id, events)
            except Exception as exc:  # noqa: BLE001  nothing unstored may be acknowledged
                error = StoreError(
                    f"cannot write run {self.run_id} to {self.store.path}: "
                    f"{type(exc).__name__}: {exc}"
                )
                error.__cause__ = exc
                self.on_fatal(error)
                return
            for event in events:
                self._deliver(event)
        for fn in posts:
            fn()


__all__ = ["EventSink", "Journal"]
