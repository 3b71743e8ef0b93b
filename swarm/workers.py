"""Built-in workers: a generic model-backed sub-agent for every built-in role name.

Until role-specific agents exist (`agents/`), `kimmy run` answers each subtask with one chat
call: a system prompt for the role, then the instructions, inputs and upstream outputs.
"""

from __future__ import annotations

import json
from typing import Any

from swarm.context import SubtaskContext, Worker

#: Built-in role names and the one-line charge each sub-agent gets.
BUILTIN_ROLES: dict[str, str] = {
    "orchestrator": "You decompose a goal into subtasks and combine their results.",
    "researcher": "You research one question and report key findings with their sources.",
    "fact_checker": "You check claims against the given sources and say which hold.",
    "writer": "You synthesize the upstream results into clear, well-organized prose.",
    "data_analyst": "You analyse data and report numbers with how they were computed.",
    "frontend_engineer": "You write correct, accessible frontend code for the request.",
    "physics_researcher": "You reason carefully about physics and state your assumptions.",
}


def build_messages(ctx: SubtaskContext, charge: str) -> list[dict[str, str]]:
    """The conversation for one subtask: role charge, instructions, inputs, upstream."""
    parts = [ctx.instructions or f"Carry out subtask {ctx.id!r}."]
    if ctx.inputs:
        parts.append("Inputs:\n" + json.dumps(ctx.inputs, indent=2, ensure_ascii=False))
    for dep, res in ctx.upstream_results.items():
        shown = res.output if isinstance(res.output, str) else json.dumps(res.output)
        parts.append(f"Result of {dep} ({res.role}, {res.status.value}):\n{shown}")
    system = f"You are a {ctx.role} sub-agent in a swarm. {charge} Answer directly."
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(parts)}]


def chat_worker(charge: str) -> Worker:
    """A worker that answers its subtask with one model call and returns the text."""

    async def work(ctx: SubtaskContext) -> Any:
        response = await ctx.model.chat(build_messages(ctx, charge))
        return response.content or ""

    return work


def builtin_workers() -> dict[str, Worker]:
    """A chat worker for each built-in role."""
    return {name: chat_worker(charge) for name, charge in BUILTIN_ROLES.items()}


__all__ = ["BUILTIN_ROLES", "build_messages", "builtin_workers", "chat_worker"]
