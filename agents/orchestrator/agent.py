"""`OrchestratorAgent`: the orchestrator's loop, a swarm worker.

Each turn its policy — a model with the orchestrator's tools, or the rule-based planner
offline — answers the conversation with tool calls; the calls are carried out against the
live run (`Actions`); the turn is recorded (`AgentTurn`: the model's message, the tool
results, the tasks spawned, the state, logprobs when offered), so rewards score these very
decisions and a resumed run continues the conversation where it stopped, without running a
finished sub-agent again. It ends at `finish`, or fails at the turn limit.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, Field

from kimmy_swarm.agents.loop import (
    AgentStepLimitError,
    Rejection,
    TextTools,
    chat_within_budget,
)
from kimmy_swarm.agents.orchestrator.actions import Actions, Outcome
from kimmy_swarm.agents.orchestrator.prompts import NO_TOOL_CALL, ResourceBrief, opening_messages
from kimmy_swarm.agents.orchestrator.state import OrchestratorState
from kimmy_swarm.agents.orchestrator.tools import SMALL_CONTEXT_LEAVES_OUT
from kimmy_swarm.swarm.errors import ModelBehaviourError
from kimmy_swarm.swarm.llm import TokenBudget, context_tokens, shared_budget
from kimmy_swarm.swarm.llm.budget import message_chars
from kimmy_swarm.swarm.llm.capabilities import capabilities_of
from kimmy_swarm.swarm.llm.types import FunctionCall, ToolCall

if TYPE_CHECKING:
    from kimmy_swarm.agents.orchestrator.corpus_view import CorpusView
    from kimmy_swarm.swarm.context import SubtaskContext
    from kimmy_swarm.swarm.llm.types import ChatResponse

#: The subtask id of the orchestrator in a `run_solve` run.
ORCHESTRATOR_ID = "orchestrator"


class OrchestratorOutput(BaseModel):
    """What the orchestrator's subtask returns."""

    answer: str
    #: Task ids by the agent they were assigned to.
    tasks: dict[str, str] = Field(default_factory=dict)
    #: The sub-agents it created, with their system prompts.
    agents: dict[str, str] = Field(default_factory=dict)
    turns: int = 0


class TurnPolicy(Protocol):
    """Decides the orchestrator's next turn (a model, or the offline planner)."""

    name: str

    async def next_turn(
        self, ctx: SubtaskContext, messages: Sequence[dict[str, Any]], actions: Actions
    ) -> ChatResponse: ...


#: Characters per token assumed when the opening is sized against the model's context
#: (English and JSON under a large-vocabulary tokenizer: Qwen2.5 and SmolLM2 both counted
#: about 3.6 on the orchestrator's opening).
OPENING_CHARS_PER_TOKEN = 3.5
#: The share of the context the whole opening (messages and tool schemas) may take; a model
#: whose context it would crowd more gets the compact one (`opening_messages(compact=True)`,
#: `SMALL_CONTEXT_LEAVES_OUT`): SmolLM2's 4,096 tokens held 4,051 of the whole and no turn;
#: Qwen2.5 served at 8,192 holds it in about half and works with it.
OPENING_SHARE = 0.6
#: The fewest tokens an orchestrator turn may be given (a call or two).
MIN_TURN_TOKENS = 64
#: Rejections as too long after which a turn gives up (each teaches the budget first).
MAX_REJECTIONS = 2
#: Turns in a row without one successful call after which the orchestrator gives up.
MAX_IDLE_TURNS = 4
#: The result of a `finish` not run because an earlier call of its turn failed.
SKIPPED = "error: finish not run: call {failed} of this turn failed; fix it, then finish"


@dataclass(frozen=True)
class _AskAgain:
    """The orchestrator's answer to a rejection as too long (`agents.loop.chat.OnOverflow`):
    the same conversation again (its `max_tokens` sized anew), while the budget learned
    something and fewer than `MAX_REJECTIONS` tries were rejected."""

    def retries(self, rejection: Rejection) -> bool:
        return rejection.count < MAX_REJECTIONS

    async def resend(self, rejection: Rejection, learned: bool) -> list[dict[str, Any]] | None:
        return rejection.messages if learned else None


