"""Folding a run's event stream, in order, into what `rewards.trajectory` builds from: per
subtask accumulators (attempts, steps, calls, result), the spawns, and the orchestrators'
decisions (spawn calls, or the turns an agent recorded)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kimmy_swarm.rewards.trajectory_models import ModelCall, OrchestratorTurn, ToolUse
from kimmy_swarm.swarm import events as ev
from kimmy_swarm.swarm.event_fold import EventFold
from kimmy_swarm.swarm.schema import RunStatus, SubtaskResult, SubtaskStatus

#: (role, parent, depends_on) of one subtask.
Spec = tuple[str, str | None, list[str]]


@dataclass(slots=True)
class Acc:
    """What the events say about one subtask, accumulated in stream order."""

    role: str | None = None
    attempts: int = 0
    agent_steps: int = 0  # of the last attempt
    calls_last: int = 0  # model calls of the last attempt
    policy: str | None = None
    fell_back: bool = False  # the last attempt's model failed; its offline procedure ran
    first_start: float | None = None
    model_calls: list[ModelCall] = field(default_factory=list)
    tool_calls: list[ToolUse] = field(default_factory=list)
    result: SubtaskResult | None = None
    #: The messages before the first assistant message of the first call whose transcript
    #: holds the whole conversation (None: no such call was recorded).
    opening: list[dict[str, Any]] | None = None


@dataclass
class Fold(EventFold):
    """Folds an event stream into per-subtask accumulators, spawns and run facts."""

    acc: dict[str, Acc] = field(default_factory=dict)
    spawned: dict[str, Spec] = field(default_factory=dict)
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

    def _get(self, subtask_id: str) -> Acc:
        a = self.acc.get(subtask_id)
        if a is None:
            a = self.acc[subtask_id] = Acc()
        return a

    def handle(self, e: ev.Event) -> None:
        """Fold one event in (the run id is the first event's)."""
        self.run_id = self.run_id or e.run_id
        super().handle(e)

    def on_subtask_started(self, e: ev.SubtaskStarted) -> None:
        a = self._get(e.subtask_id)
        a.role, a.attempts = e.role, a.attempts + 1
        a.agent_steps = a.calls_last = 0
        a.fell_back = False
        a.first_start = e.ts if a.first_start is None else a.first_start

    def on_model_called(self, e: ev.ModelCalled) -> None:
        a = self._get(e.subtask_id)
        a.calls_last += 1
        a.model_calls.append(model_call(e, max(1, a.attempts)))
        if a.opening is None and e.messages is not None and e.first_message == 0:
            a.opening = opening(e.messages)

    def on_agent_step(self, e: ev.AgentStep) -> None:
        a = self._get(e.subtask_id)
        a.agent_steps += 1
        a.policy = e.policy
        a.fell_back = a.fell_back or e.outcome == "fallback"

    def on_tool_called(self, e: ev.ToolCalled) -> None:
        a = self._get(e.subtask_id)
        n = max(1, a.attempts)
        a.tool_calls.append(
            ToolUse(tool=e.tool, step=e.step, ok=e.ok, latency_s=e.latency_s, attempt=n)
        )

    def on_subtask_finished(self, e: ev.SubtaskFinished) -> None:
        a = self._get(e.result.id)
        a.role = a.role or e.result.role
        if a.result is None or a.result.status is not SubtaskStatus.DONE:
            a.result = e.result  # a done result is final, as in the store

    def on_subtasks_spawned(self, e: ev.SubtasksSpawned) -> None:
        self._turn(e)

    def on_spawn_refused(self, e: ev.SpawnRefused) -> None:
        self._turn(e)

    def on_agent_turn(self, e: ev.AgentTurn) -> None:
        self._agent_turn(e)

    def on_run_started(self, e: ev.RunStarted) -> None:
        self.goal = self.goal or e.goal
        self.settings = dict(e.settings)
        self.started_at = e.ts if self.started_at is None else self.started_at

    def on_run_finished(self, e: ev.RunFinished) -> None:
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
        messages = [m for m in e.messages if isinstance(m, dict)]
        if (first is None or first.get("role") != "assistant") and own:
            turn = own[-1]
            turn.results += messages
        else:
            turn = OrchestratorTurn(
                subtask_id=e.subtask_id, index=0, ts=e.ts, message=first,
                logprobs=[x for x in e.logprobs if isinstance(x, dict)] if e.logprobs else None,
                results=messages[1:] if first is not None else messages,
            )  # fmt: skip
            self.turns.append(turn)
        turn.spawned += [k for t in made for k in t.spawned]
        turn.edges += [x for t in made for x in t.edges]
        turn.refused += [r for t in made for r in t.refused]
        indexed = [t for t in self.turns if t.subtask_id == e.subtask_id]
        for i, t in enumerate(indexed):
            t.index = i
        self.n_turns[e.subtask_id] = len(indexed)


def opening(messages: list[Any]) -> list[dict[str, Any]]:
    """The messages of a transcript before its first assistant message."""
    out = []
    for m in messages:
        if not isinstance(m, dict) or m.get("role") == "assistant":
            break
        out.append(m)
    return out


def model_call(e: ev.ModelCalled, attempt: int) -> ModelCall:
    error = f"{e.error.type}: {e.error.message}" if e.error is not None else None
    logprobs = [x for x in e.logprobs if isinstance(x, dict)] if e.logprobs else None
    return ModelCall(
        latency_s=e.latency_s, usage=e.usage, error=error, logprobs=logprobs, attempt=attempt
    )


__all__ = ["Acc", "Fold", "Spec", "model_call", "opening"]
