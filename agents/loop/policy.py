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
(`agents.loop.text_tools`), their results sent back as plain user messages.

A role with a brief (`agents.brief`) is given what its subtask needs in its task message
and answers in its first turn, under the schema made for that subtask; it is offered no tools.

Every call sets the role's `max_tokens` and goes through `chat_within_budget`. The opening
conversation must fit the model's context (`agents.loop.opening`): a first call the server
rejects as too long is sent once more with the upstream results reduced to a digest; a
rejection with nothing left to reduce is a `ContextOverflowError`.
"""

from __future__ import annotations

import asyncio
import dataclasses
from concurrent.futures import Executor
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from kimmy_swarm.agents.loop.chat import Rejection, chat_within_budget
from kimmy_swarm.agents.loop.errors import AgentStepLimitError
from kimmy_swarm.agents.loop.opening import subtask_opening
from kimmy_swarm.agents.loop.replies import parse_answer
from kimmy_swarm.agents.loop.text_tools import TextToolCall, TextTools
from kimmy_swarm.swarm.errors import ContextOverflowError, ModelBehaviourError, validation_problems
from kimmy_swarm.swarm.llm.capabilities import capabilities_of
from kimmy_swarm.swarm.llm.server_profile import shared_budget

if TYPE_CHECKING:
    from pydantic import BaseModel

    from kimmy_swarm.agents.brief import SubtaskBrief
    from kimmy_swarm.agents.loop.attempt import Attempt
    from kimmy_swarm.swarm.llm.budget import TokenBudget
    from kimmy_swarm.swarm.llm.types import ChatResponse


@dataclasses.dataclass(frozen=True)
class _DigestOnOverflow:
    """A sub-agent's answer to a rejection as too long (`agents.loop.chat.OnOverflow`): its
    first call is sent once more, with the upstream results reduced to a digest (the budget
    learned from the rejection first). Nothing left to reduce (no upstream results, or a
    later turn whose tool results filled the context) is the task not fitting this model.
    """

    run: Attempt
    budget: TokenBudget
    tools: list[dict[str, Any]] | None
    tool_text: str
    opening: bool

    def retries(self, rejection: Rejection) -> bool:
        if rejection.count > 0:  # the digest was rejected too: the server's error stands
            return False
        run = self.run
        if not (self.opening and run.ctx.upstream_results):
            raise ContextOverflowError(
                f"role {run.role.name!r} (subtask {run.ctx.id!r}): the conversation does not "
                f"fit the model's context at step {run.steps}: {rejection.error}"
            ) from rejection.error
        return True

    async def resend(self, rejection: Rejection, learned: bool) -> list[dict[str, Any]]:
        return await subtask_opening(
            self.run, self.budget, self.tools, force_digest=True, tool_text=self.tool_text
        )


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
    def of(cls, run: Attempt) -> _Turns:
        """A role with a brief offers no tools: its model answers from the brief, under the
        brief's schema where it has one (`agents.brief`)."""
        honoured = capabilities_of(run.ctx.model)
        brief = run.brief
        specs = (run.tools.specs() or None) if brief is None else None
        text = TextTools(specs) if specs is not None and not honoured.tools else None
        output = run.role.output
        schema = brief.schema if brief is not None and brief.schema is not None else None
        return cls(
            specs=specs,
            text=text,
            tool_text=text.instructions() if text is not None else "",
            response_format=honoured.response_format(
                output.__name__, schema if schema is not None else output.model_json_schema()
            ),
        )

    @property
    def native_tools(self) -> list[dict[str, Any]] | None:
        """The `tools` sent with a turn that offers them (None in text)."""
        return self.specs if self.text is None else None

    def options(self, offer_tools: bool, *, must_call: str | None = None) -> dict[str, Any]:
        """One turn's options (its `max_tokens` aside). A turn that offers tools asks for no
        JSON schema: JSON-constrained decoding would forbid tool calls (native or in text).
        `must_call`: the tool the turn must call, and only it (native tools only)."""
        options: dict[str, Any] = {}
        if offer_tools and self.native_tools is not None:
            options["tools"] = self.native_tools
            if must_call is not None:
                options["tool_choice"] = {"type": "function", "function": {"name": must_call}}
        if not offer_tools and self.response_format is not None:
            options["response_format"] = self.response_format
        return options

    def assistant_message(self, response: ChatResponse) -> dict[str, Any]:
        """The model's turn as it goes back; in text, its content only (a server without
        tools fails on `tool_calls` in the conversation)."""
        if self.text is None:
            return response.message.to_openai()
        return {"role": "assistant", "content": response.content or ""}


def _read_reply(run: Attempt, content: str | None, tools: TextTools | None) -> Any:
    """A text tool call (when `tools` are offered in text), else the validated answer.

    Raises:
        ValidationError, ValueError: not JSON, not the role's schema, or its check failed.
    """
    value = parse_answer(content)
    call = tools.parse_call(value) if tools is not None else None
    if call is not None:
        return call
    return run.validate(run.brief.complete(value) if run.brief is not None else value)


async def _native_calls(
    run: Attempt,
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
    run: Attempt,
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
    run: Attempt, step: int, exc: Exception, messages: list[dict[str, Any]], *, repaired: bool
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


async def _brief(run: Attempt, executor: Executor | None) -> SubtaskBrief | None:
    """The role's brief for this subtask, made in a worker thread (its tool calls are the
    sub-agent's steps, recorded from there like a procedure's)."""
    assert run.role.brief is not None
    brief_of = run.role.brief
    loop = asyncio.get_running_loop()
    run.loop = loop
    try:
        return await loop.run_in_executor(executor, brief_of, run)
    finally:
        run.loop = None


async def run_model_policy(run: Attempt, executor: Executor | None) -> BaseModel:
    """Run the agent loop to a valid answer (see the module docstring for the errors)."""
    role, ctx = run.role, run.ctx
    if role.brief is not None:
        run.brief = await _brief(run, executor)
    turns = _Turns.of(run)
    budget = shared_budget(ctx.model)
    messages = await subtask_opening(run, budget, turns.native_tools, tool_text=turns.tool_text)
    repaired = False
    for step in range(1, role.max_steps + 1):
        run.steps = step
        # The last step, and the repair turn after an invalid answer, offer no tools and ask
        # for the JSON schema with constrained decoding (where the server enforces it): a
        # weak model that answered in prose gets a turn that can only produce a valid answer.
        offer_tools = turns.specs is not None and step < role.max_steps and not repaired
        options = turns.options(offer_tools, must_call=role.first_tool if step == 1 else None)
        on_overflow = _DigestOnOverflow(
            run, budget, options.get("tools"), turns.tool_text, opening=step == 1
        )
        response, messages = await chat_within_budget(
            ctx.model, budget, messages, options, max_tokens=role.max_tokens,
            on_overflow=on_overflow,
        )  # fmt: skip
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


__all__ = ["run_model_policy"]
