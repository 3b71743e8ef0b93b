"""`AsyncEngine`: drives an `LLMEngine` from asyncio for servers and in-process clients.

The engine's steps run in a worker thread (they are CPU/GPU bound) one after another;
requests and aborts submitted from the event loop are queued and applied between steps, so
the engine itself stays single-threaded. Each request gets a `RequestStream`: an async
iterator of its `TokenEvent`s that ends after the event carrying `finish_reason`. Closing a
stream early (a client that disconnects) aborts the request and frees its cache.

A request that fails in the engine ends its own stream with that exception; the loop goes
on. Only an error outside any one request (the scheduler itself) stops the loop: every open
stream then ends with `EngineStoppedError`, `error` keeps the cause, and `submit` refuses new
requests at once with the same error (HTTP 503), so nothing waits on a loop that is gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import threading
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

from kimmy_swarm.model.errors import EngineOverloadedError, KimiModelError
from kimmy_swarm.model.serve.engine import LLMEngine
from kimmy_swarm.model.serve.types import EngineStats, GenerationParams, TokenEvent

__all__ = ["AsyncEngine", "EngineStoppedError", "RequestStream"]

_RATE_WINDOW_S = 30.0  # completions counted for the Retry-After estimate


class EngineStoppedError(KimiModelError):
    """The engine's loop stopped after an error; no request can run until a restart
    (HTTP 503). `__cause__` is that error."""


class RequestStream:
    """The events of one request, in order; `abort()` (or leaving early) cancels it."""

    def __init__(self, owner: AsyncEngine, request_id: str, prompt_tokens: int) -> None:
        self.request_id = request_id
        self.prompt_tokens = prompt_tokens
        self.cached_tokens = 0
        self.finished = False
        self._owner = owner
        self._queue: asyncio.Queue[TokenEvent | BaseException] = asyncio.Queue()

    def __aiter__(self) -> AsyncIterator[TokenEvent]:
        return self._events()

    async def _events(self) -> AsyncIterator[TokenEvent]:
        try:
            while True:
                item = await self._queue.get()
                if isinstance(item, BaseException):
                    raise item
                yield item
                if item.finish_reason is not None:
                    self.finished = True
                    return
        finally:
            if not self.finished:
                self.abort()

    def abort(self) -> None:
        if not self.finished:
            self.finished = True
            self._owner._abort(self.request_id)


class AsyncEngine:
    """Owns the step loop task; use `async with AsyncEngine(engine) as ae:`."""

    def __init__(self, engine: LLMEngine, *, model_name: str = "kimmy") -> None:
        self.engine = engine
        self.model_name = model_name
        self._streams: dict[str, RequestStream] = {}
        self._incoming: deque[tuple[str, list[int], GenerationParams]] = deque()
        self._aborts: deque[str] = deque()
        self._lock = threading.Lock()  # guards the two deques (event loop ↔ step thread)
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.error: BaseException | None = None
        self._finished_at: deque[float] = deque(maxlen=4096)  # times of recent completions

    async def __aenter__(self) -> AsyncEngine:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def start(self) -> None:
        if self._task is None:
            self._loop = asyncio.get_running_loop()
            self._task = asyncio.create_task(self._run(), name="kimmy-engine-loop")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    # ---- requests ------------------------------------------------------------------------
    def submit(
        self,
        prompt_ids: list[int],
        params: GenerationParams,
        *,
        request_id: str | None = None,
    ) -> RequestStream:
        """Queue a request. Raises GenerationError (bad request), EngineOverloadedError
        (too much queued) or EngineStoppedError (the loop has stopped) at once, before
        anything is queued."""
        if self.error is not None:
            raise self._stopped()
        rid = request_id or uuid.uuid4().hex
        eng = self.engine
        eng.validate(prompt_ids, params, request_id=rid)
        with self._lock:
            queued = len(self._incoming) + len(eng.scheduler.waiting)
            tokens = sum(len(p) for _, p, _ in self._incoming)
        if queued >= eng.config.max_waiting or (
            tokens + eng.scheduler.waiting_prefill_tokens + len(prompt_ids)
            > eng.config.max_waiting_prefill_tokens
        ):
            raise EngineOverloadedError(
                f"{queued} requests are already queued", retry_after=self.retry_after()
            )
        stream = RequestStream(self, rid, len(prompt_ids))
        self._streams[rid] = stream
        with self._lock:
            self._incoming.append((rid, list(prompt_ids), params))
        self._wake.set()
        return stream

    def retry_after(self) -> float:
        """Seconds a refused client should wait: the time the engine needs, at its recent
        completion rate, to finish as many requests as are queued now (1 s to 60 s; 1 s
        before any request has finished)."""
        now = time.monotonic()
        while self._finished_at and self._finished_at[0] < now - _RATE_WINDOW_S:
            self._finished_at.popleft()
        if len(self._finished_at) < 2:
            return 1.0
        span = max(now - self._finished_at[0], 1e-3)
        rate = len(self._finished_at) / span  # requests finished per second
        with self._lock:
            queued = len(self._incoming) + len(self.engine.scheduler.waiting)
        return float(min(max(math.ceil(queued / rate), 1), 60))

    def _abort(self, request_id: str) -> None:
        self._streams.pop(request_id, None)
        with self._lock:
            self._aborts.append(request_id)
        self._wake.set()

    def stats(self) -> EngineStats:
        return self.engine.stats()

    # ---- the loop ------------------------------------------------------------------------
    def _step(self) -> tuple[list[TokenEvent], list[tuple[str, BaseException]], dict[str, int]]:
        """In the worker thread: apply queued requests/aborts, then one engine step."""
        failed: list[tuple[str, BaseException]] = []
        with self._lock:
            incoming, self._incoming = list(self._incoming), deque()
            aborts, self._aborts = list(self._aborts), deque()
        for rid in aborts:
            if not self.engine.abort(rid):
                incoming = [r for r in incoming if r[0] != rid]
        for rid, prompt, params in incoming:
            try:
                self.engine.add_request(prompt, params, request_id=rid)
            except Exception as e:  # noqa: BLE001 — reported to that request's stream
                failed.append((rid, e))
        events = self.engine.step() if self.engine.has_unfinished() else []
        failed += self.engine.pop_failures()  # requests the step dropped, each with its error
        cached = {e.request_id: self.engine.seqs[e.request_id].cached_tokens
                  for e in events if e.request_id in self.engine.seqs}  # fmt: skip
        for e in events:
            if e.finish_reason is not None:
                self.engine.seqs.pop(e.request_id, None)
        return events, failed, cached

    async def _run(self) -> None:
        try:
            while True:
                if not (self.engine.has_unfinished() or self._incoming or self._aborts):
                    self._wake.clear()
                    await self._wake.wait()
                events, failed, cached = await asyncio.to_thread(self._step)
                for rid, exc in failed:
                    self._deliver(rid, exc)
                for e in events:
                    if e.finish_reason is not None:
                        self._finished_at.append(time.monotonic())
                    stream = self._streams.get(e.request_id)
                    if stream is not None:
                        stream.cached_tokens = cached.get(e.request_id, stream.cached_tokens)
                    self._deliver(e.request_id, e)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001 — kept in `error`, given to every stream
            # not re-raised: `error` holds it for /health, every open stream and every later
            # submit get an EngineStoppedError caused by it (and uvicorn logs each of those)
            self.error = e
            for rid in list(self._streams):
                self._deliver(rid, self._stopped())

    def _stopped(self) -> EngineStoppedError:
        e = self.error
        stopped = EngineStoppedError(
            f"the engine has stopped after an error ({type(e).__name__}: {e}); restart the server"
        )
        stopped.__cause__ = e
        return stopped

    def _deliver(self, rid: str, item: Any) -> None:
        stream = self._streams.get(rid)
        if stream is None:
            return
        stream._queue.put_nowait(item)
        if isinstance(item, BaseException) or item.finish_reason is not None:
            self._streams.pop(rid, None)
