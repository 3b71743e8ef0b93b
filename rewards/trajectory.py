"""Trajectories: a stored run's event stream folded into one record per sub-agent.

What PARL scoring reads: which sub-agents were created and started, their steps in their
last attempt, whether their outputs were valid and used, and the orchestrators' spawn
decisions as turns. Built from the event stream (a resumed run's sessions simply continue
it) and the stored plan (the dependencies of planned subtasks, which events do not carry).

    traj = load_trajectory("latest", ".kimmy/runs")
    for stage in traj.stages():
        ...
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from swarm import events as ev
from swarm.errors import CycleError
from swarm.schema import Plan, RunStatus, SubtaskResult, SubtaskStatus, Timings, Usage

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
    #: Token logprobs of that message, when the server gave them.
    logprobs: list[dict[str, Any]] | None = None


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


#: (role, parent, depends_on) of one subtask.
_Spec = tuple[str, str | None, list[str]]


@dataclass(slots=True)
class _Acc:
    """What the events say about one subtask, accumulated in stream order."""

    role: str | None = None
    attempts: int = 0
    agent_steps: int = 0  # of the last attempt
    calls_last: int = 0  # model calls of the last attempt
    policy: str | None = None
    first_start: float | None = None
    model_calls: list[ModelCall] = field(default_factory=list)
    tool_calls: list[ToolUse] = field(default_factory=list)
    result: SubtaskResult | None = None


@dataclass
class _Fold:
    """Folds an event stream into per-subtask accumulators, spawns and run facts."""

    acc: dict[str, _Acc] = field(default_factory=dict)
    spawned: dict[str, _Spec] = field(default_factory=dict)
    extra_edges: list[tuple[str, str]] = field(default_factory=list)
    turns: list[OrchestratorTurn] = field(default_factory=list)
    n_turns: dict[str, int] = field(default_factory=dict)
    #: Per agent that records its turns: the spawn turns since its last recorded turn.
    open_turns: dict[str, list[OrchestratorTurn]] = field(default_factory=dict)
    run_id: str = ""
    goal: str = ""
    status: str = RunStatus.RUNNING.value
    settings: dict[str, Any] = field(default_factory=dict)
    started_at: float | None = None
    finished_at: float | None = None

    def _get(self, subtask_id: str) -> _Acc:
        a = self.acc.get(subtask_id)
        if a is None:
            a = self.acc[subtask_id] = _Acc()
        return a

    def feed(self, e: ev.Event) -> None:
        self.run_id = self.run_id or e.run_id
        if isinstance(e, ev.SubtaskStarted):
            a = self._get(e.subtask_id)
            a.role, a.attempts = e.role, a.attempts + 1
            a.agent_steps = a.calls_last = 0
            a.first_start = e.ts if a.first_start is None else a.first_start
        elif isinstance(e, ev.ModelCalled):
            a = self._get(e.subtask_id)
            a.calls_last += 1
            a.model_calls.append(_model_call(e, max(1, a.attempts)))
        elif isinstance(e, ev.AgentStep):
            a = self._get(e.subtask_id)
            a.agent_steps += 1
            a.policy = e.policy
        elif isinstance(e, ev.ToolCalled):
            a = self._get(e.subtask_id)
            n = max(1, a.attempts)
            a.tool_calls.append(
                ToolUse(tool=e.tool, step=e.step, ok=e.ok, latency_s=e.latency_s, attempt=n)
            )
        elif isinstance(e, ev.SubtaskFinished):
            a = self._get(e.result.id)
            a.role = a.role or e.result.role
            if a.result is None or a.result.status is not SubtaskStatus.DONE:
                a.result = e.result  # a done result is final, as in the store
        elif isinstance(e, ev.SubtasksSpawned | ev.SpawnRefused):
            self._turn(e)
        elif isinstance(e, ev.AgentTurn):
            self._agent_turn(e)
        elif isinstance(e, ev.RunStarted):
            self.goal = self.goal or e.goal
            self.settings = dict(e.settings)
            self.started_at = e.ts if self.started_at is None else self.started_at
        elif isinstance(e, ev.RunFinished):
            self.status, self.finished_at = e.status.value, e.ts

    def _turn(self, e: ev.SubtasksSpawned | ev.SpawnRefused) -> None:
        index = self.n_turns.get(e.parent_id, 0)
        self.n_turns[e.parent_id] = index + 1
        turn = OrchestratorTurn(subtask_id=e.parent_id, index=index, ts=e.ts)
        if isinstance(e, ev.SpawnRefused):
            turn.refused.append(e.error.message)
        else:
            for s in e.subtasks:
                self.spawned[s.id] = (s.role, s.parent or e.parent_id, list(s.depends_on))
                turn.spawned.append(s.id)
            turn.edges.extend(e.edges)
            self.extra_edges.extend(e.edges)
        self.turns.append(turn)
        self.open_turns.setdefault(e.parent_id, []).append(turn)

    def _agent_turn(self, e: ev.AgentTurn) -> None:
        """A recorded turn. One whose first message is the model's is a decision; one of
        tool results only (what the decision's calls gave) joins the last decision. The
        spawn turns made since the agent's last recorded turn join the decision too."""
        made = self.open_turns.pop(e.subtask_id, [])
        for t in made:
            self.turns.remove(t)
        first = e.messages[0] if e.messages and isinstance(e.messages[0], dict) else None
        own = [t for t in self.turns if t.subtask_id == e.subtask_id and t.message is not None]
        if (first is None or first.get("role") != "assistant") and own:
            turn = own[-1]
        else:
            turn = OrchestratorTurn(
                subtask_id=e.subtask_id, index=0, ts=e.ts, message=first,
                logprobs=[x for x in e.logprobs if isinstance(x, dict)] if e.logprobs else None,
            )  # fmt: skip
            self.turns.append(turn)
        turn.spawned += [k for t in made for k in t.spawned]
        turn.edges += [x for t in made for x in t.edges]
        turn.refused += [r for t in made for r in t.refused]
        indexed = [t for t in self.turns if t.subtask_id == e.subtask_id]
        for i, t in enumerate(indexed):
            t.index = i
        self.n_turns[e.subtask_id] = len(indexed)


def _model_call(e: ev.ModelCalled, attempt: int) -> ModelCall:
    error = f"{e.error.type}: {e.error.message}" if e.error is not None else None
    logprobs = [x for x in e.logprobs if isinstance(x, dict)] if e.logprobs else None
    return ModelCall(
        latency_s=e.latency_s, usage=e.usage, error=error, logprobs=logprobs, attempt=attempt
    )


def _structure(fold: _Fold, plan: Plan | None) -> dict[str, _Spec]:
    """(role, parent, depends_on) of every subtask, in run order (planned, then spawned)."""
    out: dict[str, _Spec] = {}
    if plan is not None:  # the stored plan already holds the spawn edges
        for s in plan.subtasks:
            out[s.id] = (s.role, s.parent, list(s.depends_on))
    for k, spec in fold.spawned.items():
        out.setdefault(k, spec)
    for k, a in fold.acc.items():
        out.setdefault(k, (a.role or "", None, []))
    if plan is None:
        for dep, target in fold.extra_edges:
            role, parent, deps = out.get(target, ("", None, []))
            if dep not in deps:
                out[target] = (role, parent, [*deps, dep])
    return out


def _non_empty(value: Any) -> bool:
    return value is not None and value != "" and value != [] and value != {}


def _episode(k: str, spec: _Spec, a: _Acc | None, *, used: bool, spawner: bool) -> Episode:
    role, parent, deps = spec
    a = a or _Acc()
    r = a.result
    started = a.attempts > 0
    status = r.status.value if r is not None else ("running" if started else NEVER_STARTED)
    steps = (a.agent_steps or max(1, a.calls_last)) if started else 0
    timings = r.timings if r is not None and started else Timings()  # skipped: never ran
    if a.model_calls:
        usage = Usage.total(m.usage for m in a.model_calls)
    else:  # no model_called events (a worker without a model): what the result says
        usage = r.usage if r is not None else Usage()
    return Episode(
        subtask_id=k,
        role=role,
        parent=parent,
        depends_on=deps,
        status=status,
        started=started,
        attempts=a.attempts,
        policy=a.policy,
        steps=steps,
        tool_calls=a.tool_calls,
        model_calls=a.model_calls,
        usage=usage,
        started_at=timings.started_at or a.first_start,
        finished_at=timings.finished_at,
        output_valid=r is not None and r.status is SubtaskStatus.DONE and _non_empty(r.output),
        output_used=used,
        is_orchestrator=role == "orchestrator" or spawner,
    )


def build_trajectory(events: Iterable[ev.Event], *, plan: Plan | None = None) -> Trajectory:
    """Fold a run's events (all sessions, in order) into a `Trajectory`.

    Args:
        events: the run's events, e.g. `RunStore.events(run_id)` or a stream's.
        plan: the stored plan (spawned subtasks included). Without it, the dependencies of
            planned subtasks are unknown (events carry only those of spawned ones).
    """
    fold = _Fold()
    for e in events:
        fold.feed(e)
    structure = _structure(fold, plan)
    edges = [(dep, k) for k, (_, _, deps) in structure.items() for dep in deps]
    done = {k for k, a in fold.acc.items() if a.result and a.result.status is SubtaskStatus.DONE}
    dependents: dict[str, list[str]] = {}
    for dep, target in edges:
        dependents.setdefault(dep, []).append(target)
    spawners = set(fold.n_turns)
    episodes = {}
    for k, spec in structure.items():
        after = dependents.get(k, [])
        used = any(d in done for d in after) if after else k in done
        episodes[k] = _episode(k, spec, fold.acc.get(k), used=used, spawner=k in spawners)
    outputs = {k: fold.acc[k].result.output for k in episodes if k in done}  # type: ignore[union-attr]
    return Trajectory(
        run_id=fold.run_id,
        goal=fold.goal or (plan.goal if plan is not None else ""),
        status=fold.status,
        settings=fold.settings,
        episodes=episodes,
        turns=fold.turns,
        edges=edges,
        outputs=outputs,
        started_at=fold.started_at,
        finished_at=fold.finished_at,
    )


def load_trajectory(run: str, runs_dir: str | Path) -> Trajectory:
    """The trajectory of a stored run (every session of a resumed run).

    Args:
        run: a run id, a unique prefix of one, or `latest`.
        runs_dir: the runs directory the run was stored in.

    Raises:
        ConfigError: `runs_dir` holds no run store.
        RunNotFoundError: no stored run matches `run`.
    """
    from swarm.store import RunStore

    with RunStore(runs_dir, create=False) as store:
        stored = store.load_run(run)
        return build_trajectory(store.events(stored.run_id), plan=stored.plan)


__all__ = [
    "NEVER_STARTED",
    "SCHEMA_VERSION",
    "Episode",
    "ModelCall",
    "OrchestratorTurn",
    "ToolUse",
    "Trajectory",
    "build_trajectory",
    "load_trajectory",
]
