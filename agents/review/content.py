"""`ReviewContent`: what a review run produced, gathered once from its results, for the
renderers (`markdown`: review.md, references.bib, claims.jsonl; `report`: report.html).

A claim is part of the content with its fact-check; the renderers decide what is shown
(a claim appears in the review only when its check says `supported`). What did not finish
is in `problems`; sections missing from the run are missing here, and the prose is the
offline synthesis when the synthesizer's is missing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kimmy_swarm.agents.fallback import fallbacks
from kimmy_swarm.agents.pipeline import subtask_problems
from kimmy_swarm.agents.review.procedures import compose_prose, upstream_checks
from kimmy_swarm.agents.review.schemas import (
    PLAN_ID,
    SYNTHESIZE_ID,
    ClaimCheck,
    ReviewPlan,
    ReviewProse,
    Section,
    write_id,
)

if TYPE_CHECKING:
    from kimmy_swarm.agents.tools.corpus import Corpus
    from kimmy_swarm.swarm import RunResult


@dataclass
class ReviewContent:
    """The plan, the sections in the plan's theme order, the fact-checks by claim id, the
    prose, and what went wrong."""

    plan: ReviewPlan | None
    sections: list[Section]
    checks: dict[str, ClaimCheck]
    prose: ReviewProse
    problems: list[str]
    #: Subtasks the offline procedure did after the model failed them, with its error.
    fallbacks: dict[str, str] = field(default_factory=dict)

    @property
    def year_labels(self) -> dict[str, str]:
        """The letter each document is cited with where another is cited alike ("a")."""
        return dict(self.plan.year_labels) if self.plan is not None else {}


def gather(result: RunResult, topic: str, corpus: Corpus) -> ReviewContent:
    """The content of a review run (its subtasks by the review's ids)."""
    outputs = result.outputs
    problems = subtask_problems(result)
    plan = ReviewPlan.model_validate(outputs[PLAN_ID]) if outputs.get(PLAN_ID) else None
    if plan is not None:
        problems.extend(plan.notes)
    order = [write_id(t.id) for t in plan.themes] if plan is not None else []
    sections = [Section.model_validate(outputs[w]) for w in order if outputs.get(w)]
    checks = {c.claim_id: c for c in upstream_checks(outputs)}
    if outputs.get(SYNTHESIZE_ID):
        prose = ReviewProse.model_validate(outputs[SYNTHESIZE_ID])
    else:
        prose = compose_prose(topic, len(corpus), sections, list(checks.values()))
    return ReviewContent(plan, sections, checks, prose, problems, fallbacks(outputs))


__all__ = ["ReviewContent", "gather"]