@dataclass
class ModelTurns:
    """The model policy: the run's model with the orchestrator's tools (a call is required
    every turn, so a server with structured output can constrain it to valid calls; a
    server without native tool calls gets them in the text tool protocol).

    Each turn's `max_tokens` is `max_tokens`, or less when the conversation leaves less of
    the context (a learned estimate of the prompt; a rejection as too long teaches it and
    the turn is asked again, once per rejection, while something was learned).
    """

    max_tokens: int = 2_048
    temperature: float | None = None
    logprobs: bool = False
    context_tokens: int | None = None
    name: str = "model"

    def _budget(self, ctx: SubtaskContext) -> TokenBudget:
        budget = shared_budget(ctx.model)
        if not budget.context_known:
            budget.tell_context(context_tokens(ctx.model, self.context_tokens or 4_096))
        return budget

    async def next_turn(
        self, ctx: SubtaskContext, messages: Sequence[dict[str, Any]], actions: Actions
    ) -> ChatResponse:
        """The model's next turn. A server without native tool calls is sent the conversation
        in the text tool protocol (`TextTools`: the tools described in the system message,
        calls and results as text) and its reply's calls are read back as `tool_calls`, so
        the recorded conversation is the same either way."""
        specs = actions.toolbox.specs()
        text = None if capabilities_of(ctx.model).tools else TextTools(specs)
        tools: list[dict[str, Any]] | None = specs if text is None else None
        options: dict[str, Any] = {}
        sent: list[dict[str, Any]] = list(messages)
        if text is None:
            options.update(tools=specs, tool_choice="required")
        else:
            sent = text.conversation(messages)
            system = f"{sent[0]['content']}{text.instructions(several=True)}"
            sent[0] = {**sent[0], "content": system}
        if self.temperature is not None:
            options["temperature"] = self.temperature
        if self.logprobs:
            options["logprobs"] = True
        budget = self._budget(ctx)

        def turn_tokens(asked: Sequence[dict[str, Any]]) -> int:
            room = budget.context_tokens - budget.prompt_tokens(asked, tools) - budget.margin
            return max(MIN_TURN_TOKENS, min(self.max_tokens, room))

        response, _ = await chat_within_budget(
            ctx.model, budget, sent, options, max_tokens=turn_tokens, on_overflow=_AskAgain()
        )
        if text is None:
            return response
        turn = actions.state.turns + 1
        calls = [
            ToolCall(id=f"text_{turn}_{i}", function=FunctionCall(name=c.name,
                                                                  arguments=c.arguments))
            for i, c in enumerate(text.parse_calls(response.content))
        ]  # fmt: skip
        return response.model_copy(update={"tool_calls": calls})


