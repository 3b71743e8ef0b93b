"""`agents.graders`: the pipelines' graders in the order they are tried, and the fallback
for a run no pipeline made."""

from __future__ import annotations

from pathlib import Path

from agents.analysis.grader import AnalysisGrader
from agents.graders import grader_for, pipeline_graders
from agents.review.grader import ReviewGrader
from rewards.graders import CompletionGrader, PipelineGrader
from rewards.trajectory import load_trajectory
from swarm import Swarm
from swarm.context import SubtaskContext


def test_one_grader_per_pipeline_review_first() -> None:
    graders = pipeline_graders()
    assert [type(g) for g in graders] == [ReviewGrader, AnalysisGrader]
    assert all(isinstance(g, PipelineGrader) for g in graders)
    assert [g.name for g in graders] == ["review", "analysis"]


def test_a_run_of_no_pipeline_is_scored_by_its_completion(tmp_path: Path) -> None:
    async def echo(ctx: SubtaskContext) -> str:
        return ctx.id

    plan = {"subtasks": [{"id": "check:1", "role": "a"}, {"id": "analyze:1", "role": "a"}]}
    with Swarm(runs_dir=tmp_path, roles={"a": echo}) as swarm:
        swarm.run_sync(plan, run_id="x")
    traj = load_trajectory("x", tmp_path)
    # ids that look like a pipeline's are not enough: the outputs must be its schemas'
    assert not any(g.applies(traj) for g in pipeline_graders())
    grader = grader_for(traj)
    assert isinstance(grader, CompletionGrader) and grader(traj) == 1.0
