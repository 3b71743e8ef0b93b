"""The data that crosses boundaries: plans, subtasks, results and run records.

Every model here round-trips through JSON exactly (`Model.model_validate_json(m.model_dump_json())
== m`). The typed event union built on these lives beside it, in `swarm.events`.
"""

from __future__ import annotations

import traceback
from collections.abc import Iterable
from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, JsonValue

#: Subtask ids: short, printable, safe in file names, URLs and log lines.
SUBTASK_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,199}$"
ROLE_PATTERN = r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$"

SubtaskId = Annotated[str, Field(pattern=SUBTASK_ID_PATTERN)]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Subtask(_Frozen):
    """One unit of work for one sub-agent.

    `depends_on` lists subtasks whose outputs this one receives; `output_schema` names a
    registered pydantic model the output must validate against; `timeout_s` and
    `max_retries` override the swarm's defaults for this subtask only. `role_spec` defines
    a role made at run time (its prompt, tools, schema — whatever the swarm's role factory
    reads) for a `role` no worker is registered for.
    """

    id: SubtaskId
    role: Annotated[str, Field(pattern=ROLE_PATTERN)]
    instructions: str = ""
    inputs: dict[str, JsonValue] = Field(default_factory=dict)
    depends_on: list[SubtaskId] = Field(default_factory=list)
    output_schema: str | None = None
    # strict: `true` is not 1 and `"2"` is not 2 (a plan that says so has a mistake in it)
    timeout_s: Annotated[float, Field(gt=0, allow_inf_nan=False, strict=True)] | None = None
    max_retries: Annotated[int, Field(ge=0, le=100, strict=True)] | None = None
    #: The subtask that spawned this one at run time (None for planned subtasks).
    parent: SubtaskId | None = None
    #: Spawn depth: 0 for planned subtasks, parent's depth + 1 for spawned ones.
    depth: Annotated[int, Field(ge=0, strict=True)] = 0
    #: The definition of a run-time role, read by the swarm's role factory.
    role_spec: dict[str, JsonValue] | None = None


class Plan(_Frozen):
    """A goal and the DAG of subtasks that reaches it."""

    goal: str = ""
    subtasks: list[Subtask] = Field(default_factory=list)

    def by_id(self) -> dict[str, Subtask]:
        return {s.id: s for s in self.subtasks}


class SubtaskStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    #: Not run because a dependency failed (policy `skip_dependents`) or the run failed fast.
    SKIPPED = "skipped"
    #: Not run because a budget (sub-agents, tokens, deadline) was spent.
    SKIPPED_BUDGET = "skipped_budget"
    #: Was running when the run was cancelled.
    CANCELLED = "cancelled"

    @property
    def finished(self) -> bool:
        return self not in (SubtaskStatus.PENDING, SubtaskStatus.RUNNING)


class RunStatus(StrEnum):
    RUNNING = "running"
    #: Every subtask is done.
    COMPLETED = "completed"
    #: Finished, but some subtasks failed or were skipped.
    PARTIAL = "partial"
    #: Stopped early by policy `fail_fast`.
    FAILED = "failed"
    #: Stopped early: a budget was spent.
    BUDGET_EXHAUSTED = "budget_exhausted"
    #: Interrupted (Ctrl-C, task cancel, crash); `kimmy resume` continues it.
    CANCELLED = "cancelled"


