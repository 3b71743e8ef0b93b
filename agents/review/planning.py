"""How a review is planned: the subtasks of a plan (`decompose`), the first subtask of a run
of its own (`initial_plan`; its planner spawns the rest), and the orchestrator's offline
rules (`ReviewRules`; the orchestrator assigns the same subtasks)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kimmy_swarm.agents.pipeline import assign_call, failure_reason, seen_results
from kimmy_swarm.agents.review.markdown import review_markdown
from kimmy_swarm.agents.review.schemas import (
    PLAN_ID,
    SYNTHESIZE_ID,
    ReviewPlan,
    check_id,
    read_id,
    write_id,
)
from kimmy_swarm.swarm.schema import Plan, Subtask

if TYPE_CHECKING:
    from kimmy_swarm.agents.loop import Call
    from kimmy_swarm.agents.pipeline import Orchestration
    from kimmy_swarm.agents.review.config import ReviewConfig
    from kimmy_swarm.agents.subagent import SubAgent
    from kimmy_swarm.agents.tools.corpus import Corpus
    from kimmy_swarm.swarm import SubtaskContext, Worker

#: The role of the review's planner (subtask `plan`).
PLANNER = "planner"


def decompose(plan: ReviewPlan, corpus_size: int, researcher: str = "researcher") -> list[Subtask]:
    """The subtasks that carry out a review plan (spawned by the planner, or assigned by the
    orchestrator)."""
    topic = plan.topic
    subtasks: list[Subtask] = []
    theme_terms = {d: t.terms[:4] for t in plan.themes for d in t.doc_ids}
    for doc_id in plan.relevant:
        subtasks.append(
            Subtask(
                id=read_id(doc_id),
                role=researcher,
                instructions=(
                    f"Read document {doc_id!r} and report its contribution and up to 3 key "
                    f"findings relevant to {topic!r}, each with its passage quoted word for word."
                ),
                inputs={
                    "doc_id": doc_id,
                    "topic": topic,
                    "theme_terms": theme_terms.get(doc_id, []),
                    "year_label": plan.year_labels.get(doc_id, ""),
                },
            )
        )
    for theme in plan.themes:
        subtasks.append(
            Subtask(
                id=write_id(theme.id),
                role="writer",
                instructions=(
                    f"Write the section on the theme {theme.label!r}: a summary, claims that "
                    "each cite the doc_id they come from (only this theme's documents), and a "
                    "comparison row per document."
                ),
                inputs={
                    "theme_id": theme.id,
                    "label": theme.label,
                    "terms": theme.terms,
                    "doc_ids": theme.doc_ids,
                    "topic": topic,
                },
                depends_on=[read_id(d) for d in theme.doc_ids],
            )
        )
        subtasks.append(
            Subtask(
                id=check_id(theme.id),
                role="fact_checker",
                instructions=(
                    "Check every claim of the upstream section against each document it cites "
                    "(check_claim); quote the supporting passage word for word."
                ),
                inputs={
                    "theme_id": theme.id,
                    # the letters that tell apart papers cited alike ("Li et al. (2017a)")
                    "year_labels": {
                        d: plan.year_labels[d] for d in theme.doc_ids if d in plan.year_labels
                    },
                },
                depends_on=[write_id(theme.id)],
            )
        )
    subtasks.append(
        Subtask(
            id=SYNTHESIZE_ID,
            role="synthesizer",
            instructions=(
                "Write the review's title, introduction, one summary per theme (by theme id) and "
                "a conclusion from the checked sections. Add no new claims."
            ),
            inputs={"topic": topic, "corpus_size": corpus_size},
            # the notes too: the names its prose may cite (`checks.check_prose`)
            depends_on=[PLAN_ID]
            + [read_id(d) for d in plan.relevant]
            + [write_id(t.id) for t in plan.themes]
            + [check_id(t.id) for t in plan.themes],
        )
    )
    return subtasks


def spawning_planner(planner: SubAgent, corpus_size: int, researcher: str) -> Worker:
    """The planner of a review run of its own: it answers the plan, then spawns its subtasks."""

    async def orchestrate(ctx: SubtaskContext) -> ReviewPlan:
        plan = ReviewPlan.model_validate(await planner(ctx))
        ctx.spawn(decompose(plan, corpus_size, researcher))
        return plan

    return orchestrate


def initial_plan(config: ReviewConfig, corpus: Corpus) -> Plan:
    """The planner's subtask; it spawns the rest (`decompose`)."""
    return Plan(
        goal=f"literature review: {config.topic}",
        subtasks=[
            Subtask(
                id=PLAN_ID,
                role=PLANNER,
                instructions=(
                    f"Find the documents relevant to {config.topic!r} with search_corpus "
                    f"(at most {config.max_papers}), then group them into themes with "
                    "find_themes. Answer with the plan."
                ),
                inputs={
                    "topic": config.topic,
                    "max_papers": config.max_papers,
                    "themes": config.themes,
                    "corpus_size": len(corpus),
                    "doc_ids": [] if config.topic.strip() else corpus.ids[: config.max_papers],
                },
            )
        ],
    )