class OrchestratorAgent:
    """The orchestrator as a swarm worker (the subtask's output: `OrchestratorOutput`).

    Args:
        resources: what the run can work on (shown to the policy).
        policy: the model policy or the offline planner.
        roles: the built-in roles sub-tasks may be assigned to by name.
        max_turns: the most turns (over all attempts and sessions).
        budget_chars: how much of the context the opening message and each `wait` digest
            may take, in characters.
        context_tokens: the model's context length (for `finish` with synthesis).
        max_tokens: the `max_tokens` of a synthesized answer.
        corpus: the run's corpus and index, for `search` and `fan_out` (None: no corpus).
    """

    def __init__(
        self,
        resources: ResourceBrief,
        policy: TurnPolicy,
        *,
        roles: Collection[str],
        max_turns: int = 50,
        budget_chars: int = 12_000,
        context_tokens: int = 4_096,
        max_tokens: int = 2_048,
        corpus: CorpusView | None = None,
    ) -> None:
        self.resources = resources
        self.corpus = corpus
        self.policy = policy
        self.roles = tuple(roles)
        self.max_turns = max_turns
        self.budget_chars = budget_chars
        self.context_tokens = context_tokens
        self.max_tokens = max_tokens

    def _compact(self, ctx: SubtaskContext, actions: Actions) -> bool:
        """Whether the model gets the compact opening: a model policy on a corpus run whose
        whole opening (messages and `actions`' tool schemas) would take more than
        `OPENING_SHARE` of its context. The same on every attempt and resume (it depends on
        the goal, the resources and the context only), so the conversation replays."""
        if self.policy.name != "model" or self.corpus is None:
            return False
        goal = str(ctx.inputs.get("goal") or ctx.instructions)
        whole = opening_messages(goal, self.resources, budget_chars=self.budget_chars)
        tokens = message_chars(whole, actions.toolbox.specs()) / OPENING_CHARS_PER_TOKEN
        return tokens > OPENING_SHARE * self.context_tokens

    def _restore(
        self, ctx: SubtaskContext, *, compact: bool
    ) -> tuple[OrchestratorState, list[dict[str, Any]]]:
        """The state and conversation after the last recorded turn (fresh ones at first)."""
        goal = ctx.inputs.get("goal") or ctx.instructions
        messages: list[dict[str, Any]] = opening_messages(
            str(goal), self.resources, budget_chars=self.budget_chars, compact=compact
        )
        state = OrchestratorState()
        for turn in ctx.history:
            messages.extend(m for m in turn.messages if isinstance(m, dict))
            if turn.state is not None:
                state = OrchestratorState.model_validate(turn.state)
        return state, messages

    async def _carry_out(
        self, ctx: SubtaskContext, actions: Actions, calls: Sequence[ToolCall]
    ) -> tuple[list[dict[str, Any]], list[str]]:
        """Run a turn's tool calls; their result messages and the tasks they spawned (counts
        the turn as idle when no call succeeded but by repeating an earlier search)."""
        results: list[dict[str, Any]] = []
        spawned: list[str] = []
        succeeded = False
        actions.turn_spawned = 0
        failed_at: int | None = None
        actions.plan_gate.begin_turn(calls)
        for number, call in enumerate(calls, start=1):
            if failed_at is not None and call.function.name == "finish":
                # the answer would not know what went wrong before it in the same turn
                outcome = Outcome(SKIPPED.format(failed=failed_at), failed=True)
            else:
                outcome = await actions.run(call)
            spawned += outcome.spawned
            succeeded = succeeded or not (outcome.failed or outcome.repeated)
            if outcome.failed and failed_at is None:
                failed_at = number
            results.append({"role": "tool", "tool_call_id": call.id, "content": outcome.text})
        if not calls:
            results.append({"role": "user", "content": NO_TOOL_CALL})
        actions.state.idle_turns = 0 if succeeded else actions.state.idle_turns + 1
        return results, spawned

    def _record_results(
        self,
        ctx: SubtaskContext,
        state: OrchestratorState,
        messages: list[dict[str, Any]],
        done: tuple[list[dict[str, Any]], list[str]],
    ) -> None:
        results, spawned = done
        state.open_turn = False
        messages += results
        ctx.record_turn(results, spawned=spawned, state=state.model_dump(mode="json"))

    def _actions(self, ctx: SubtaskContext, state: OrchestratorState, *, compact: bool) -> Actions:
        return Actions(
            ctx, state, roles=self.roles, tools=self.resources.tools,
            digest_chars=self.budget_chars, context_tokens=self.context_tokens,
            max_tokens=self.max_tokens, corpus=self.corpus,
            leave_out=SMALL_CONTEXT_LEAVES_OUT if compact else (),
            check_goal=self.policy.name == "model",
        )  # fmt: skip

    async def __call__(self, ctx: SubtaskContext) -> OrchestratorOutput:
        compact = self._compact(ctx, self._actions(ctx, OrchestratorState(), compact=False))
        state, messages = self._restore(ctx, compact=compact)
        actions = self._actions(ctx, state, compact=compact)
        if state.open_turn:  # stopped while carrying out its last turn: carry it out again
            last = next(m for m in reversed(messages) if m.get("role") == "assistant")
            calls = [ToolCall.model_validate(c) for c in last.get("tool_calls") or ()]
            self._record_results(ctx, state, messages, await self._carry_out(ctx, actions, calls))
        while state.answer is None:
            if state.turns >= self.max_turns:
                raise AgentStepLimitError(
                    f"orchestrator {ctx.id!r}: no finish within {self.max_turns} turns"
                )
            if state.idle_turns >= MAX_IDLE_TURNS:
                last = next((m for m in reversed(messages) if m.get("role") != "assistant"), {})
                raise ModelBehaviourError(
                    f"orchestrator {ctx.id!r}: {state.idle_turns} turns in a row without one "
                    f"successful tool call; the last said: {str(last.get('content'))[:300]}"
                )
            response = await self.policy.next_turn(ctx, messages, actions)
            state.turns += 1
            state.open_turn = True
            decided = response.message.to_openai()
            messages.append(decided)
            logprobs = [lp.model_dump() for lp in response.logprobs or ()] or None
            # Recorded before it is carried out: a run stopped mid-turn (in a long wait)
            # resumes with the model's decision, not by asking the model again.
            ctx.record_turn([decided], state=state.model_dump(mode="json"), logprobs=logprobs)
            done = await self._carry_out(ctx, actions, response.tool_calls)
            self._record_results(ctx, state, messages, done)
            ctx.record_step(
                state.turns,
                policy="model" if self.policy.name == "model" else "offline",
                tools=[c.function.name for c in response.tool_calls],
                outcome="answer" if state.answer is not None else "tools",
            )
        return OrchestratorOutput(
            answer=state.answer,
            tasks={k: t.agent for k, t in state.tasks.items()},
            agents={k: a.system_prompt for k, a in state.agents.items()},
            turns=state.turns,
        )


__all__ = [
    "MAX_IDLE_TURNS",
    "ORCHESTRATOR_ID",
    "ModelTurns",
    "OrchestratorAgent",
    "OrchestratorOutput",
    "TurnPolicy",
]
