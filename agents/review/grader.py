"""`ReviewGrader`: r_result of a literature review, read through the review's own schemas.

It lives beside the pipeline (not in `rewards`) so that it finds the fact-checks by the
pipeline's id helpers and reads them with the pipeline's output models: renaming a subtask
or a field changes the grader with it instead of silently scoring 0.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kimmy_swarm.agents.review.schemas import (
    PLAN_ID,
    ReviewPlan,
    SectionCheck,
    is_check_id,
    theme_of_check,
)
from kimmy_swarm.rewards.graders import outputs_as

if TYPE_CHECKING:
    from kimmy_swarm.rewards.trajectory import Trajectory


def section_checks(traj: Trajectory) -> dict[str, SectionCheck]:
    """The fact-checkers' outputs of the run, by subtask id."""
    return outputs_as(traj, SectionCheck, is_check_id)


def plan_themes(traj: Trajectory) -> set[str]:
    """Theme ids of the planner's plan (empty when the plan did not finish)."""
    plans = outputs_as(traj, ReviewPlan, lambda k: k == PLAN_ID)
    return {t.id for p in plans.values() for t in p.themes}


def _theme(subtask_id: str, section: SectionCheck) -> str:
    return section.theme_id or theme_of_check(subtask_id)


class ReviewGrader:
    """Citation precision and theme coverage of a literature review, averaged.

    precision = supported claims / all checked claims (the fact-checkers' `SectionCheck`s);
    coverage = the plan's themes with >= 1 supported claim / the plan's themes (the checked
    themes when the plan is missing). The score is 0 when no claim was checked.
    """

    name = "review"

    def applies(self, traj: Trajectory) -> bool:
        """A review run: it has a review plan with themes or a fact-checked section."""
        return bool(plan_themes(traj) or section_checks(traj))

    def parts(self, traj: Trajectory) -> dict[str, float]:
        """precision, coverage, claims and supported, for reports."""
        checks = section_checks(traj)
        claims = supported = 0
        covered: set[str] = set()
        for k, section in checks.items():
            for c in section.checks:
                claims += 1
                if c.verdict == "supported":
                    supported += 1
                    covered.add(_theme(k, section))
        themes = plan_themes(traj) or {_theme(k, s) for k, s in checks.items()}
        return {
            "precision": supported / claims if claims else 0.0,
            "coverage": len(covered & themes) / len(themes) if themes else 0.0,
            "claims": float(claims),
            "supported": float(supported),
        }

    def __call__(self, traj: Trajectory) -> float:
        p = self.parts(traj)
        return (p["precision"] + p["coverage"]) / 2 if p["claims"] else 0.0


__all__ = ["ReviewGrader", "plan_themes", "section_checks"]
