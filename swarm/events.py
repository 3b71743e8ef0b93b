"""The typed event stream of a run.

Every step of a run emits one of these. The store writes them (so any past run can be
replayed, shown or scored), the progress view renders them, and Python users iterate them.
`Event` is a union discriminated by `type`; `parse_event` reads one back from JSON.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, TypeAdapter

from kimmy_swarm.swarm.schema import ErrorInfo, RunStatus, Subtask, SubtaskResult, Usage


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: str
    #: Position in the run's stream, from 0; assigned by the emitter.
    seq: int = 0
    #: Seconds since the epoch.
    ts: float


class RunStarted(_Event):
    type: Literal["run_started"] = "run_started"
    goal: str
    n_subtasks: int
    resumed: bool = False
    settings: dict[str, JsonValue] = Field(default_factory=dict)
    #: Planned subtasks per role (the progress view's per-role totals before any starts).
    roles: dict[str, int] = Field(default_factory=dict)


class SubtaskStarted(_Event):
    type: Literal["subtask_started"] = "subtask_started"
    subtask_id: str
    role: str
    attempt: int


class ModelCalled(_Event):
    """One model call made by a sub-agent (also recorded when it failed)."""

    type: Literal["model_called"] = "model_called"
    subtask_id: str
    latency_s: float
    usage: Usage = Field(default_factory=Usage)
    error: ErrorInfo | None = None
    #: Token ids and logprobs of the completion, when the server offers them.
    logprobs: list[JsonValue] | None = None
    # --- the transcript (`RunConfig.transcripts`; None when nothing was captured) ---
    #: Position in the conversation of `messages[0]`: the messages before it are those of
    #: the attempt's earlier calls (0: the whole conversation is here).
    first_message: int = 0
    #: The messages this call sent that the attempt's previous call had not (OpenAI shape;
    #: each text cut at the capture's `max_chars`, saying so).
    messages: list[JsonValue] | None = None
    #: The request's shape: tools offered, structured output, max_tokens.
    request: dict[str, JsonValue] | None = None
    #: The answer: content, tool calls (id, name, arguments), finish reason.
    response: dict[str, JsonValue] | None = None


class AgentStep(_Event):
    """One step of a sub-agent: a model turn (model policy) or a procedure stage (offline).

    Both policies emit the same events, so traces and rewards do not depend on which ran.
    """

    type: Literal["agent_step"] = "agent_step"
    subtask_id: str
    policy: Literal["model", "offline"]
    #: 1 for the first step of this attempt.
    step: int
    #: Tools called in this step, in order.
    tools: list[str] = Field(default_factory=list)
    #: `tools` (called tools), `answer` (a valid final output), `invalid` (repair needed)
    #: or `fallback` (the model failed the subtask; the role's offline procedure takes it
    #: over, its steps follow with policy `offline`).
    outcome: Literal["tools", "answer", "invalid", "fallback"]
    #: Why the answer was invalid (the validation problems the repair turn shows the
    #: model), on an `invalid` step; why the model failed (`Type: message`), on `fallback`.
    error: str | None = None


class ToolCalled(_Event):
    """One tool call made by a sub-agent (either policy)."""

    type: Literal["tool_called"] = "tool_called"
    subtask_id: str
    tool: str
    step: int
    latency_s: float
    ok: bool
    #: The error the tool raised, as `Type: message` (None when it succeeded).
    error: str | None = None
    #: The model's id for the call (model policy), matching its `tool` result message.
    call_id: str | None = None
    #: The arguments and the result as text, cut at the capture's `max_chars` (None when
    #: content capture is off, or the recorder gave none).
    arguments: str | None = None
    result: str | None = None


class AgentTurn(_Event):
    """One turn of an agent's conversation: the messages it added, what it spawned, and
    the state it needs to go on from there.

    An agent that records its turns can be resumed where it was: a later attempt (a retry,
    or a resumed run) finds them in `SubtaskContext.history`. Rewards read them as the
    agent's decisions (the model's text and tool calls, and their logprobs).
    """

    type: Literal["agent_turn"] = "agent_turn"
    subtask_id: str
    #: The attempt the turn belongs to (1 for the first, counted per session).
    attempt: int
    #: 1 for the agent's first turn, counted over all attempts and sessions.
    step: int
    #: The messages the turn added, in order (OpenAI chat format): the model's message
    #: (content, tool calls), then the results of its tool calls.
    messages: list[JsonValue] = Field(default_factory=list)
    #: Subtasks the turn spawned.
    spawned: list[str] = Field(default_factory=list)
    #: The agent's own state after the turn (agent-defined JSON), to resume from.
    state: JsonValue = None
    #: Token logprobs of the model's message, when the server gave them.
    logprobs: list[JsonValue] | None = None


class TokenDelta(_Event):
    """A piece of a sub-agent's model answer as the server sent it (`RunConfig.stream`).

    Delivered to the run's sinks within `swarm.delta_batcher.INTERVAL_S` of its arrival (the
    pieces of one call that arrived meanwhile joined) and never stored: the store keeps the
    whole answer, in `model_called`. Its `seq` is the one the next stored event takes.
    """

    type: Literal["token_delta"] = "token_delta"
    subtask_id: str
    #: The model call of the sub-agent's attempt it belongs to (1 for its first call).
    call: int = 1
    text: str
    #: `content`, `tool_name` or `tool_arguments` (`swarm.llm.stream_chunks.Delta`).
    kind: str = "content"
    #: The tool call a `tool_*` piece belongs to (0 for content).
    index: int = 0


class ApprovalRequested(_Event):
    """A sub-agent's call waits for a person (`swarm.approvals`); the sub-agent is parked."""

    type: Literal["approval_requested"] = "approval_requested"
    subtask_id: str
    #: The call's id in the run (`a1`, `a2`, …), as `kimmy approve RUN CALL` names it.
    call_id: str
    tool: str
    arguments: dict[str, JsonValue] = Field(default_factory=dict)


