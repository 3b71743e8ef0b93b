"""A sub-agent's opening conversation: its role's system prompt, then its task.

The system message is the same for every sub-agent of a role (prompt, answer schema);
what differs — the sub-agent's id, its task, inputs and upstream results — is in the user
message. A server with prefix caching then prefills the role prompt once for all of them
(`kimmy serve` keeps its cache at the end of the system messages).

Every call sets the role's `max_tokens`, and the opening must fit the model's context with
it: when the upstream results would not fit (by the learned `TokenBudget` of
`swarm.llm`, or because the server rejected the first call as too long), they are
first reduced with `reduce_outputs` over the sub-agent's own task, and the task message
carries that digest instead of the raw results (`subtask_opening`).
"""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING, Any

from kimmy_swarm.agents.synthesis import Reduced, reduce_outputs
from kimmy_swarm.swarm.errors import ContextOverflowError

if TYPE_CHECKING:
    from kimmy_swarm.agents.loop.attempt import Attempt
    from kimmy_swarm.swarm.llm.budget import TokenBudget

#: Upstream outputs and inputs shown to the model are cut to this many characters each.
MAX_SHOWN_CHARS = 6_000
#: Upstream ids named in a digest's heading (the digest itself cites them all).
_NAMED_IDS = 12
#: The least room a digest of upstream results is worth making for.
_MIN_DIGEST_TOKENS = 64


def _shown(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    if len(text) > MAX_SHOWN_CHARS:
        text = text[:MAX_SHOWN_CHARS] + f" … [{len(text) - MAX_SHOWN_CHARS} more characters]"
    return text


def _schema_text(run: Attempt) -> str:
    return json.dumps(run.role.output.model_json_schema(), separators=(",", ":"))


def task_messages(
    run: Attempt, *, digest: Reduced | None = None, tool_text: str = ""
) -> list[dict[str, Any]]:
    """The opening conversation: the role's system prompt, then the task.

    With `digest`, the user message carries it in place of the upstream results (and the
    role's brief, where it has one, in place of both: `agents.brief`);
    `tool_text` (the text tool protocol's, `TextTools.instructions`) ends the system message.
    """
    ctx = run.ctx
    system = (
        f"{run.role.system_prompt}\n\nYou are a sub-agent (role {run.role.name}) in a swarm. "
        "Use the tools when you need facts. When done, reply with ONLY one JSON object "
        f"that matches this JSON schema:\n{_schema_text(run)}{tool_text}"
    )
    parts = [
        f"You are sub-agent {ctx.id!r} (role {run.role.name}).",
        ctx.instructions or f"Carry out subtask {ctx.id!r}.",
    ]
    if ctx.inputs:
        parts.append("Inputs:\n" + _shown(ctx.inputs))
    if run.brief is not None:  # the role's own reading of what the subtask needs
        if run.brief.text:
            parts.append(run.brief.text)
    elif digest is not None:
        parts.append(_digest_text(digest))
    else:
        for dep, res in ctx.upstream_results.items():
            parts.append(f"Result of {dep} ({res.role}, {res.status.value}):\n{_shown(_json(res))}")
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(parts)}]


def _json(result: Any) -> Any:
    output = result.output
    return output.model_dump(mode="json") if hasattr(output, "model_dump") else output


def _digest_text(digest: Reduced) -> str:
    ids = list(digest.ids)
    named = ", ".join(ids[:_NAMED_IDS]) + (
        f", … ({len(ids)} in all)" if len(ids) > _NAMED_IDS else ""
    )
    return (
        f"Digest of the {len(ids)} upstream results ({named}), condensed because they do not "
        f"fit in one prompt; it cites their ids in square brackets:\n{digest.text}"
    )


async def subtask_opening(
    run: Attempt,
    budget: TokenBudget,
    tools: list[dict[str, Any]] | None = None,
    *,
    force_digest: bool = False,
    tool_text: str = "",
) -> list[dict[str, Any]]:
    """`task_messages`, with the upstream results reduced to a digest when they do not fit.

    Only a budget that knows the model's context length judges ahead; with a guessed one
    the results go as they are, and a rejection as too long (which names the real length,
    on `kimmy serve` and vLLM) brings the digest (`force_digest`, see `agents.loop.policy`).

    Raises:
        ContextOverflowError: the task and inputs alone leave no room for the results.
    """
    messages = task_messages(run, tool_text=tool_text)
    upstream = run.ctx.upstream_results
    max_tokens = run.role.max_tokens
    if not upstream or run.brief is not None:
        return messages
    judged = budget.context_known and not budget.fits(messages, max_tokens, tools)
    if not (force_digest or judged):
        return messages
    placeholder = Reduced(text="", ids=tuple(upstream), levels=0, calls=0)
    fixed = budget.prompt_tokens(task_messages(run, digest=placeholder, tool_text=tool_text), tools)
    room = budget.prompt_limit(max_tokens) - fixed
    if room < _MIN_DIGEST_TOKENS:
        raise ContextOverflowError(
            f"role {run.role.name!r} (subtask {run.ctx.id!r}): its task and inputs leave "
            f"{room} tokens for {len(upstream)} upstream results ({budget!r}, max_tokens "
            f"{max_tokens})"
        )
    items = [
        (dep, f"({res.role}, {res.status.value})\n{_text(_json(res))}")
        for dep, res in upstream.items()
    ]
    digest = await reduce_outputs(
        run.ctx.model,
        instructions=(
            f"Sub-agent {run.ctx.id!r} (role {run.role.name}) will use this digest for its "
            f"task:\n{run.ctx.instructions or f'subtask {run.ctx.id!r}'}"
        ),
        items=items,
        context_tokens=budget.context_tokens,
        max_tokens=min(max_tokens, room),
        budget=budget,
    )
    messages = task_messages(run, digest=digest, tool_text=tool_text)
    over = budget.prompt_tokens(messages, tools) - budget.prompt_limit(max_tokens)
    if over > 0:  # the reduce's calls corrected the ratio the room was measured with
        keep = max(0, len(digest.text) - budget.chars(over) - 80)
        cut = f"{digest.text[:keep]} … [digest cut: {len(digest.text) - keep:,} characters]"
        messages = task_messages(
            run, digest=dataclasses.replace(digest, text=cut), tool_text=tool_text
        )
    return messages


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


__all__ = ["MAX_SHOWN_CHARS", "subtask_opening", "task_messages"]
