"""One sub-agent's conversation, read back from the store: `read_transcript`.

    t = read_transcript(store, "latest", "researcher-3")
    for attempt in t.attempts:
        for entry in attempt.entries:
            print(entry.kind, entry.ts)

A transcript is the sub-agent's events, in order, grouped by attempt: each model call
(the messages it sent that the previous call had not, the request's shape, the answer,
usage, latency, error), each tool call (arguments, result, error), each step (an invalid
answer with its validation problems, a fallback with its reason), retries, and how the
attempt ended. What was captured follows the run's `transcripts` setting
(`swarm.transcript_capture`); runs stored before transcripts existed show sizes only.
`kimmy show RUN --agent ID` prints it; the dashboard serves it as JSON.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from kimmy_swarm.swarm.errors import UserError
from kimmy_swarm.swarm.event_fold import EventFold
from kimmy_swarm.swarm.schema import ErrorInfo, SubtaskStatus, Usage
from kimmy_swarm.swarm.transcript_capture import cut

if TYPE_CHECKING:
    from kimmy_swarm.swarm import events as ev
    from kimmy_swarm.swarm.store import RunStore


class _Entry(BaseModel):
    model_config = ConfigDict(frozen=True)

    #: Seconds since the epoch (when the call ended, for calls).
    ts: float


class ModelCallEntry(_Entry):
    kind: Literal["model_call"] = "model_call"
    latency_s: float
    #: Position in the conversation of `messages[0]` (0: a new conversation starts here).
    first_message: int = 0
    #: The messages this call added to the conversation (None: not captured).
    messages: list[JsonValue] | None = None
    request: dict[str, JsonValue] | None = None
    response: dict[str, JsonValue] | None = None
    usage: Usage = Field(default_factory=Usage)
    error: ErrorInfo | None = None


class ToolCallEntry(_Entry):
    kind: Literal["tool_call"] = "tool_call"
    step: int
    tool: str
    latency_s: float
    ok: bool
    call_id: str | None = None
    arguments: str | None = None
    result: str | None = None
    error: str | None = None


class StepEntry(_Entry):
    kind: Literal["step"] = "step"
    step: int
    policy: str
    outcome: str
    tools: list[str] = Field(default_factory=list)
    #: The validation problems of an invalid answer; the model's failure on a fallback.
    error: str | None = None


class RetryEntry(_Entry):
    kind: Literal["retry"] = "retry"
    error: ErrorInfo
    delay_s: float


class ApprovalEntry(_Entry):
    """A call that waited for a person (`swarm.approvals`): once when it asked, once when it
    was answered (`verdict` set)."""

    kind: Literal["approval"] = "approval"
    call_id: str
    tool: str
    #: The arguments asked for (when it asked); the edited ones (when approved with an edit).
    arguments: dict[str, JsonValue] | None = None
    #: None while it waits; `approve` or `deny` once answered.
    verdict: str | None = None
    reason: str | None = None
    by: str | None = None


class FinishedEntry(_Entry):
    kind: Literal["finished"] = "finished"
    status: SubtaskStatus
    error: ErrorInfo | None = None
    #: The output, as JSON text cut at the capture size (None: no output or not captured).
    output: str | None = None


Entry = Annotated[
    ModelCallEntry | ToolCallEntry | StepEntry | RetryEntry | ApprovalEntry | FinishedEntry,
    Field(discriminator="kind"),
]


class AttemptTranscript(BaseModel):
    model_config = ConfigDict(frozen=True)

    #: 1 for the first attempt of a session (counted again after a resume); 0 for a
    #: subtask that finished without starting (skipped).
    attempt: int
    started_at: float
    entries: list[Entry] = Field(default_factory=list)

    @property
    def model_calls(self) -> list[ModelCallEntry]:
        return [e for e in self.entries if isinstance(e, ModelCallEntry)]


class Transcript(BaseModel):
    """A sub-agent's attempts, each the ordered record of what it did and was told."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    subtask_id: str
    role: str
    instructions: str = ""
    parent: str | None = None
    status: SubtaskStatus = SubtaskStatus.PENDING
    #: Whether content was captured (False: sizes only; None: the run predates the setting).
    capture: bool | None = None
    max_chars: int | None = None
    attempts: list[AttemptTranscript] = Field(default_factory=list)


