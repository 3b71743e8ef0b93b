"""`gather_all`: results in order; a failure cancels the rest and is raised as itself (not
as an exception group), the concurrent failures noted on it."""

from __future__ import annotations

import asyncio

import pytest

from kimmy_swarm.swarm import gather_all
from kimmy_swarm.swarm.tasks import first_error


async def _value(x: int, delay: float = 0.0) -> int:
    await asyncio.sleep(delay)
    return x


async def test_results_come_back_in_order() -> None:
    assert await gather_all([_value(1, 0.02), _value(2), _value(3, 0.01)]) == [1, 2, 3]
    assert await gather_all([]) == []


async def test_a_failure_cancels_the_rest_and_is_raised_as_itself() -> None:
    cancelled = asyncio.Event()

    async def slow() -> int:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return 0

    async def fail() -> int:
        await asyncio.sleep(0)
        raise KeyError("missing")

    with pytest.raises(KeyError, match="missing") as info:
        await gather_all([slow(), fail()])
    assert type(info.value) is KeyError  # not an ExceptionGroup: retry policies read the type
    assert cancelled.is_set()  # nothing outlives the call


async def test_concurrent_failures_are_noted_on_the_first() -> None:
    async def fail(exc: Exception) -> int:
        raise exc

    with pytest.raises(ValueError) as info:
        await gather_all([fail(ValueError("one")), fail(RuntimeError("two"))])
    assert info.value.__notes__ == ["also failed concurrently: RuntimeError: two"]


def test_first_error_opens_nested_groups() -> None:
    inner = ExceptionGroup("inner", [OSError("disk")])
    first = first_error(ExceptionGroup("outer", [inner, ValueError("v")]))
    assert isinstance(first, OSError)
    assert first.__notes__ == ["also failed concurrently: ValueError: v"]
