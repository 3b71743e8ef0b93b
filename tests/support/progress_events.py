"""Events of a scripted run, built by hand, for the progress tests."""

from __future__ import annotations

import re

from kimmy_swarm.swarm.events import (
    Event,
    ModelCalled,
    RunFinished,
    RunStarted,
    SpawnRefused,
    SubtaskFinished,
    SubtaskRetrying,
    SubtasksSpawned,
    SubtaskStarted,
)
from kimmy_swarm.swarm.progress import (
    JsonLinesSink,
    LineSink,
    LiveView,
    RunStats,
)
from kimmy_swarm.swarm.schema import (
    ErrorInfo,
    RunStatus,
    Subtask,
    SubtaskResult,
    SubtaskStatus,
    Usage,
)

RUN = "run-1"
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self, t: float = 0.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


# --- event builders ---------------------------------------------------------------------


def run_started(
    n: int = 5, *, roles: dict[str, int] | None = None, **settings: int | bool
) -> RunStarted:
    return RunStarted(
        run_id=RUN,
        ts=1.0,
        goal="write a report",
        n_subtasks=n,
        settings=settings,
        roles=roles or {},
    )


def started(sid: str, role: str, attempt: int = 1) -> SubtaskStarted:
    return SubtaskStarted(run_id=RUN, ts=1.0, subtask_id=sid, role=role, attempt=attempt)


def finished(
    sid: str,
    role: str,
    status: SubtaskStatus = SubtaskStatus.DONE,
    error: ErrorInfo | None = None,
) -> SubtaskFinished:
    result = SubtaskResult(id=sid, role=role, status=status, error=error, output="ok")
    return SubtaskFinished(run_id=RUN, ts=1.0, result=result)


def failed(sid: str, role: str, message: str = "boom") -> SubtaskFinished:
    return finished(sid, role, SubtaskStatus.FAILED, ErrorInfo(type="ValueError", message=message))


def model_called(sid: str, tokens: int, *, error: bool = False) -> ModelCalled:
    return ModelCalled(
        run_id=RUN,
        ts=1.0,
        subtask_id=sid,
        latency_s=0.25,
        usage=Usage(prompt_tokens=tokens - 1, completion_tokens=1, total_tokens=tokens),
        error=ErrorInfo(type="RateLimited", message="429", retryable=True) if error else None,
    )


def retrying(sid: str, attempt: int = 1) -> SubtaskRetrying:
    err = ErrorInfo(type="Timeout", message="slow", retryable=True)
    return SubtaskRetrying(
        run_id=RUN, ts=1.0, subtask_id=sid, attempt=attempt, error=err, delay_s=1
    )


def spawned(parent: str, *subs: tuple[str, str]) -> SubtasksSpawned:
    children = [Subtask(id=i, role=r, parent=parent, depth=1) for i, r in subs]
    return SubtasksSpawned(run_id=RUN, ts=1.0, parent_id=parent, subtasks=children)


def run_finished(status: RunStatus = RunStatus.COMPLETED, **counts: int) -> RunFinished:
    return RunFinished(run_id=RUN, ts=9.0, status=status, counts=counts)


def feed(sink: RunStats | LiveView | LineSink | JsonLinesSink, events: list[Event]) -> None:
    for ev in events:
        sink.handle(ev)


def scripted_run() -> list[Event]:
    """Five planned subtasks, two spawned, a failure, a retry, three model calls."""
    return [
        run_started(5, max_concurrency=4),
        started("a", "writer"),
        started("b", "writer"),
        started("c", "critic"),
        model_called("a", 10),
        model_called("b", 20, error=True),
        model_called("c", 5),
        finished("a", "writer"),
        failed("b", "writer"),
        retrying("c"),
        spawned("a", ("a.1", "critic"), ("a.2", "judge")),
        SpawnRefused(run_id=RUN, ts=1.0, parent_id="a", error=ErrorInfo(type="Limit", message="x")),
    ]
