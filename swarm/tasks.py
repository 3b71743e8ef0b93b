"""Awaiting many coroutines as one: structured (a failure cancels the rest), and the
failure raised as itself rather than as an exception group, so that callers (the
scheduler's retry policy) see its type.

A worker that fans out — several model calls, tool calls or reductions at once — awaits
them with `gather_all`: no task outlives the call (as in a trio nursery), and the error
that reaches the scheduler is the one a sub-task raised.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from typing import TypeVar

T = TypeVar("T")


async def gather_all(awaitables: Sequence[Awaitable[T]]) -> list[T]:
    """Await all, concurrently; on a failure cancel the rest and raise the first error
    (a plain exception, not a group: the scheduler decides retries by its type)."""
    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(_as_coroutine(a)) for a in awaitables]
    except BaseExceptionGroup as failed:
        first = first_error(failed)
        raise first from first.__cause__  # its own cause chain, not the group
    return [task.result() for task in tasks]


def first_error(group: BaseExceptionGroup) -> BaseException:
    """The first error of a task group (nested groups opened), the others noted on it."""
    errors: list[BaseException] = []
    stack: list[BaseException] = [group]
    while stack:
        exc = stack.pop(0)
        if isinstance(exc, BaseExceptionGroup):
            stack[:0] = list(exc.exceptions)
        else:
            errors.append(exc)
    first = errors[0]
    notes = getattr(first, "__notes__", [])
    for other in errors[1:]:
        note = f"also failed concurrently: {type(other).__name__}: {other}"
        if note not in notes:
            first.add_note(note)
    return first


async def _as_coroutine(awaitable: Awaitable[T]) -> T:
    return await awaitable


__all__ = ["first_error", "gather_all"]