def read_transcript(store: RunStore, run_id: str, subtask_id: str) -> Transcript:
    """The transcript of one sub-agent of a stored run (`run_id` may be a prefix or `latest`).

    Raises:
        RunNotFoundError: no such run.
        UserError: the run has no subtask `subtask_id` (the message names a few it has).
    """
    run_id = store.resolve(run_id)
    st, run_settings = store.subtask(run_id, subtask_id)
    if st is None:
        known = store.subtask_ids(run_id)
        raise UserError(
            f"run {run_id} has no subtask {subtask_id!r}; its subtasks include: "
            + (", ".join(known) + " …" if known else "none")
        )
    settings = run_settings.get("transcripts")
    capture = settings.get("content") if isinstance(settings, dict) else None
    max_chars = settings.get("max_chars") if isinstance(settings, dict) else None
    shown = max_chars if capture else None
    fold = _TranscriptFold(subtask_id, shown)
    needle = json.dumps(subtask_id)  # the quoted id, as the events' JSON holds it
    for event in store.events_mentioning(run_id, needle):
        fold.handle(event)
    status = fold.status
    if status is SubtaskStatus.PENDING and fold.attempts:
        status = SubtaskStatus.RUNNING
    return Transcript(
        run_id=run_id,
        subtask_id=subtask_id,
        role=st.role,
        instructions=st.instructions,
        parent=st.parent,
        status=status,
        capture=capture,
        max_chars=max_chars,
        attempts=[
            AttemptTranscript(attempt=n, started_at=t0, entries=entries)
            for n, t0, entries in fold.attempts
        ],
    )


_E = TypeVar("_E", bound=_Entry)


def _copied(entry: type[_E], event: ev.Event) -> _E:
    """The entry holding the event's fields of the same names."""
    return entry(**{name: getattr(event, name) for name in entry.model_fields if name != "kind"})


class _TranscriptFold(EventFold):
    """One sub-agent's entries, grouped by attempt, from the run's events in order."""

    def __init__(self, subtask_id: str, max_chars: int | None) -> None:
        self.subtask_id = subtask_id
        #: Outputs are cut at this size (None: the run captured no content, none is shown).
        self.max_chars = max_chars
        #: (attempt, started at, entries) of each attempt, in order.
        self.attempts: list[tuple[int, float, list[Entry]]] = []
        self.status = SubtaskStatus.PENDING

    def _add(self, entry: Entry) -> None:
        if not self.attempts:  # finished without starting (skipped): attempt 0
            self.attempts.append((0, entry.ts, []))
        self.attempts[-1][2].append(entry)

    def on_subtask_started(self, event: ev.SubtaskStarted) -> None:
        if event.subtask_id == self.subtask_id:
            self.attempts.append((event.attempt, event.ts, []))

    def on_model_called(self, event: ev.ModelCalled) -> None:
        if event.subtask_id == self.subtask_id:
            self._add(_copied(ModelCallEntry, event))

    def on_tool_called(self, event: ev.ToolCalled) -> None:
        if event.subtask_id == self.subtask_id:
            self._add(_copied(ToolCallEntry, event))

    def on_agent_step(self, event: ev.AgentStep) -> None:
        if event.subtask_id == self.subtask_id:
            self._add(_copied(StepEntry, event))

    def on_subtask_retrying(self, event: ev.SubtaskRetrying) -> None:
        if event.subtask_id == self.subtask_id:
            self._add(_copied(RetryEntry, event))

    def on_approval_requested(self, event: ev.ApprovalRequested) -> None:
        if event.subtask_id == self.subtask_id:
            self._add(ApprovalEntry(ts=event.ts, call_id=event.call_id, tool=event.tool,
                                    arguments=event.arguments))  # fmt: skip

    def on_approval_decided(self, event: ev.ApprovalDecided) -> None:
        if event.subtask_id == self.subtask_id:
            self._add(_copied(ApprovalEntry, event))

    def on_subtask_finished(self, event: ev.SubtaskFinished) -> None:
        r = event.result
        if r.id == self.subtask_id:
            self.status = r.status
            output = _output_text(r.output, self.max_chars)
            self._add(FinishedEntry(ts=event.ts, status=r.status, error=r.error, output=output))


def _output_text(output: object, max_chars: int | None) -> str | None:
    if output is None or max_chars is None:  # no output, or a run that captured no content
        return None
    if hasattr(output, "model_dump_json"):
        text = output.model_dump_json()  # type: ignore[attr-defined]
    else:
        text = output if isinstance(output, str) else json.dumps(output, default=str)
    return cut(text, max_chars)


__all__ = [
    "ApprovalEntry",
    "AttemptTranscript",
    "Entry",
    "FinishedEntry",
    "ModelCallEntry",
    "RetryEntry",
    "StepEntry",
    "ToolCallEntry",
    "Transcript",
    "read_transcript",
]
