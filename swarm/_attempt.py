"""Running one subtask: attempts, timeout, retries with backoff, output checks, the result."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from swarm import events as ev
from swarm._trusted import trusted
from swarm.context import MeteredModel, SubtaskContext
from swarm.errors import OutputValidationError, SubtaskTimeoutError, validation_problems
from swarm.schema import NO_USAGE, ErrorInfo, SubtaskResult, SubtaskStatus, Timings, Usage

if TYPE_CHECKING:
    from swarm._run import RunLoop
    from swarm.schema import Subtask

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


def normalize(run: RunLoop, st: Subtask, output: Any) -> Any:
    """The output as JSON data, validated against the subtask's schema if it names one."""
    if isinstance(output, BaseModel):
        output = output.model_dump(mode="json")
    elif isinstance(output, tuple):
        output = list(output)
    if st.output_schema is not None:
        schema = run.sched.schemas[st.output_schema]
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


def _cancelled(run: RunLoop) -> BaseException:
    return run.cancel_error or asyncio.CancelledError("run cancelled")


def never_started(run: RunLoop, st: Subtask) -> SubtaskResult:
    """The result of a subtask whose task was cancelled before its first step.

    A deadline or stop in the loop iteration that dispatched it cancels the task before
    `run_subtask` runs at all, so nothing in there can record the result.
    """
    return _result(st, SubtaskStatus.CANCELLED, NO_USAGE, time.time(), 0, error=_cancelled(run))


_NO_UPSTREAM: Mapping[str, SubtaskResult] = MappingProxyType({})


def _retry_delay(run: RunLoop, st: Subtask, exc: Exception, attempt: int, retries: int) -> float:
    """Seconds to wait before retrying, or -1 when the subtask has failed for good."""
    if not getattr(exc, "retryable", False) or attempt > retries:
        return -1.0
    if run.state.stop_reason is not None:
        return -1.0
    delay = run.cfg.backoff.delay(attempt, run.rng, getattr(exc, "retry_after", None))
    run.emit(
        ev.SubtaskRetrying,
        subtask_id=st.id,
        attempt=attempt,
        error=ErrorInfo.from_exception(exc),
        delay_s=delay,
    )
    return delay


def _new_context(
    run: RunLoop, st: Subtask, attempt: int, upstream: Mapping[str, SubtaskResult]
) -> SubtaskContext:
    if run.journal.listened:
        run.emit(ev.SubtaskStarted, subtask_id=st.id, role=st.role, attempt=attempt)
    model = run.sched.model
    return SubtaskContext(
        st,
        run_id=run.run_id,
        attempt=attempt,
        upstream_results=upstream,
        model=MeteredModel(model, run, st) if model is not None else None,
        spawn=run.spawn,
        emit=run.emit if run.journal.listened else None,
    )


def _timed_out(
    run: RunLoop, task: asyncio.Task[None], st: Subtask, timeout: float, cause: Exception | None
) -> SubtaskTimeoutError | None:
    """The attempt's timeout error, unless the cancellation was the whole run's."""
    if run.cancel_error is not None:
        return None
    task.uncancel()  # the deadline's cancel is consumed here
    error = SubtaskTimeoutError(st.id, timeout)
    error.__cause__ = cause  # a worker that turned the cancellation into another error
    return error


async def run_subtask(run: RunLoop, st: Subtask) -> None:
    """All attempts of one subtask; ends by handing its result to the run.

    Each attempt runs the worker under the subtask's deadline (a timeout becomes
    `SubtaskTimeoutError`). Retryable errors (timeouts, 429, 5xx, connection errors) are
    retried with backoff while attempts remain and the run is not stopping; anything else
    fails the subtask at once. A cancelled subtask (run cancelled, deadline) still records
    a `cancelled` result. One coroutine for all attempts: a frame less to resume on every
    await of 10,000 sub-agents.
    """
    task: asyncio.Task[None] = asyncio.current_task()  # type: ignore[assignment]
    try:
        timeout = st.timeout_s or run.cfg.timeout_s
        retries = run.cfg.max_retries if st.max_retries is None else st.max_retries
        results = run.state.results
        upstream = {d: results[d] for d in st.depends_on} if st.depends_on else _NO_UPSTREAM
        worker = run.sched.workers[st.role]
        usage, started, attempt = NO_USAGE, time.time(), 0
        ctx: SubtaskContext | None = None
        try:
            while True:
                attempt += 1
                ctx = _new_context(run, st, attempt, upstream)
                run.deadlines.arm(task, timeout)
                expired = False
                try:
                    try:
                        output = await worker(ctx)
                    finally:
                        expired = run.deadlines.disarm(task)
                    if expired:  # the worker swallowed the cancellation
                        raise asyncio.CancelledError
                    output = normalize(run, st, output)
                except asyncio.CancelledError:
                    timed_out = _timed_out(run, task, st, timeout, None) if expired else None
                    if timed_out is None:
                        raise  # the run is being cancelled
                    error: Exception = timed_out
                except Exception as exc:  # noqa: BLE001  isolated on purpose, recorded
                    error = (expired and _timed_out(run, task, st, timeout, exc)) or exc
                else:
                    usage = usage + ctx.usage
                    result = _result(st, SubtaskStatus.DONE, usage, started, attempt, output=output)
                    break
                usage, ctx = usage + ctx.usage, None
                delay = _retry_delay(run, st, error, attempt, retries)
                if delay < 0:
                    result = _result(st, SubtaskStatus.FAILED, usage, started, attempt, error=error)
                    break
                await asyncio.sleep(delay)
        except asyncio.CancelledError:
            usage = usage + ctx.usage if ctx is not None else usage
            err = _cancelled(run)
            result = _result(st, SubtaskStatus.CANCELLED, usage, started, attempt, error=err)
        try:
            run.finished(result)
        finally:
            del run.tasks[task]
    except asyncio.CancelledError:
        run.tasks.pop(task, None)
        raise
    except BaseException as exc:  # noqa: BLE001  a bug in the bookkeeping: the run raises it
        run.tasks.pop(task, None)
        run.fail(exc)


__all__ = ["never_started", "normalize", "run_subtask"]
