"""A scripted orchestrator for tests: one `ChatModel` behind the orchestrator and its
sub-agents, answering each by a rule (the orchestrator's turns from a script, sub-agents
from a function of their task).

    model = orchestration([[("assign_task", {...}), ("wait", {"ids": "all"})],
                           lambda msgs: [("finish", {"answer": "done"})]],
                          subagent=lambda task, inputs: {"answer": task, "sources": []})
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from kimmy_swarm.agents.loop import Call, tool_call
from kimmy_swarm.swarm.llm.scripted import ScriptedChat
from kimmy_swarm.swarm.llm.types import ChatResponse
from kimmy_swarm.swarm.schema import Usage

Turn = Sequence[Call] | Callable[[list[dict[str, Any]]], Sequence[Call]]
SubAgent = Callable[[str, dict[str, Any], list[dict[str, Any]]], Any]


def is_orchestrator(options: dict[str, Any]) -> bool:
    names = {t["function"]["name"] for t in options.get("tools") or ()}
    return "create_subagent" in names


def tool_results(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The JSON tool results of the conversation so far (non-JSON ones as {"text": …})."""
    out = []
    for m in messages:
        if m.get("role") == "tool":
            try:
                out.append(json.loads(m["content"]))
            except json.JSONDecodeError:
                out.append({"text": m["content"]})
    return out


def task_of(messages: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    """A sub-agent's task text and inputs, from its user message."""
    text = next(m["content"] for m in messages if m["role"] == "user")
    lines = text.split("\n\n")
    task = lines[1] if len(lines) > 1 else ""
    found = re.search(r"Inputs:\n(\{.*?\})(\n\n|$)", text, re.DOTALL)
    return task, json.loads(found.group(1)) if found else {}


def orchestration(
    turns: Sequence[Turn], *, subagent: SubAgent, name: str = "scripted-swarm"
) -> ScriptedChat:
    """The model: orchestrator turns in order (each a list of calls, or a function of the
    conversation giving one); sub-agents answered by `subagent(task, inputs, messages)`
    (a dict is sent as JSON, an exception is raised)."""
    played = {"n": 0}

    def step(messages: list[dict[str, Any]], options: dict[str, Any]) -> ChatResponse:
        if is_orchestrator(options):
            n = played["n"]
            played["n"] += 1
            turn = turns[min(n, len(turns) - 1)]
            calls = turn(messages) if callable(turn) else turn
            return ChatResponse(
                tool_calls=[tool_call(call, f"c{n}_{i}") for i, call in enumerate(calls)],
                finish_reason="tool_calls",
                usage=Usage(prompt_tokens=10, completion_tokens=10, total_tokens=20, model_calls=1),
            )
        task, inputs = task_of(messages)
        answer = subagent(task, inputs, messages)
        if isinstance(answer, BaseException):
            raise answer
        return ChatResponse(
            content=answer if isinstance(answer, str) else json.dumps(answer),
            finish_reason="stop",
            usage=Usage(prompt_tokens=5, completion_tokens=5, total_tokens=10, model_calls=1),
        )

    return ScriptedChat.always(step, name=name)


__all__ = ["is_orchestrator", "orchestration", "task_of", "tool_results"]
