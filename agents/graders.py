"""The pipelines' graders, the grader for a run (`grader_for(traj)`), and a stored run scored
by it (`score_stored_run`).

`rewards` scores any run but knows no pipeline; each pipeline's grader lives beside it and
the pipeline says which of its runs it grades (`Pipeline.grader`). This module asks every
registered pipeline (`agents.pipelines`), so a caller that wants a run scored by its own
pipeline's grader (`kimmy rewards`, the dashboard, benchmarks) asks here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kimmy_swarm.agents.pipelines import pipelines
from kimmy_swarm.rewards import graders

if TYPE_CHECKING:
    from kimmy_swarm.rewards.graders import Grader, PipelineGrader
    from kimmy_swarm.rewards.parl import RewardBreakdown, Schedule
    from kimmy_swarm.rewards.trajectory import Trajectory
    from kimmy_swarm.swarm.schema import Plan


def pipeline_graders(traj: Trajectory) -> tuple[PipelineGrader, ...]:
    """The graders of the registered pipelines that grade `traj`, in registration order."""
    found = (p.grader(traj) for p in pipelines().values())
    return tuple(g for g in found if g is not None)


def grader_for(traj: Trajectory) -> Grader:
    """The grader of the pipeline that made the run, else `CompletionGrader`."""
    return graders.grader_for(traj, pipeline_graders(traj))


@dataclass(frozen=True)
class StoredRunScore:
    """A stored run scored by its pipeline's grader.

    Attributes:
        trajectory: the run as PARL sees it.
        plan: the run's stored plan.
        breakdown: every PARL term, the λs and the total.
        parts: the grader's sub-scores (precision, coverage, …) when it reports them.
    """

    trajectory: Trajectory
    plan: Plan
    breakdown: RewardBreakdown
    parts: dict[str, float]


def score_stored_run(
    run_id: str,
    runs_dir: Path,
    *,
    step: int = 0,
    schedule: Schedule | None = None,
    width: int = 64,
) -> StoredRunScore:
    """Load a stored run and score it with its pipeline's grader (`grader_for`).

    Args:
        run_id: the run's id, a unique prefix, or `latest`.
        step: the training step the λs are read at.
        schedule: how λ1 and λ2 anneal (None: linear over 1,000 steps).
        width: the number of sub-agents where r_inst saturates.

    Raises:
        RunNotFoundError: no such run.
    """
    from kimmy_swarm.rewards.parl import Schedule, score
    from kimmy_swarm.rewards.trajectory import build_trajectory
    from kimmy_swarm.swarm.store import RunStore

    with RunStore(runs_dir, create=False) as store:
        stored = store.load_run(run_id)
        traj = build_trajectory(store.events(stored.run_id), plan=stored.plan)
    sched = schedule if schedule is not None else Schedule(kind="linear", total_steps=1000)
    grader = grader_for(traj)
    breakdown = score(traj, grader, step=step, lambda1=sched, lambda2=sched, width=width)
    parts = getattr(grader, "parts", None)
    found = dict(parts(traj)) if callable(parts) else {}
    return StoredRunScore(traj, stored.plan, breakdown, found)


__all__ = ["StoredRunScore", "grader_for", "pipeline_graders", "score_stored_run"]
