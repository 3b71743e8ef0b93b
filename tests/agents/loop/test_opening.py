"""A sub-agent's opening conversation: one system message per role, the task in the user
message, and upstream results that must fit (the digest made of them when they do not is
tested end to end in `tests/agents/synthesis/test_policy_digest.py`)."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace
from typing import Any

import pytest

from kimmy_swarm.agents import Attempt, ToolBox
from kimmy_swarm.agents.loop import MAX_SHOWN_CHARS, subtask_opening, task_messages
from kimmy_swarm.swarm.errors import ContextOverflowError
from kimmy_swarm.swarm.llm import TokenBudget
from tests.support.summing_role import SUMMER, Total


def _result(role: str, output: Any) -> Any:
    return SimpleNamespace(role=role, status=SimpleNamespace(value="done"), output=output)


def _attempt(sid: str = "s1", **ctx: Any) -> Attempt:
    fields = {"id": sid, "instructions": "Add the primes.", "inputs": {}, "upstream_results": {}}
    return Attempt(SimpleNamespace(**{**fields, **ctx}), SUMMER, ToolBox(), "model")  # type: ignore[arg-type]


def test_the_system_message_is_the_same_for_every_sub_agent_of_a_role() -> None:
    first, second = task_messages(_attempt("s1")), task_messages(_attempt("s2"))
    assert first[0] == second[0] and first[1] != second[1]
    system = first[0]["content"]
    assert system.startswith("You add numbers.\n\nYou are a sub-agent (role summer) in a swarm.")
    assert system.endswith(json.dumps(Total.model_json_schema(), separators=(",", ":")))
    assert task_messages(_attempt(), tool_text="\n\n# Tools")[0]["content"].endswith("# Tools")


def test_the_task_message_carries_the_task_the_inputs_and_the_upstream_results() -> None:
    upstream = {
        "find": _result("researcher", {"numbers": [2, 3]}),
        "long": _result("x", "y" * 9000),
    }
    run = _attempt(inputs={"key": "primes"}, upstream_results=upstream)
    user = task_messages(run)[1]["content"].split("\n\n")
    assert user[:3] == ["You are sub-agent 's1' (role summer).", "Add the primes.",
                        'Inputs:\n{"key": "primes"}']  # fmt: skip
    assert user[3] == 'Result of find (researcher, done):\n{"numbers": [2, 3]}'
    assert user[4].endswith(f"y … [{9000 - MAX_SHOWN_CHARS} more characters]")
    assert task_messages(_attempt(instructions=""))[1]["content"].endswith(
        "Carry out subtask 's1'."
    )


def test_an_opening_without_upstream_results_or_a_known_context_goes_as_it_is() -> None:
    bare = _attempt()
    assert asyncio.run(subtask_opening(bare, TokenBudget(1024))) == task_messages(bare)
    upstream = {"find": _result("researcher", "z" * 50_000)}
    guessed = _attempt(upstream_results=upstream)  # too long, but the context is a guess
    assert asyncio.run(subtask_opening(guessed, TokenBudget())) == task_messages(guessed)


def test_a_task_that_leaves_no_room_for_its_upstream_results_does_not_fit() -> None:
    upstream = {"find": _result("researcher", "z" * 50_000)}
    run = _attempt(inputs={"notes": "w" * 5_000}, upstream_results=upstream)
    with pytest.raises(ContextOverflowError, match=r"leave -?\d+ tokens for 1 upstream results"):
        asyncio.run(subtask_opening(run, TokenBudget(2048)))
