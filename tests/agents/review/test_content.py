"""`agents.review.content`: a review run's content, gathered once for the renderers — the
sections in the plan's theme order, the fact-checks by claim, the prose (the offline
synthesis when the synthesizer failed), and what did not finish."""

from __future__ import annotations

from typing import Any

from kimmy_swarm.agents.pipeline import subtask_problems
from kimmy_swarm.agents.review.content import ReviewContent, gather
from kimmy_swarm.agents.review.schemas import PLAN_ID, SYNTHESIZE_ID, write_id
from kimmy_swarm.swarm.schema import ErrorInfo, RunResult, SubtaskStatus


def _failed(result: RunResult, subtask_id: str) -> RunResult:
    done = result.results[subtask_id]
    failed = done.model_copy(
        update={"status": SubtaskStatus.FAILED, "output": None,
                "error": ErrorInfo(type="ModelBehaviourError", message="bad answer")}
    )  # fmt: skip
    return result.model_copy(update={"results": {**result.results, subtask_id: failed}})


def test_gather_reads_the_run_by_the_reviews_ids(notes_review: Any) -> None:
    result, corpus = notes_review.result, notes_review.resources.corpus
    assert corpus is not None
    content = gather(result, "linear attention", corpus)
    assert isinstance(content, ReviewContent) and content.plan is not None
    assert [s.theme_id for s in content.sections] == [t.id for t in content.plan.themes]
    claims = {c.id for s in content.sections for c in s.claims}
    assert set(content.checks) == claims and claims
    assert content.prose.title == result.outputs[SYNTHESIZE_ID]["title"]
    assert content.problems == [] and content.fallbacks == {}


def test_what_did_not_finish_is_a_problem_and_the_prose_is_composed(
    notes_review: Any,
) -> None:
    corpus = notes_review.resources.corpus
    assert corpus is not None
    content = gather(notes_review.result, "linear attention", corpus)
    theme = content.sections[0].theme_id
    broken = _failed(_failed(notes_review.result, SYNTHESIZE_ID), write_id(theme))
    partial = gather(broken, "linear attention", corpus)
    assert (
        partial.problems[:2]
        == subtask_problems(broken)
        == [
            f"{write_id(theme)} (writer) failed: bad answer",
            f"{SYNTHESIZE_ID} (synthesizer) failed: bad answer",
        ]
    )
    assert [s.theme_id for s in partial.sections] == [s.theme_id for s in content.sections[1:]]
    assert partial.prose.title  # the offline synthesis stands in for the synthesizer's
    no_plan = gather(_failed(broken, PLAN_ID), "linear attention", corpus)
    assert no_plan.plan is None and no_plan.sections == []
