"""The model policy: the agent loop of one sub-agent.

system prompt + task → the model calls tools (results go back as `tool` messages) → a final
JSON answer, validated against the role's schema and its meaning check. An invalid answer
gets exactly one repair turn (the error is shown to the model); still invalid → a
`ModelBehaviourError`. More turns than the role's `max_steps` → `AgentStepLimitError`.
Usage is counted by the swarm's metered model, like any call.

The loop adapts to what the model's server honours (`swarm.llm.capabilities_of`; a model
that says nothing honours everything): where `response_format` is not enforced it is not
sent, and the answer is the first JSON object of the reply (`parse_answer`); where tools
are not supported they are described in the system prompt and called in text
(`agents.text_tools`), their results sent back as plain user messages.

Every call sets the role's `max_tokens`, and the opening conversation must fit the model's
context with it: when the upstream results would not fit (by the learned `TokenBudget` of
`swarm.llm`, or because the server rejected the first call as too long), they are
first reduced with `reduce_outputs` over the sub-agent's own task, and the task message
carries that digest instead of the raw results.
"""

from __future__ import annotations

import dataclasses
import json
from concurrent.futures import Executor
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from agents._replies import parse_answer
from agents.synthesis import ContextOverflowError, Reduced, reduce_outputs
from agents.text_tools import TextToolCall, TextTools
from swarm.errors import LimitError, ModelBehaviourError, ModelRequestError, validation_problems
from swarm.llm.budget import TokenBudget
from swarm.llm.capabilities import capabilities_of
from swarm.llm.overflow import context_overflow
from swarm.llm.server_profile import shared_budget

if TYPE_CHECKING:
    from pydantic import BaseModel

    from agents.subagent import AgentRun
    from swarm.llm.types import ChatResponse

#: Upstream outputs and inputs shown to the model are cut to this many characters each.
MAX_SHOWN_CHARS = 6_000
#: Upstream ids named in a digest's heading (the digest itself cites them all).
_NAMED_IDS = 12
#: The least room a digest of upstream results is worth making for.
_MIN_DIGEST_TOKENS = 64


class AgentStepLimitError(LimitError):
    """A sub-agent took more model turns than its role allows without a valid answer."""


