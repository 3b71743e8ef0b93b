"""`AnalysisGrader`: r_result of a batch data analysis, read through the analysis's own schemas.

It lives beside the pipeline (not in `rewards`) so that it finds the analysts and the
fact-checkers by the pipeline's id helpers and reads their outputs with the pipeline's output
models: renaming a subtask or a field changes the grader with it instead of silently
scoring 0.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kimmy_swarm.agents.analysis.schemas import (
    DatasetAnalysis,
    FindingChecks,
    is_analyze_id,
    is_check_id,
)
from kimmy_swarm.rewards.graders import outputs_as

if TYPE_CHECKING:
    from kimmy_swarm.rewards.trajectory import Trajectory


def analyses(traj: Trajectory) -> dict[str, DatasetAnalysis]:
    """The analysts' outputs of the run, by subtask id."""
    return outputs_as(traj, DatasetAnalysis, is_analyze_id)


def finding_checks(traj: Trajectory) -> dict[str, FindingChecks]:
    """The fact-checkers' outputs of the run, by subtask id."""
    return outputs_as(traj, FindingChecks, is_check_id)


class AnalysisGrader:
    """Verified numbers and answered questions of a data analysis, averaged.

    verified = numbers the fact-checkers recomputed and confirmed (`FindingChecks` verdicts
    `verified`) / numbers the analysts reported (`DatasetAnalysis` findings; a number whose
    check never ran counts as unverified); answered = analyst sub-agents whose output says
    `answered` / all analyst sub-agents (failed ones included) but those whose question does
    not apply to their dataset (`applicable` False: it is about another dataset of the run).
    """

    name = "analysis"

    def applies(self, traj: Trajectory) -> bool:
        """An analysis run: it has an analyst's or a fact-checker's output."""
        return bool(finding_checks(traj) or analyses(traj))

    def parts(self, traj: Trajectory) -> dict[str, float]:
        """verified, answered, numbers and verified_numbers, for reports."""
        done = analyses(traj)
        reported = sum(len(a.findings) for a in done.values())
        verdicts = [v for c in finding_checks(traj).values() for v in c.verdicts]
        confirmed = sum(v.verdict == "verified" for v in verdicts)
        denominator = max(reported, len(verdicts))
        tasks = [
            k for k in traj.episodes if is_analyze_id(k) and (k not in done or done[k].applicable)
        ]
        answered = sum(k in done and done[k].answered for k in tasks)
        return {
            "verified": confirmed / denominator if denominator else 0.0,
            "answered": answered / len(tasks) if tasks else 0.0,
            "numbers": float(reported),
            "verified_numbers": float(confirmed),
        }

    def __call__(self, traj: Trajectory) -> float:
        p = self.parts(traj)
        return (p["verified"] + p["answered"]) / 2


__all__ = ["AnalysisGrader", "analyses", "finding_checks"]
