"""`agents.graders`: every registered pipeline's grader is found for its runs (the wide
search's too), a run no pipeline made is scored by its completion, and a stored run is
scored by its pipeline's grader (`score_stored_run`, as `kimmy rewards` and the dashboard
score it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kimmy_swarm.agents.analysis import AnalysisConfig, run_analysis
from kimmy_swarm.agents.graders import grader_for, pipeline_graders, score_stored_run
from kimmy_swarm.agents.orchestrator import SolveConfig, run_solve
from kimmy_swarm.agents.widesearch import ICLR_DEFAULTS, WIDE_TASKS, WideGrader
from kimmy_swarm.rewards.graders import CompletionGrader, PipelineGrader
from kimmy_swarm.rewards.parl import Schedule
from kimmy_swarm.rewards.trajectory import load_trajectory
from kimmy_swarm.swarm import Swarm
from kimmy_swarm.swarm.context import SubtaskContext

PAPERS = Path(__file__).resolve().parents[3] / "shared" / "data" / "papers"
ICLR = PAPERS / "iclr2017_citations_in_2018.json"
needs_papers = pytest.mark.skipif(not ICLR.is_file(), reason="../shared/data/papers is absent")


def test_a_run_of_no_pipeline_is_scored_by_its_completion(tmp_path: Path) -> None:
    async def echo(ctx: SubtaskContext) -> str:
        return ctx.id

    plan = {"subtasks": [{"id": "check:1", "role": "a"}, {"id": "analyze:1", "role": "a"}]}
    with Swarm(runs_dir=tmp_path, roles={"a": echo}) as swarm:
        swarm.run_sync(plan, run_id="x")
    traj = load_trajectory("x", tmp_path)
    # ids that look like a pipeline's are not enough: the outputs must be its schemas'
    assert pipeline_graders(traj) == ()
    grader = grader_for(traj)
    assert isinstance(grader, CompletionGrader) and grader(traj) == 1.0


@needs_papers
def test_a_wide_task_run_is_graded_by_the_wide_grader(tmp_path: Path) -> None:
    """`WideGrader` was left out of the graders: a wide-task run got the completion grader."""
    task = WIDE_TASKS["memory_papers"]
    out = run_solve(
        SolveConfig(goal=task.goal(), out=tmp_path / "o", corpus=ICLR, runs_dir=tmp_path / "r",
                    defaults=ICLR_DEFAULTS)
    )  # fmt: skip
    traj = load_trajectory(out.run_id, tmp_path / "r")
    grader = grader_for(traj)
    assert isinstance(grader, WideGrader) and isinstance(grader, PipelineGrader)
    assert grader.name == "widesearch:memory_papers" and grader(traj) == 1.0
    assert [g.name for g in pipeline_graders(traj)] == ["widesearch:memory_papers"]
    scored = score_stored_run(out.run_id, tmp_path / "r")
    assert scored.breakdown.grader == grader.name and scored.breakdown.r_result == 1.0
    assert scored.parts["truth_rows"] == scored.parts["correct_rows"] > 0


def test_a_stored_run_is_scored_by_its_pipelines_grader(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    outcome = run_analysis(AnalysisConfig(["statsmodels:longley"], out=tmp_path, runs_dir=runs))
    scored = score_stored_run("latest", runs, step=500, schedule=Schedule(kind="constant"))
    assert scored.trajectory.run_id == outcome.run_id and scored.plan.subtasks[0].id == "plan"
    b = scored.breakdown
    assert b.grader == "analysis" and b.lambda1 == 1.0  # constant: no annealing
    assert set(scored.parts) == {"verified", "answered", "numbers", "verified_numbers"}
    assert b.r_result == grader_for(scored.trajectory)(scored.trajectory)


@needs_papers
def test_a_suite_goal_in_words_is_graded_by_its_task(tmp_path: Path) -> None:
    """A run given a suite goal's words (not `task.goal()`) got the completion grader."""
    from kimmy_swarm.agents.widesearch import WIDE_SUITE

    goal = WIDE_SUITE["dropout_citations"]
    out = run_solve(
        SolveConfig(goal=goal.words, out=tmp_path / "o", corpus=ICLR, runs_dir=tmp_path / "r",
                    defaults=ICLR_DEFAULTS)
    )  # fmt: skip
    traj = load_trajectory(out.run_id, tmp_path / "r")
    grader = grader_for(traj)
    assert isinstance(grader, WideGrader) and grader.name == "widesearch:dropout_citations"
    assert grader(traj) == 1.0 and grader.parts(traj)["truth_rows"] == 13
