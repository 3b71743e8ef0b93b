"""Running subtasks: attempts, timeout, retries with backoff, output checks, the result.

A `SubtaskRunner` holds what the attempts of one run need — the config, the workforce, the
run's state (read only: upstream results, whether it is stopping), its journal, deadlines
and call meter — and hands each finished result to the run loop through `finished`.
"""

from __future__ import annotations

import asyncio
import functools
import math
import time
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from kimmy_swarm.swarm import events as ev
from kimmy_swarm.swarm.call_meter import MeteredModel
from kimmy_swarm.swarm.context import SpawnFn, SubtaskContext, WaitFn
from kimmy_swarm.swarm.errors import (
    ModelUnreachableError,
    OutputValidationError,
    SubtaskTimeoutError,
    is_retryable,
    validation_problems,
)
from kimmy_swarm.swarm.schema import (
    NO_USAGE,
    ErrorInfo,
    SubtaskResult,
    SubtaskStatus,
    Timings,
    Usage,
)
from kimmy_swarm.swarm.unvalidated import trusted

if TYPE_CHECKING:
    import random
    from collections.abc import Callable

    from kimmy_swarm.swarm.agent_turns import TurnLog
    from kimmy_swarm.swarm.approvals import Approvals
    from kimmy_swarm.swarm.call_meter import CallMeter
    from kimmy_swarm.swarm.config import RunConfig
    from kimmy_swarm.swarm.deadlines import Deadlines
    from kimmy_swarm.swarm.journal import Journal
    from kimmy_swarm.swarm.schema import Subtask
    from kimmy_swarm.swarm.steps import RunState
    from kimmy_swarm.swarm.workforce import Workforce

_SCALARS = frozenset({str, int, bool, type(None)})


def _is_json(value: Any) -> bool:
    """Whether `value` is JSON data: dicts with str keys, lists, str, int, finite float…"""
    stack = [value]
    while stack:
        v = stack.pop()
        t = type(v)
        if t in _SCALARS:
            continue
        if t is dict:
            for k, item in v.items():  # scalars checked in place: most outputs are flat
                if type(k) is not str:
                    return False
                if type(item) not in _SCALARS:
                    stack.append(item)
        elif t is list:
            stack.extend(v)
        elif t is float:
            if not math.isfinite(v):
                return False
        elif isinstance(v, str | int):  # subclasses: StrEnum, IntEnum, bool…
            continue
        elif isinstance(v, dict | list):
            stack.append(dict(v) if isinstance(v, dict) else list(v))
        elif isinstance(v, float):
            stack.append(float(v))
        else:
            return False
    return True


def normalize(schemas: Mapping[str, type[BaseModel]], st: Subtask, output: Any) -> Any:
    """The output as JSON data, validated against the subtask's schema if it names one."""
    if isinstance(output, BaseModel):
        output = output.model_dump(mode="json")
    elif isinstance(output, tuple):
        output = list(output)
    if st.output_schema is not None:
        schema = schemas[st.output_schema]
        try:
            output = schema.model_validate(output).model_dump(mode="json")
        except ValidationError as exc:
            raise OutputValidationError(
                f"output of subtask {st.id!r} does not match schema {st.output_schema!r}: "
                f"{validation_problems(exc, limit=1, root='(root)')}"
            ) from None
    if not _is_json(output):
        raise OutputValidationError(
            f"output of subtask {st.id!r} is not JSON data (got {type(output).__name__}); "
            "return dicts, lists, strings, numbers, booleans, None or a pydantic model"
        )
    return output


def _result(
    st: Subtask,
    status: SubtaskStatus,
    usage: Usage,
    started: float,
    attempts: int,
    output: Any = None,
    error: BaseException | None = None,
) -> SubtaskResult:
    return trusted(
        SubtaskResult,
        {
            "id": st.id,
            "role": st.role,
            "status": status,
            "output": output,
            "error": ErrorInfo.from_exception(error) if error is not None else None,
            "usage": usage,
            "timings": trusted(Timings, {"started_at": started, "finished_at": time.time()}),
            "attempts": attempts,
        },
    )