def _shown(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    if len(text) > MAX_SHOWN_CHARS:
        text = text[:MAX_SHOWN_CHARS] + f" … [{len(text) - MAX_SHOWN_CHARS} more characters]"
    return text


def _schema_text(run: AgentRun) -> str:
    return json.dumps(run.role.output.model_json_schema(), separators=(",", ":"))


def task_messages(
    run: AgentRun, *, digest: Reduced | None = None, tool_text: str = ""
) -> list[dict[str, Any]]:
    """The opening conversation: the role's system prompt, then the task.

    The system message is the same for every sub-agent of a role (prompt, answer schema);
    what differs — the sub-agent's id, its task, inputs and upstream results — is in the
    user message. A server with prefix caching then prefills the role prompt once for all
    of them (`kimmy serve` keeps its cache at the end of the system messages).

    With `digest`, the user message carries it in place of the upstream results;
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
    if digest is not None:
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


async def opening_messages(
    run: AgentRun,
    budget: TokenBudget,
    tools: list[dict[str, Any]] | None = None,
    *,
    force_digest: bool = False,
    tool_text: str = "",
) -> list[dict[str, Any]]:
    """`task_messages`, with the upstream results reduced to a digest when they do not fit.

    Only a budget that knows the model's context length judges ahead; with a guessed one
    the results go as they are, and a rejection as too long (which names the real length,
    on `kimmy serve` and vLLM) brings the digest (`force_digest`, see `_chat`).

    Raises:
        ContextOverflowError: the task and inputs alone leave no room for the results.
    """
    messages = task_messages(run, tool_text=tool_text)
    upstream = run.ctx.upstream_results
    max_tokens = run.role.max_tokens
    if not upstream:
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


async def _chat(
    run: AgentRun,
    budget: TokenBudget,
    messages: list[dict[str, Any]],
    options: dict[str, Any],
    *,
    opening: bool,
    tool_text: str = "",
) -> tuple[ChatResponse, list[dict[str, Any]]]:
    """One model call, the budget told what the server counted. A first call rejected as too
    long is made again once, with the upstream results reduced to a digest (the budget
    learned from the rejection first); the conversation sent is returned with the answer.
    `tool_text`: the text tool protocol's part of the system message, kept in a new opening."""
    tools = options.get("tools")
    try:
        response = await run.ctx.model.chat(messages, **options)
    except ModelRequestError as exc:
        overflow = context_overflow(exc)
        if overflow is None:
            raise
        if not (opening and run.ctx.upstream_results):
            # Nothing left to reduce (no upstream results, or a later turn whose tool
            # results filled the context): the task is too long for this model.
            raise ContextOverflowError(
                f"role {run.role.name!r} (subtask {run.ctx.id!r}): the conversation does not "
                f"fit the model's context at step {run.steps}: {exc}"
            ) from exc
        budget.reject(messages, overflow, options["max_tokens"], tools)
        messages = await opening_messages(
            run, budget, tools, force_digest=True, tool_text=tool_text
        )
        response = await run.ctx.model.chat(messages, **options)
    budget.observe(messages, response.usage.prompt_tokens, tools)
    return response, messages


@dataclasses.dataclass(frozen=True)
class _Turns:
    """How one sub-agent's turns are asked and read, from what its model's server honours.

    Attributes:
        specs: the role's tools (OpenAI `tools`); None: it has none.
        text: the text tool protocol, where the server has no native tool calls.
        tool_text: its part of the system message ("" with native tools).
        response_format: the answer schema for constrained decoding, where the server
            enforces it; None: the answer is asked for in the prompt only.
    """

    specs: list[dict[str, Any]] | None
    text: TextTools | None
    tool_text: str
    response_format: dict[str, Any] | None

    @classmethod
    def of(cls, run: AgentRun) -> _Turns:
        honoured = capabilities_of(run.ctx.model)
        specs = run.tools.specs() or None
        text = TextTools(specs) if specs is not None and not honoured.tools else None
        output = run.role.output
        return cls(
            specs=specs,
            text=text,
            tool_text=text.instructions() if text is not None else "",
            response_format=honoured.response_format(output.__name__, output.model_json_schema()),
        )

    @property
    def native_tools(self) -> list[dict[str, Any]] | None:
        """The `tools` sent with a turn that offers them (None in text)."""
        return self.specs if self.text is None else None

    def options(self, offer_tools: bool, max_tokens: int) -> dict[str, Any]:
        """One turn's options. A turn that offers tools asks for no JSON schema:
        JSON-constrained decoding would forbid tool calls (native or in text)."""
        options: dict[str, Any] = {}
        if offer_tools and self.native_tools is not None:
            options["tools"] = self.native_tools
        if not offer_tools and self.response_format is not None:
            options["response_format"] = self.response_format
        options["max_tokens"] = max_tokens
        return options

    def assistant_message(self, response: ChatResponse) -> dict[str, Any]:
        """The model's turn as it goes back; in text, its content only (a server without
        tools fails on `tool_calls` in the conversation)."""
        if self.text is None:
            return response.message.to_openai()
        return {"role": "assistant", "content": response.content or ""}


def _read_reply(run: AgentRun, content: str | None, tools: TextTools | None) -> Any:
    """A text tool call (when `tools` are offered in text), else the validated answer.

    Raises:
        ValidationError, ValueError: not JSON, not the role's schema, or its check failed.
    """
    value = parse_answer(content)
    call = tools.parse_call(value) if tools is not None else None
    return call if call is not None else run.validate(value)


async def _native_calls(
    run: AgentRun,
    response: ChatResponse,
    messages: list[dict[str, Any]],
    executor: Executor | None,
    step: int,
) -> None:
    """Run the model's tool calls; their results go back as `tool` messages."""
    for call in response.tool_calls:
        fn = call.function
        text = await run.call_for_model(fn.name, fn.arguments, executor, call.id)
        messages.append({"role": "tool", "tool_call_id": call.id, "content": text})
    names = [c.function.name for c in response.tool_calls]
    run.ctx.record_step(step, policy="model", tools=names, outcome="tools")


async def _text_call(
    run: AgentRun,
    call: TextToolCall,
    messages: list[dict[str, Any]],
    executor: Executor | None,
    step: int,
) -> None:
    """Run a tool called in text; its result goes back as a user message."""
    text = await run.call_for_model(call.name, call.arguments, executor)
    last = step + 1 >= run.role.max_steps  # the next turn offers no tools
    messages.append(TextTools.result_message(call.name, text, last=last))
    run.ctx.record_step(step, policy="model", tools=[call.name], outcome="tools")


def _invalid(
    run: AgentRun, step: int, exc: Exception, messages: list[dict[str, Any]], *, repaired: bool
) -> None:
    """Record an invalid answer and ask for a repair, or raise when it was the repair."""
    problem = validation_problems(exc, limit=8, root="(answer)")
    run.ctx.record_step(step, policy="model", outcome="invalid", error=problem)
    if repaired:
        raise ModelBehaviourError(
            f"role {run.role.name!r} (subtask {run.ctx.id!r}): the answer is still invalid "
            f"after the repair turn: {problem}"
        ) from exc
    messages.append(
        {
            "role": "user",
            "content": (
                f"Your answer is invalid: {problem}\nReply again with ONLY one "
                "corrected JSON object matching the schema."
            ),
        }
    )


async def run_model_policy(run: AgentRun, executor: Executor | None) -> BaseModel:
    """Run the agent loop to a valid answer (see the module docstring for the errors)."""
    role, ctx = run.role, run.ctx
    turns = _Turns.of(run)
    budget = shared_budget(ctx.model)
    messages = await opening_messages(run, budget, turns.native_tools, tool_text=turns.tool_text)
    repaired = False
    for step in range(1, role.max_steps + 1):
        run.steps = step
        # The last step, and the repair turn after an invalid answer, offer no tools and ask
        # for the JSON schema with constrained decoding (where the server enforces it): a
        # weak model that answered in prose gets a turn that can only produce a valid answer.
        offer_tools = turns.specs is not None and step < role.max_steps and not repaired
        options = turns.options(offer_tools, role.max_tokens)
        response, messages = await _chat(
            run, budget, messages, options, opening=step == 1, tool_text=turns.tool_text
        )
        messages.append(turns.assistant_message(response))
        if offer_tools and turns.text is None and response.tool_calls:
            await _native_calls(run, response, messages, executor, step)
            continue
        try:
            reply = _read_reply(run, response.content, turns.text if offer_tools else None)
        except (ValidationError, ValueError) as exc:  # JSONDecodeError is a ValueError
            _invalid(run, step, exc, messages, repaired=repaired)
            repaired = True
            continue
        if isinstance(reply, TextToolCall):
            await _text_call(run, reply, messages, executor, step)
            continue
        ctx.record_step(step, policy="model", outcome="answer")
        return reply
    raise AgentStepLimitError(
        f"role {role.name!r} (subtask {ctx.id!r}): no valid answer within {role.max_steps} "
        "model turns (the role's max_steps)"
    )


__all__ = [
    "MAX_SHOWN_CHARS",
    "AgentStepLimitError",
    "opening_messages",
    "parse_answer",
    "run_model_policy",
    "task_messages",
]