class ApprovalDecided(_Event):
    """A waiting call was answered, and its sub-agent goes on."""

    type: Literal["approval_decided"] = "approval_decided"
    subtask_id: str
    call_id: str
    tool: str
    #: `approve` or `deny`.
    verdict: str
    #: The arguments the call runs with, when a person edited them.
    arguments: dict[str, JsonValue] | None = None
    reason: str | None = None
    #: Who answered: `cli`, `dashboard`, `python`, `timeout`, …
    by: str = ""


class SubtaskRetrying(_Event):
    type: Literal["subtask_retrying"] = "subtask_retrying"
    subtask_id: str
    attempt: int
    error: ErrorInfo
    delay_s: float


class SubtaskFinished(_Event):
    type: Literal["subtask_finished"] = "subtask_finished"
    result: SubtaskResult


class SubtasksSpawned(_Event):
    """A running sub-agent added subtasks (and edges into pending ones) to the live DAG."""

    type: Literal["subtasks_spawned"] = "subtasks_spawned"
    parent_id: str
    subtasks: list[Subtask]
    #: Extra edges (dependency, dependent) into subtasks that already existed.
    edges: list[tuple[str, str]] = Field(default_factory=list)


class SpawnRefused(_Event):
    type: Literal["spawn_refused"] = "spawn_refused"
    parent_id: str
    error: ErrorInfo


class ConcurrencyChanged(_Event):
    """The adaptive admission limit moved (backing off or recovering)."""

    type: Literal["concurrency_changed"] = "concurrency_changed"
    limit: int
    previous: int
    reason: str


class BudgetExhausted(_Event):
    type: Literal["budget_exhausted"] = "budget_exhausted"
    reason: str


class RunFinished(_Event):
    type: Literal["run_finished"] = "run_finished"
    status: RunStatus
    stop_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)
    counts: dict[str, int] = Field(default_factory=dict)


Event = Annotated[
    RunStarted
    | SubtaskStarted
    | ModelCalled
    | AgentStep
    | AgentTurn
    | ToolCalled
    | TokenDelta
    | ApprovalRequested
    | ApprovalDecided
    | SubtaskRetrying
    | SubtaskFinished
    | SubtasksSpawned
    | SpawnRefused
    | ConcurrencyChanged
    | BudgetExhausted
    | RunFinished,
    Field(discriminator="type"),
]

_EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)
_EVENTS_ADAPTER: TypeAdapter[list[Event]] = TypeAdapter(list[Event])
# Serializes each element with its own model's serializer (the bytes `model_dump_json` gives),
# in one call for the whole batch: half the cost of a call per event, in the store's writer
# thread, where every microsecond holds the GIL the event loop needs.
_BATCH_DUMPER: TypeAdapter[list[Any]] = TypeAdapter(list[Any])


def dump_events(events: Sequence[Event]) -> str:
    """A batch of events as one JSON array (what `parse_events` reads back)."""
    return _BATCH_DUMPER.dump_json(list(events)).decode()


def parse_event(data: str | bytes) -> Event:
    """Read one event back from its JSON form."""
    return _EVENT_ADAPTER.validate_json(data)


def parse_events(data: str | bytes) -> list[Event]:
    """Read a JSON array of events back."""
    return _EVENTS_ADAPTER.validate_json(data)


__all__ = [
    "AgentStep",
    "AgentTurn",
    "ApprovalDecided",
    "ApprovalRequested",
    "BudgetExhausted",
    "ConcurrencyChanged",
    "Event",
    "ModelCalled",
    "RunFinished",
    "RunStarted",
    "SpawnRefused",
    "SubtaskFinished",
    "SubtaskRetrying",
    "SubtaskStarted",
    "SubtasksSpawned",
    "TokenDelta",
    "ToolCalled",
    "dump_events",
    "parse_event",
    "parse_events",
]
