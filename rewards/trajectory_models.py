"""The trajectory records: one `Episode` per sub-agent, the orchestrators' decisions as
`OrchestratorTurn`s, and the `Trajectory` of a whole run (JSON round-trips exactly).
`rewards.trajectory` builds them from a run's events."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from kimmy_swarm.swarm.errors import CycleError
from kimmy_swarm.swarm.schema import Usage

#: Version of the `Trajectory` JSON layout (bumped when a field changes meaning).
SCHEMA_VERSION = 1
#: Status of a subtask that has neither started nor finished (e.g. still pending).
NEVER_STARTED = "never_started"


class ToolUse(BaseModel):
    """One tool call of a sub-agent."""

    tool: str
    step: int
    ok: bool
    latency_s: float
    #: The attempt it belongs to (1 for the first, counted over all sessions).
    attempt: int = 1


class ModelCall(BaseModel):
    """One model call of a sub-agent (failed calls included)."""

    latency_s: float
    usage: Usage = Field(default_factory=Usage)
    #: `Type: message` of the error when the call failed.
    error: str | None = None
    #: Per-token logprobs (token, logprob, and token ids/bytes when the server gave them).
    logprobs: list[dict[str, Any]] | None = None
    #: The attempt it belongs to (1 for the first, counted over all sessions).
    attempt: int = 1


class Episode(BaseModel):
    """One sub-agent of the run: what it was, how it ran, and what came of its output."""

    subtask_id: str
    role: str
    parent: str | None = None
    depends_on: list[str] = Field(default_factory=list)
    #: The latest result's status; `running` when started without a result (a killed run),
    #: `never_started` when it has neither started nor finished.
    status: str
    started: bool
    #: Attempts started, over all sessions.
    attempts: int
    policy: str | None = None
    #: The last attempt's model failed its task and the role's offline procedure did it
    #: (an `agent_step` with outcome `fallback`): its output is not the model's success.
    fell_back: bool = False
    #: Steps of the last attempt: its `agent_step` events, else one per model call (min 1).
    steps: int
    tool_calls: list[ToolUse] = Field(default_factory=list)
    model_calls: list[ModelCall] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    started_at: float | None = None
    finished_at: float | None = None
    #: Finished done with a non-empty output (not None, "", [], {}).
    output_valid: bool
    #: A dependent finished done, or it is a sink (no dependents) that finished done.
    output_used: bool
    #: Its role is `orchestrator`, or it made at least one spawn (granted or refused).
    is_orchestrator: bool

    @property
    def duration_s(self) -> float:
        """Wall-clock seconds from its start to its finish (0 when either is unknown)."""
        if self.started_at is None or self.finished_at is None:
            return 0.0
        return max(0.0, self.finished_at - self.started_at)


class OrchestratorTurn(BaseModel):
    """One decision of an orchestrator: the spawns it made, granted (`spawned`) or refused
    (`refused`). For an agent that records its turns (`AgentTurn` events: the orchestrator
    agent) a turn is one model turn — its message and logprobs included, spawns or not;
    otherwise one spawn call."""

    subtask_id: str
    #: Position among this orchestrator's turns, from 0.
    index: int
    ts: float
    spawned: list[str] = Field(default_factory=list)
    #: Extra edges (dependency, dependent) the spawn added into existing subtasks.
    edges: list[tuple[str, str]] = Field(default_factory=list)
    #: Error messages of refused spawns.
    refused: list[str] = Field(default_factory=list)
    #: The model's own message of the turn (content and tool calls), when it was recorded.
    message: dict[str, Any] | None = None
    #: Token logprobs of that message, when the server gave them (each entry's `token_id`
    #: too, when the server sent ids).
    logprobs: list[dict[str, Any]] | None = None
    #: The messages the agent recorded after `message`, as it recorded them: its tool calls'
    #: results (role `tool`, with `tool_call_id`), or what it was told when it called none.
    results: list[dict[str, Any]] = Field(default_factory=list)


class Trajectory(BaseModel):
    """A whole run as PARL sees it (JSON round-trips exactly)."""

    schema_version: int = SCHEMA_VERSION
    run_id: str
    goal: str = ""
    #: The run's last recorded status (`running` when no session finished).
    status: str
    settings: dict[str, Any] = Field(default_factory=dict)
    episodes: dict[str, Episode]
    turns: list[OrchestratorTurn] = Field(default_factory=list)
    #: Per agent that recorded its turns: the messages its conversation opened with (system,
    #: user, …: those before its first assistant message), as its first model call sent them.
    #: Taken from the run's transcript (`RunConfig.transcripts`), so texts longer than the
    #: capture's `max_chars` are cut (saying so) and, with content capture off, only roles and
    #: sizes are there; absent when the agent made no model call the transcript kept.
    openings: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)
    #: Dependency edges (dependency, dependent), spawn `feeds` included.
    edges: list[tuple[str, str]] = Field(default_factory=list)
    #: Outputs of the subtasks that finished done, by id.
    outputs: dict[str, Any] = Field(default_factory=dict)
    started_at: float | None = None
    finished_at: float | None = None

    def sinks(self) -> list[str]:
        """Subtasks nothing depends on: their outputs are the run's final result."""
        feeding = {dep for dep, _ in self.edges}
        return [k for k in self.episodes if k not in feeding]

    def stages(self) -> list[list[str]]:
        """Topological generations over the episodes that started.

        A spawned sub-agent comes after its parent (it cannot start before the spawn), as
        well as after its dependencies. Within a stage, episodes keep their run order.

        Raises:
            CycleError: the edges form a cycle (never the case for a run the swarm ran).
        """
        started = [k for k, e in self.episodes.items() if e.started]
        order = {k: i for i, k in enumerate(started)}
        preds: dict[str, set[str]] = {k: set() for k in started}
        for dep, target in self.edges:
            if dep in order and target in order:
                preds[target].add(dep)
        for k in started:
            parent = self.episodes[k].parent
            if parent in order:
                preds[k].add(parent)
        return _generations(started, preds)


def _generations(nodes: list[str], preds: dict[str, set[str]]) -> list[list[str]]:
    """Kahn's algorithm, one generation at a time (nodes keep their given order)."""
    succs: dict[str, list[str]] = {k: [] for k in nodes}
    waiting = {k: len(p) for k, p in preds.items()}
    for k, ps in preds.items():
        for p in ps:
            succs[p].append(k)
    current = [k for k in nodes if waiting[k] == 0]
    position = {k: i for i, k in enumerate(nodes)}
    stages: list[list[str]] = []
    seen = 0
    while current:
        stages.append(current)
        seen += len(current)
        nxt = []
        for k in current:
            for s in succs[k]:
                waiting[s] -= 1
                if waiting[s] == 0:
                    nxt.append(s)
        current = sorted(nxt, key=position.__getitem__)
    if seen < len(nodes):
        stuck = [k for k in nodes if waiting[k] > 0][:8]
        raise CycleError(f"trajectory edges form a cycle through {stuck}", ids=stuck)
    return stages


__all__ = [
    "NEVER_STARTED",
    "SCHEMA_VERSION",
    "Episode",
    "ModelCall",
    "OrchestratorTurn",
    "ToolUse",
    "Trajectory",
]
