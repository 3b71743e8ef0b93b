"""The pipelines' graders, and the grader for a run: `grader_for(traj)`.

`rewards` scores any run but knows no pipeline; each pipeline's grader lives beside it
(`agents.review.grader`, `agents.analysis.grader`) and is listed here, so a caller that wants
a run scored by its own pipeline's grader (`kimmy rewards`, benchmarks) asks this module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agents.analysis.grader import AnalysisGrader
from agents.review.grader import ReviewGrader
from rewards import graders

if TYPE_CHECKING:
    from rewards.graders import Grader, PipelineGrader
    from rewards.trajectory import Trajectory


def pipeline_graders() -> tuple[PipelineGrader, ...]:
    """One grader per pipeline, in the order they are tried (review before analysis)."""
    return (ReviewGrader(), AnalysisGrader())


def grader_for(traj: Trajectory) -> Grader:
    """The grader of the pipeline that made the run, else `CompletionGrader`."""
    return graders.grader_for(traj, pipeline_graders())


__all__ = ["grader_for", "pipeline_graders"]