@dataclass
class ReviewRules:
    """The literature review, planned offline by the review's own rules: the planner (search
    and themes), then the subtasks of its plan (`decompose`), then the review as the answer."""

    corpus: Corpus
    topic: str
    max_papers: int = 200
    researcher: str = "researcher"

    async def calls(self, ctx: SubtaskContext, progress: Orchestration) -> list[Call]:
        """Assign the planner and wait; then assign its plan's subtasks and wait; then
        finish with the review as Markdown."""
        tasks = progress.state.tasks
        if not tasks:
            task = (
                f"Find the documents relevant to {self.topic!r} (at most {self.max_papers}) and "
                "group them into themes. Answer with the plan."
            )
            inputs = {
                "topic": self.topic, "max_papers": self.max_papers, "themes": None,
                "corpus_size": len(self.corpus), "doc_ids": [],
            }  # fmt: skip
            assign = {"agent": PLANNER, "task": task, "inputs": inputs, "id": PLAN_ID}
            return [("assign_task", assign), ("wait", {"ids": [PLAN_ID]})]
        if len(tasks) == 1:
            result = await progress.result_of(PLAN_ID)
            if result is None or result.output is None:
                why = failure_reason(result)
                return [("finish", {"answer": f"No review: the plan failed ({why})."})]
            plan = ReviewPlan.model_validate(result.output)
            subtasks = decompose(plan, len(self.corpus), self.researcher)
            return [*map(assign_call, subtasks), ("wait", {"ids": "all"})]
        answer = review_markdown(seen_results(ctx, progress), self.corpus, topic=self.topic)
        return [("finish", {"answer": answer})]


_VERBS = ("review", "survey", "summarize", "summarise", "overview", "literature review")


_REVIEW_WORDS = re.compile(
    r"\b(?:review|reviews|survey|surveys|summari[sz]e|summary|overview|literature|"
    r"state[-\s]of[-\s]the[-\s]art|related\s+work)\b",
    re.IGNORECASE,
)


def asks_for_review(goal: str) -> bool:
    """Whether `goal` asks for a review of the literature ("Review …", "Survey …", "an
    overview of …", "summarize the literature on …") — what the offline review plans."""
    return bool(_REVIEW_WORDS.search(goal))


def review_topic(goal: str) -> str:
    """The topic of a review goal: the goal without a leading verb like "Review"."""
    text = goal.strip().rstrip(".")
    lowered = text.lower()
    for verb in sorted(_VERBS, key=len, reverse=True):
        if lowered.startswith(verb + " "):
            text = text[len(verb) + 1 :].strip()
            for article in ("of ", "the "):
                if text.lower().startswith(article):
                    text = text[len(article) :]
            break
    return text


__all__ = [
    "PLANNER",
    "ReviewRules",
    "asks_for_review",
    "decompose",
    "initial_plan",
    "review_topic",
    "spawning_planner",
]
