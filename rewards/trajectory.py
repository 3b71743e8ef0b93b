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
from pathlib import Path
from typing import Any

from kimmy_swarm.rewards.event_fold import Acc, Fold, Spec
from kimmy_swarm.rewards.trajectory_models import (
    NEVER_STARTED,
    SCHEMA_VERSION,
    Episode,
    ModelCall,
    OrchestratorTurn,
    ToolUse,
    Trajectory,
)
from kimmy_swarm.swarm import events as ev
from kimmy_swarm.swarm.schema import Plan, SubtaskStatus, Timings, Usage


def _structure(fold: Fold, plan: Plan | None) -> dict[str, Spec]:
    """(role, parent, depends_on) of every subtask, in run order (planned, then spawned)."""
    out: dict[str, Spec] = {}
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


def _episode(k: str, spec: Spec, a: Acc | None, *, used: bool, spawner: bool) -> Episode:
    role, parent, deps = spec
    a = a or Acc()
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
        fell_back=a.fell_back,
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
    fold = Fold()
    for e in events:
        fold.handle(e)
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
    recording = {t.subtask_id for t in fold.turns if t.message is not None}
    openings = {
        k: list(opening)
        for k in sorted(recording)
        if k in fold.acc and (opening := fold.acc[k].opening) is not None
    }
    return Trajectory(
        run_id=fold.run_id,
        goal=fold.goal or (plan.goal if plan is not None else ""),
        status=fold.status,
        settings=fold.settings,
        episodes=episodes,
        turns=fold.turns,
        openings=openings,
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
    from kimmy_swarm.swarm.store import RunStore

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
