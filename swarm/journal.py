"""The event journal of one run: numbering, group commit to the store, delivery to sinks.

With a store, events are buffered and handed, a batch at a time, to one writer thread that
writes each batch in one SQLite transaction (group commit): the event loop never waits on
the disk, and while one batch commits the next one gathers. Work that must wait for
durability — releasing a finished subtask's dependents, showing events to sinks — runs on
the loop right after its batch committed (`after_commit`). Without a store and without
sinks, no event object is built at all.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Protocol

from kimmy_swarm.swarm.errors import StoreError
from kimmy_swarm.swarm.unvalidated import trusted

if TYPE_CHECKING:
    from kimmy_swarm.swarm.events import Event
    from kimmy_swarm.swarm.store import RunStore


class EventSink(Protocol):
    """Anything that wants every event of a run (progress views, streams, tests); one that
    folds them into state subclasses `swarm.event_fold.EventFold`.

    A sink may also say which events it has no use for, by a method `wants(cls) -> bool`
    (an `EventFold` has one: the types it has handlers for): then events of a type no sink
    wants and the store does not keep (`TokenDelta`) are not built at all.
    """

    def handle(self, event: Event) -> None: ...


def _everything(cls: type[Any]) -> bool:
    """What a sink without `wants` wants: every event."""
    return True


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
        self._writing = False
        self._idle: asyncio.Event | None = None
        self._writer: ThreadPoolExecutor | None = None

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

    def wants(self, cls: type[Any]) -> bool:
        """Whether a sink wants events of type `cls` (see `EventSink`)."""
        return any(getattr(sink, "wants", _everything)(cls) for sink in self.sinks)

    def publish(self, cls: type[Any], **fields: Any) -> None:
        """Deliver one event of type `cls` to the sinks now, without storing it (a token
        delta: the store keeps whole answers); its seq is the next stored event's."""
        if not self.sinks:
            return
        fields.update(run_id=self.run_id, seq=self.seq, ts=time.time())
        self._deliver(trusted(cls, fields))

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
        """Hand buffered events to the writer (or, without a store, run what waited)."""
        self._scheduled = False
        if self.store is None:
            posts, self._posts = self._posts, []
            for fn in posts:
                fn()
            return
        if self._writing or not (self._buffer or self._posts):
            return  # the batch being written finishes first; this one follows it
        events, self._buffer = self._buffer, []
        posts, self._posts = self._posts, []
        if not events:
            for fn in posts:
                fn()
            return
        loop = asyncio.get_running_loop()
        if self._writer is None:
            self._writer = ThreadPoolExecutor(1, thread_name_prefix=f"kimmy-store-{self.run_id}")
        self._writing = True
        if self._idle is not None:
            self._idle.clear()
        job = self._writer.submit(self.store.append, self.run_id, events)
        job.add_done_callback(
            lambda done: loop.call_soon_threadsafe(self._committed, done, events, posts)
        )

    def _committed(
        self, job: Future[None], events: list[Any], posts: list[Callable[[], None]]
    ) -> None:
        self._writing = False
        if self._idle is not None:
            self._idle.set()
        exc = job.exception()
        if exc is not None:  # nothing unstored may be acknowledged: drop the batch, stop
            assert self.store is not None
            error = StoreError(
                f"cannot write run {self.run_id} to {self.store.path}: {type(exc).__name__}: {exc}"
            )
            error.__cause__ = exc
            self.on_fatal(error)
        else:
            for event in events:
                self._deliver(event)
            for fn in posts:
                fn()
        if self._buffer or self._posts:
            self._schedule()

    async def drain(self) -> None:
        """Wait until every event emitted so far is written and what waited for it ran."""
        while True:
            if self._writing:
                if self._idle is None:
                    self._idle = asyncio.Event()
                await self._idle.wait()
            elif self._buffer or self._posts:
                self.flush()
                if not self._writing:  # nothing was written (no store, or posts only)
                    continue
            else:
                return

    def close(self) -> None:
        """Stop the writer thread (after `drain`)."""
        if self._writer is not None:
            self._writer.shutdown(wait=True)
            self._writer = None


__all__ = ["EventSink", "Journal"]