class Usage(_Frozen):
    """Model usage: tokens and calls."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    model_calls: int = 0

    def _empty(self) -> bool:
        # Every field, not only total_tokens: servers may omit the total or the call count.
        return not (
            self.model_calls or self.total_tokens or self.prompt_tokens or self.completion_tokens
        )

    @classmethod
    def total(cls, usages: Iterable[Usage]) -> Usage:
        """The sum of many usages (one object built, not one per addition)."""
        prompt = completion = tokens = calls = 0
        for u in usages:
            prompt += u.prompt_tokens
            completion += u.completion_tokens
            tokens += u.total_tokens
            calls += u.model_calls
        return cls(
            prompt_tokens=prompt,
            completion_tokens=completion,
            total_tokens=tokens,
            model_calls=calls,
        )

    def __add__(self, other: Usage) -> Usage:
        # identity first: most additions in a run add the shared NO_USAGE or to it
        if other is NO_USAGE or other._empty():
            return self
        if self is NO_USAGE or self._empty():
            return other
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
            model_calls=self.model_calls + other.model_calls,
        )


#: The usage of no calls at all (shared: usages are immutable).
NO_USAGE = Usage()


class ErrorInfo(_Frozen):
    """A failure as recorded: exception type, message, whether it was retryable."""

    type: str
    message: str
    retryable: bool = False
    traceback: str | None = None

    @classmethod
    def from_exception(cls, exc: BaseException) -> ErrorInfo:
        """The record of `exc`; unexpected errors (not `SwarmError`) keep their traceback."""
        from kimmy_swarm.swarm.errors import SwarmError, is_retryable

        tb = None
        if not isinstance(exc, SwarmError):
            tb = "".join(traceback.format_exception(exc)) or None
        return cls(
            type=type(exc).__name__,
            message=str(exc) or type(exc).__name__,
            retryable=is_retryable(exc),
            traceback=tb,
        )


class Timings(_Frozen):
    """Wall-clock instants (seconds since the epoch) of one subtask."""

    started_at: float | None = None
    finished_at: float | None = None

    @property
    def duration_s(self) -> float | None:
        if self.started_at is None or self.finished_at is None:
            return None
        return self.finished_at - self.started_at


class SubtaskResult(_Frozen):
    """The outcome of one subtask: its output when done, its error when failed."""

    id: SubtaskId
    role: str
    status: SubtaskStatus
    output: JsonValue = None
    error: ErrorInfo | None = None
    usage: Usage = Field(default_factory=Usage)
    timings: Timings = Field(default_factory=Timings)
    attempts: int = 0


def wall_time_s(started_at: float | None, finished_at: float | None) -> float | None:
    """A run's wall time: from its `run_started` to its `run_finished` (None: either is
    unknown). The one definition: `RunResult.wall_s`, `kimmy show`, `kimmy rewards`."""
    if started_at is None or finished_at is None:
        return None
    return max(0.0, finished_at - started_at)


class RunResult(_Frozen):
    """Everything a finished (or stopped) run produced."""

    run_id: str
    goal: str = ""
    status: RunStatus
    stop_reason: str | None = None
    results: dict[str, SubtaskResult] = Field(default_factory=dict)
    usage: Usage = Field(default_factory=Usage)
    #: When the run started and ended (its `run_started` and `run_finished` events; a
    #: stored run: its first start and last end, `kimmy show` and `kimmy rewards`).
    started_at: float | None = None
    finished_at: float | None = None

    @property
    def wall_s(self) -> float | None:
        """The run's wall time, `finished_at - started_at` (None: not both known): the one
        figure `kimmy swarm`/`analyze`/`review`, `kimmy show` and `kimmy rewards` print."""
        return wall_time_s(self.started_at, self.finished_at)

    @property
    def ok(self) -> bool:
        return self.status is RunStatus.COMPLETED

    @property
    def outputs(self) -> dict[str, Any]:
        """Outputs of the subtasks that finished `done`, by id."""
        return {k: r.output for k, r in self.results.items() if r.status is SubtaskStatus.DONE}

    def counts(self) -> dict[str, int]:
        """Number of subtasks per status (statuses with none are left out)."""
        out: dict[str, int] = {}
        for r in self.results.values():
            out[r.status.value] = out.get(r.status.value, 0) + 1
        return out


__all__ = [
    "ROLE_PATTERN",
    "SUBTASK_ID_PATTERN",
    "ErrorInfo",
    "Plan",
    "RunResult",
    "RunStatus",
    "Subtask",
    "SubtaskResult",
    "SubtaskStatus",
    "Timings",
    "Usage",
    "wall_time_s",
]