_NO_UPSTREAM: Mapping[str, SubtaskResult] = MappingProxyType({})
_DONE, _FAILED, _CANCELLED = SubtaskStatus.DONE, SubtaskStatus.FAILED, SubtaskStatus.CANCELLED


class SubtaskRunner:
    """Runs every attempt of a run's subtasks, one coroutine per subtask.

    Args:
        run_id: the run.
        config: its settings (timeouts, retries, backoff).
        workforce: workers, schemas and the model.
        state: the run's state, read for upstream results and whether the run is stopping.
        journal: where attempt events go.
        deadlines: per-attempt timeouts.
        meter: the observer of every model call.
        rng: the retry jitter.
        spawn: adds subtasks to the live DAG (the run loop's).
        wait: waits for subtasks a subtask spawned (the run loop's).
        approvals: the run's calls that wait for a person.
        turns: the agents' recorded turns.
        tasks: the run's running tasks; a subtask's entry is removed once its result is in.
        finished: takes each subtask's final result.
        fail: takes a bug in the bookkeeping (the run then stops and raises it).
    """

    def __init__(
        self,
        *,
        run_id: str,
        config: RunConfig,
        workforce: Workforce,
        state: RunState,
        journal: Journal,
        deadlines: Deadlines,
        meter: CallMeter,
        rng: random.Random,
        spawn: SpawnFn,
        wait: WaitFn,
        approvals: Approvals,
        turns: TurnLog,
        tasks: dict[asyncio.Task[None], Subtask],
        finished: Callable[[SubtaskResult], None],
        fail: Callable[[BaseException], None],
        halt: Callable[[str], None] = lambda reason: None,
    ) -> None:
        self.run_id = run_id
        self.config = config
        self.workforce = workforce
        self.state = state
        self.journal = journal
        self.deadlines = deadlines
        self.meter = meter
        self.rng = rng
        self.spawn = spawn
        self.wait = wait
        self.approvals = approvals
        self.turns = turns
        self.tasks = tasks
        self.finished = finished
        self.fail = fail
        self.halt = halt
        #: Why in-flight sub-agents are being cancelled (None while nothing is): the error
        #: their results record.
        self.cancel_error: BaseException | None = None

    def _cancelled(self) -> BaseException:
        return self.cancel_error or asyncio.CancelledError("run cancelled")

    def never_started(self, st: Subtask) -> SubtaskResult:
        """The result of a subtask whose task was cancelled before its first step.

        A deadline or stop in the loop iteration that dispatched it cancels the task before
        `run` runs at all, so nothing in there can record the result.
        """
        return _result(st, _CANCELLED, NO_USAGE, time.time(), 0, error=self._cancelled())

    def _retry_delay(self, st: Subtask, exc: Exception, attempt: int, retries: int) -> float:
        """Seconds to wait before retrying, or -1 when the subtask has failed for good."""
        if not is_retryable(exc) or attempt > retries:
            return -1.0
        if self.state.stop_reason is not None:
            return -1.0
        delay = self.config.backoff.delay(attempt, self.rng, getattr(exc, "retry_after", None))
        self.journal.emit(
            ev.SubtaskRetrying,
            subtask_id=st.id,
            attempt=attempt,
            error=ErrorInfo.from_exception(exc),
            delay_s=delay,
        )
        return delay

    def _new_context(
        self,
        st: Subtask,
        attempt: int,
        upstream: Mapping[str, SubtaskResult],
        retries: int,
        task: asyncio.Task[None],
    ) -> SubtaskContext:
        journal = self.journal
        if journal.listened:
            journal.emit(ev.SubtaskStarted, subtask_id=st.id, role=st.role, attempt=attempt)
        model = self.workforce.model
        return SubtaskContext(
            st,
            run_id=self.run_id,
            attempt=attempt,
            upstream_results=upstream,
            model=(
                MeteredModel(model, self.meter, st, temperature=self.config.temperature)
                if model is not None
                else None
            ),
            spawn=self.spawn,
            emit=journal.emit if journal.listened else None,
            wait=self.wait,
            turns=self.turns,
            capture=self.meter.capture,
            retries_left=max(0, retries + 1 - attempt),
            approve=functools.partial(self.approvals.request, st, task),
            approval_policy=self.config.approvals,
        )

    def _timed_out(
        self, task: asyncio.Task[None], st: Subtask, timeout: float, cause: Exception | None
    ) -> SubtaskTimeoutError | None:
        """The attempt's timeout error, unless the cancellation was the whole run's."""
        if self.cancel_error is not None:
            return None
        task.uncancel()  # the deadline's cancel is consumed here
        error = SubtaskTimeoutError(st.id, timeout)
        error.__cause__ = cause  # a worker that turned the cancellation into another error
        return error

    async def run(self, st: Subtask) -> None:
        """All attempts of one subtask; ends by handing its result to `finished`.

        Each attempt runs the worker under the subtask's deadline (a timeout becomes
        `SubtaskTimeoutError`). Retryable errors (timeouts, 429, 5xx, connection errors) are
        retried with backoff while attempts remain and the run is not stopping; anything
        else fails the subtask at once. A cancelled subtask (run cancelled, deadline) still
        records a `cancelled` result. One coroutine for all attempts: a frame less to resume
        on every await of 10,000 sub-agents.
        """
        task: asyncio.Task[None] = asyncio.current_task()  # type: ignore[assignment]
        try:
            cfg = self.config
            timeout = st.timeout_s or cfg.timeout_s
            retries = cfg.max_retries if st.max_retries is None else st.max_retries
            results = self.state.results
            upstream = {d: results[d] for d in st.depends_on} if st.depends_on else _NO_UPSTREAM
            worker = self.workforce.worker_for(st)
            if worker is None:  # checked at plan and spawn time: a bug if it happens
                raise RuntimeError(f"no worker for role {st.role!r} of subtask {st.id!r}")
            deadlines = self.deadlines
            usage, started, attempt = NO_USAGE, time.time(), 0
            ctx: SubtaskContext | None = None
            try:
                while True:
                    attempt += 1
                    ctx = self._new_context(st, attempt, upstream, retries, task)
                    deadlines.arm(task, timeout)
                    expired = False
                    try:
                        try:
                            output = await worker(ctx)
                        finally:
                            expired = deadlines.disarm(task)
                        if expired:  # the worker swallowed the cancellation
                            raise asyncio.CancelledError
                        output = normalize(self.workforce.schemas, st, output)
                    except asyncio.CancelledError:
                        timed_out = self._timed_out(task, st, timeout, None) if expired else None
                        if timed_out is None:
                            raise  # the run is being cancelled
                        error: Exception = timed_out
                    except Exception as exc:  # noqa: BLE001  isolated on purpose, recorded
                        error = (expired and self._timed_out(task, st, timeout, exc)) or exc
                    else:
                        usage = usage + ctx.usage
                        result = _result(st, _DONE, usage, started, attempt, output=output)
                        break
                    usage, ctx = usage + ctx.usage, None
                    if _unreachable(error):  # the breaker gave up: stop the run, resumable
                        self.halt(str(_unreachable(error)))
                        result = _result(st, _CANCELLED, usage, started, attempt, error=error)
                        break
                    delay = self._retry_delay(st, error, attempt, retries)
                    if delay < 0:
                        result = _result(st, _FAILED, usage, started, attempt, error=error)
                        break
                    await asyncio.sleep(delay)
            except asyncio.CancelledError:
                usage = usage + ctx.usage if ctx is not None else usage
                err = self._cancelled()
                result = _result(st, _CANCELLED, usage, started, attempt, error=err)
            try:
                self.finished(result)
            finally:
                del self.tasks[task]
        except asyncio.CancelledError:
            self.tasks.pop(task, None)
            raise
        except BaseException as exc:  # noqa: BLE001  a bug in the bookkeeping: the run raises it
            self.tasks.pop(task, None)
            self.fail(exc)


def _unreachable(error: BaseException) -> ModelUnreachableError | None:
    """The `ModelUnreachableError` behind `error` (itself or a cause), if any: a worker may
    have wrapped it."""
    seen: BaseException | None = error
    for _ in range(8):
        if seen is None:
            return None
        if isinstance(seen, ModelUnreachableError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


__all__ = ["SubtaskRunner", "normalize"]
