"""The admission gate on model calls: limit held, FIFO, cancel-safe, raised limits admit."""

from __future__ import annotations

import asyncio

import pytest

from kimmy_swarm.swarm.call_gate import CallGate


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_gate_holds_calls_to_the_limit_in_order() -> None:
    limit = 2
    gate = CallGate(lambda: limit)
    order: list[int] = []

    async def call(i: int) -> None:
        await gate.acquire()
        order.append(i)

    tasks = [asyncio.create_task(call(i)) for i in range(5)]
    await settle()
    assert order == [0, 1] and gate.in_flight == 2
    gate.release()
    await settle()
    assert order == [0, 1, 2]
    limit = 4  # a raised limit lets waiters in once someone wakes the gate
    gate.wake()
    await settle()
    assert order == [0, 1, 2, 3, 4] and gate.in_flight == 4
    await asyncio.gather(*tasks)


async def test_lowered_limit_admits_nobody_until_calls_drain() -> None:
    limit = 3
    gate = CallGate(lambda: limit)
    for _ in range(3):
        await gate.acquire()
    limit = 1
    waiter = asyncio.create_task(gate.acquire())
    gate.release()
    gate.release()
    await settle()
    assert not waiter.done() and gate.in_flight == 1
    gate.release()
    await settle()
    assert waiter.done() and gate.in_flight == 1


async def test_cancelled_waiter_leaves_no_trace() -> None:
    gate = CallGate(lambda: 1)
    await gate.acquire()
    waiter = asyncio.create_task(gate.acquire())
    await settle()
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    gate.release()
    assert gate.in_flight == 0
    await asyncio.wait_for(gate.acquire(), 1)  # not blocked behind the cancelled one
    assert gate.in_flight == 1


async def test_slot_granted_to_a_cancelled_waiter_is_passed_on() -> None:
    gate = CallGate(lambda: 1)
    await gate.acquire()
    first = asyncio.create_task(gate.acquire())
    second = asyncio.create_task(gate.acquire())
    await settle()
    gate.release()  # grants `first` its slot ...
    first.cancel()  # ... but it is cancelled before it runs again
    with pytest.raises(asyncio.CancelledError):
        await first
    await asyncio.wait_for(second, 1)
    assert gate.in_flight == 1
