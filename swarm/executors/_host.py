"""The host side of the Ray executor: one async actor per node runs many sub-agent attempts.

`AttemptHost` is a plain class here (Ray is imported only by `swarm.executors.ray`, which
wraps it with `ray.remote`). For each attempt it runs the real worker with a
`RemoteContext` that records what must happen in the driver — model calls (latency, usage,
error, logprobs), agent steps and tool calls, spawn requests — and returns the record with
the output or the encoded error. The driver replays the record (see `swarm.executors.ray`).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from kimmy_swarm.swarm.context import SubtaskContext
from kimmy_swarm.swarm.errors import ModelError
from kimmy_swarm.swarm.executors._errors import encode_error
from kimmy_swarm.swarm.llm.types import ChatResponse, MessageLike
from kimmy_swarm.swarm.schema import NO_USAGE, Subtask, SubtaskResult
from kimmy_swarm.swarm.worker import Worker

if TYPE_CHECKING:
    from kimmy_swarm.swarm.llm.capabilities import Capabilities
    from kimmy_swarm.swarm.llm.server_profile import ServerProfile

#: One model call made on a host: (latency_s, response or None, error or None).
RecordedCall = tuple[float, ChatResponse | None, ModelError | None]
#: What one attempt sends to a host: (role, subtask, run_id, attempt, upstream results).
Payload = tuple[str, Subtask, str, int, dict[str, SubtaskResult]]
#: What it returns: (ok, output or encoded error, calls, agent events, spawn requests).
Reply = tuple[bool, Any, list[RecordedCall], list[tuple[str, dict[str, Any]]], list[Any]]


class RecordingModel:
    """The host's model as a worker sees it: every call is recorded for the driver."""

    __slots__ = ("_inner", "calls", "name", "usage")

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.name = inner.name
        self.usage = NO_USAGE
        self.calls: list[RecordedCall] = []

    async def chat(self, messages: Sequence[MessageLike], **options: Any) -> ChatResponse:
        t0 = time.perf_counter()
        try:
            response = await self._inner.chat(messages, **options)
        except ModelError as exc:
            self.calls.append((time.perf_counter() - t0, None, exc))
            raise
        self.usage = self.usage + response.usage
        self.calls.append((time.perf_counter() - t0, response, None))
        return response

    async def aclose(self) -> None:  # the host owns the inner model's lifetime
        return None

    @property
    def context_length(self) -> int | None:
        """The inner model's context length, when it knows it."""
        return getattr(self._inner, "context_length", None)

    @property
    def capabilities(self) -> Capabilities | None:
        """What the inner model's server honours, when it says (`swarm.llm.capabilities`)."""
        return getattr(self._inner, "capabilities", None)

    @property
    def profile(self) -> ServerProfile | None:
        """The inner model's server profile, when it has one (`swarm.llm.server_profile`)."""
        return getattr(self._inner, "profile", None)


class RemoteContext(SubtaskContext):
    """A `SubtaskContext` whose agent trace and spawns are recorded for the driver.

    `spawn` returns the subtasks as requested (their `parent` and `depth` are set by the
    driver); the driver validates the spawn when the attempt returns, so a `SpawnError`
    surfaces then, failing the attempt, instead of inside the worker.
    """

    __slots__ = ("events", "spawns")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.spawns: list[tuple[list[Subtask], list[str]]] = []
        super().__init__(*args, spawn=self._record_spawn, **kwargs)

    def _record_spawn(
        self, parent: Subtask, subtasks: Sequence[Subtask], feeds: Sequence[str]
    ) -> list[Subtask]:
        self.spawns.append((list(subtasks), list(feeds)))
        return list(subtasks)

    def record_step(
        self,
        step: int,
        *,
        policy: str,
        tools: Sequence[str] = (),
        outcome: str,
        error: str | None = None,
    ) -> None:
        fields = {"step": step, "policy": policy, "tools": list(tools), "outcome": outcome}
        self.events.append(("step", {**fields, "error": error}))

    def record_tool(
        self, tool: str, *, step: int, latency_s: float, error: str | None = None
    ) -> None:
        fields = {"tool": tool, "step": step, "latency_s": latency_s, "error": error}
        self.events.append(("tool", fields))


class AttemptHost:
    """Runs attempts of sub-agents; one instance per Ray node (an async actor).

    Args:
        workers: the swarm's workers by role (sent once, when the actor is created).
        model: the swarm's model (rebuilt here from its pickle: no live connections).
    """

    def __init__(self, workers: Mapping[str, Worker], model: Any | None) -> None:
        self.workers = dict(workers)
        self.model = model
        self.attempts = 0
        self.pid = os.getpid()
        self.running: dict[int, asyncio.Task[Reply]] = {}

    def info(self) -> dict[str, Any]:
        """Where this host runs and how many attempts it has started."""
        import ray

        node_id = ray.get_runtime_context().get_node_id()
        return {"node_id": node_id, "pid": self.pid, "attempts": self.attempts}

    async def run_attempt(self, payload: Payload) -> Reply:
        """Run one attempt of one subtask; never raises for the worker's own errors."""
        role, subtask, run_id, attempt, upstream = payload
        self.attempts += 1
        model = RecordingModel(self.model) if self.model is not None else None
        ctx = RemoteContext(
            subtask, run_id=run_id, attempt=attempt, upstream_results=upstream, model=model
        )
        calls = model.calls if model is not None else []
        try:
            output = await self.workers[role](ctx)
        except Exception as exc:  # noqa: BLE001  the driver re-raises it as the worker's
            return False, encode_error(exc), calls, ctx.events, ctx.spawns
        if isinstance(output, BaseModel):  # the driver validates it against the schema
            output = output.model_dump(mode="json")
        return True, output, calls, ctx.events, ctx.spawns

    async def run_batch(self, items: list[tuple[int, Payload]]) -> Any:
        """Run many attempts at once; yields `[(key, reply), …]` as they finish.

        A streaming generator: one actor call carries a batch of attempts, yet each
        attempt's reply reaches the driver as soon as it (and any finishing with it) is done.
        """
        keys: dict[asyncio.Task[Reply], int] = {}
        for key, payload in items:
            task = asyncio.create_task(self.run_attempt(payload))
            keys[task] = key
            self.running[key] = task
        pending = set(keys)
        try:
            while pending:
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                replies = []
                for task in done:
                    key = keys[task]
                    del self.running[key]
                    if not task.cancelled():
                        replies.append((key, task.result()))
                if replies:
                    yield replies
        finally:
            for task in pending:
                task.cancel()
                self.running.pop(keys[task], None)

    def cancel_attempt(self, key: int) -> None:
        """Cancel one running attempt of a batch (the driver's timeout or cancellation)."""
        task = self.running.get(key)
        if task is not None:
            task.cancel()

    async def aclose(self) -> None:
        """Close the model's connections (before the actor is killed)."""
        if self.model is not None:
            await self.model.aclose()


__all__ = ["AttemptHost", "Payload", "RecordedCall", "RecordingModel", "RemoteContext", "Reply"]
