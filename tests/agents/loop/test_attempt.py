"""`Attempt`: every tool call of a sub-agent — its procedure's and its model's — recorded the
same way, a failed one as `Type: message`; its answers checked against the role."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace
from typing import Any

import pytest
from pydantic import ValidationError

from kimmy_swarm.agents import Attempt, Role, ToolBox
from tests.support.summing_role import SUMMER, Total, summing_tools


class Ctx(SimpleNamespace):
    """The part of a `SubtaskContext` an attempt records through, keeping what it got and
    the thread it got it on."""

    def __init__(self, **inputs: Any) -> None:
        super().__init__(inputs=inputs, upstream={}, events=[])

    def record_tool(self, tool: str, **fields: Any) -> None:
        self.events.append(("tool", tool, fields, threading.current_thread().name))

    def record_step(self, step: int, **fields: Any) -> None:
        self.events.append(("step", step, fields, threading.current_thread().name))

    def needs_approval(self, tool: str, *, asks: bool = False) -> bool:
        return asks  # the run's policy names nothing


def _attempt(tools: ToolBox | None = None, role: Role = SUMMER) -> tuple[Attempt, Ctx]:
    ctx = Ctx(key="primes")
    return Attempt(ctx, role, tools or summing_tools(), "offline"), ctx  # type: ignore[arg-type]


def test_a_procedures_call_is_one_step_recorded_like_a_models() -> None:
    run, ctx = _attempt()
    assert run.inputs == {"key": "primes"} and run.upstream == {}
    assert run.call("lookup", key="primes") == [2, 3, 5, 7]
    (_, tool, fields, _), (_, step, step_fields, _) = ctx.events
    assert tool == "lookup" and fields["step"] == 1 and fields["error"] is None
    assert fields["arguments"] == {"key": "primes"} and fields["result"] == [2, 3, 5, 7]
    assert step == 1 and step_fields == {"policy": "offline", "tools": ["lookup"],
                                         "outcome": "tools"}  # fmt: skip
    with pytest.raises(KeyError, match="cubes"):
        run.call("lookup", key="cubes")
    assert run.steps == 2 and ctx.events[2][2]["error"].startswith("KeyError: ")


def test_a_models_call_gets_the_result_or_the_error_as_text() -> None:
    box = summing_tools()

    @box.tool
    def shapes() -> dict[str, Any]:
        """Values JSON has no type for, sent as text the model can read."""
        point = dataclasses.make_dataclass("Point", ["x", "y"])(1, 2)
        return {"total": Total(numbers=[1], total=1), "point": point, "pair": (1, 2)}

    run, ctx = _attempt(box, SUMMER.derive(tools=("lookup", "add", "shapes")))

    async def calls() -> list[str]:
        return [
            await run.call_for_model("add", '{"numbers": [1, 2]}', None, "c1"),
            await run.call_for_model("shapes", "{}", None),
            await run.call_for_model("add", '{"numbers": "many"}', None, "c3"),
            await run.call_for_model("nope", "{}", None),
        ]

    added, shaped, bad, unknown = asyncio.run(calls())
    assert added == "3"
    assert json.loads(shaped) == {
        "total": {"numbers": [1], "total": 1},
        "point": {"x": 1, "y": 2},
        "pair": [1, 2],
    }
    assert bad.startswith("error: ToolError: tool 'add': bad arguments: numbers")
    assert unknown.startswith("error: ToolError: no tool named 'nope'")
    recorded = [(e[1], e[2]["call_id"], e[2]["error"] is None) for e in ctx.events]
    assert recorded == [("add", "c1", True), ("shapes", None, True), ("add", "c3", False),
                        ("nope", None, False)]  # fmt: skip
    assert all(kind == "tool" for kind, *_ in ctx.events)  # the loop records the steps


def test_calls_from_a_worker_thread_are_recorded_on_the_loop() -> None:
    run, ctx = _attempt()

    async def procedure() -> Any:
        run.loop = asyncio.get_running_loop()
        with ThreadPoolExecutor(1, thread_name_prefix="procedure") as pool:
            answer = await run.loop.run_in_executor(pool, lambda: run.call("add", numbers=[4]))
        await asyncio.sleep(0)  # the handed-over records run on the loop's next turn
        return answer

    assert asyncio.run(procedure()) == 4
    assert [e[0] for e in ctx.events] == ["tool", "step"]
    assert all(not e[3].startswith("procedure") for e in ctx.events)


def test_an_answer_is_validated_and_checked_for_meaning() -> None:
    run, _ = _attempt()
    assert run.validate({"numbers": [1, 2], "total": 3}) == Total(numbers=[1, 2], total=3)
    with pytest.raises(ValidationError):
        run.validate({"numbers": "x"})
    with pytest.raises(ValueError, match="not the sum"):
        run.validate(Total(numbers=[1, 2], total=4))
