"""The model policy: the agent loop of one sub-agent.

system prompt + task → the model calls tools (results go back as `tool` messages) → a final
JSON answer, validated against the role's schema and its meaning check. An invalid answer
gets exactly one repair turn (the error is shown to the model); still invalid → a
`ModelBehaviourError`. More turns than the role's `max_steps` → `AgentStepLimitError`.
Usage is counted by the swarm's metered model, like any call.
"""

from __future__ import annotations

import json
import re
from concurrent.futures import Executor
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from swarm.errors import LimitError, ModelBehaviourError, validation_problems

if TYPE_CHECKING:
    from pydantic import BaseModel

    from agents.subagent import AgentRun

#: Upstream outputs and inputs shown to the model are cut to this many characters each.
MAX_SHOWN_CHARS = 6_000
_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


class AgentStepLimitError(LimitError):
    """A sub-agent took more model turns than its role allows without a valid answer."""


def _shown(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    if len(text) > MAX_SHOWN_CHARS:
        text = text[:MAX_SHOWN_CHARS] + f" … [{len(text) - MAX_SHOWN_CHARS} more characters]"
    return text


def _schema_text(run: AgentRun) -> str:
    return json.dumps(run.role.output.model_json_schema(), separators=(",", ":"))


def task_messages(run: AgentRun) -> list[dict[str, Any]]:
    """The opening conversation: the role's system prompt, then the task.

    The system message is the same for every sub-agent of a role (prompt, answer schema);
    what differs — the sub-agent's id, its task, inputs and upstream results — is in the
    user message. A server with prefix caching then prefills the role prompt once for all
    of them (`kimmy serve` keeps its cache at the end of the system messages).
    """
    ctx = run.ctx
    system = (
        f"{run.role.system_prompt}\n\nYou are a sub-agent (role {run.role.name}) in a swarm. "
        "Use the tools when you need facts. When done, reply with ONLY one JSON object "
        f"that matches this JSON schema:\n{_schema_text(run)}"
    )
    parts = [
        f"You are sub-agent {ctx.id!r} (role {run.role.name}).",
        ctx.instructions or f"Carry out subtask {ctx.id!r}.",
    ]
    if ctx.inputs:
        parts.append("Inputs:\n" + _shown(ctx.inputs))
    for dep, res in ctx.upstream_results.items():
        output = res.output
        if hasattr(output, "model_dump"):
            output = output.model_dump(mode="json")
        parts.append(f"Result of {dep} ({res.role}, {res.status.value}):\n{_shown(output)}")
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(parts)}]


def parse_answer(content: str | None) -> Any:
    """The JSON object in a final answer (code fences and surrounding prose tolerated)."""
    text = (content or "").strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1)
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        start, end = text.find("{"), text.rfind("}")
        if 0 <= start < end:
            return json.loads(text[start : end + 1])
        raise


async def run_model_policy(run: AgentRun, executor: Executor | None) -> BaseModel:
    """Run the agent loop to a valid answer (see the module docstring for the errors)."""
    role, ctx = run.role, run.ctx
    messages = task_messages(run)
    specs = run.tools.specs() or None
    response_format = {
        "type": "json_schema",
        "json_schema": {"name": role.output.__name__, "schema": role.output.model_json_schema()},
    }
    repaired = False
    for step in range(1, role.max_steps + 1):
        run.steps = step
        offer_tools = specs is not None and step < role.max_steps
        options: dict[str, Any] = {"tools": specs} if offer_tools else {}
        if not offer_tools:  # JSON-constrained decoding would forbid tool calls
            options["response_format"] = response_format
        response = await ctx.model.chat(messages, **options)
        messages.append(response.message.to_openai())
        if response.tool_calls and offer_tools:
            for call in response.tool_calls:
                fn = call.function
                text = await run.call_for_model(fn.name, fn.arguments, executor)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": text})
            names = [c.function.name for c in response.tool_calls]
            ctx.record_step(step, policy="model", tools=names, outcome="tools")
            continue
        try:
            answer = run.validate(parse_answer(response.content))
        except (ValidationError, ValueError) as exc:  # JSONDecodeError is a ValueError
            ctx.record_step(step, policy="model", outcome="invalid")
            problem = validation_problems(exc, limit=8, root="(answer)")
            if repaired:
                raise ModelBehaviourError(
                    f"role {role.name!r} (subtask {ctx.id!r}): the answer is still invalid "
                    f"after the repair turn: {problem}"
                ) from exc
            repaired = True
            messages.append(
                {
                    "role": "user",
                    "content": (
                        f"Your answer is invalid: {problem}\nReply again with ONLY one "
                        "corrected JSON object matching the schema."
                    ),
                }
            )
            continue
        ctx.record_step(step, policy="model", outcome="answer")
        return answer
    raise AgentStepLimitError(
        f"role {role.name!r} (subtask {ctx.id!r}): no valid answer within {role.max_steps} "
        "model turns (the role's max_steps)"
    )


__all__ = [
    "MAX_SHOWN_CHARS",
    "AgentStepLimitError",
    "parse_answer",
    "run_model_policy",
    "task_messages",
]
