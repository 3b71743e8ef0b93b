"""The rule-based planner: the orchestrator's offline policy, behind the same interface.

It answers each turn with the tool calls a competent orchestrator would make for the
goals it knows how to plan without a model — and the run then looks like any other:
assignments through the spawn path, waits, a finish, every turn recorded.

- a corpus: the literature review — the review's planner (search + themes), then one
  researcher per relevant document, a writer and a fact-checker per theme, a synthesizer;
  the answer is the review.
- datasets: the batch analysis — the analysis planner, then an analyst and a fact-checker
  per (dataset, question), the report and the summary; the answer is the report.
- a wide task's goal over the paper corpus: extractors over slices of the corpus; the
  answer is the merged table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agents.loop import Call, calls_response
from swarm.errors import ConfigError
from swarm.llm.types import ChatResponse
from swarm.schema import RunResult, RunStatus

if TYPE_CHECKING:
    from agents.orchestrator.actions import Actions
    from agents.tools.corpus import Corpus
    from agents.widesearch.task import WideTask
    from swarm.context import SubtaskContext

NO_OFFLINE_PLAN = (
    "this goal needs a model to plan it: give one (--base-url URL [--model NAME], "
    "--local MODEL_DIR or --tiny; Python: SolveConfig(model=...)), or give --corpus PATH "
    "(a literature review) or --data DATASET (a data analysis), which plan offline"
)

#: Papers per extractor of a wide task (the corpus is split into slices of this size).
WIDE_SLICE = 5


def _assign(subtask: Any) -> Call:
    return (
        "assign_task",
        {
            "agent": subtask.role, "task": subtask.instructions, "inputs": subtask.inputs,
            "depends_on": list(subtask.depends_on), "id": subtask.id,
        },
    )  # fmt: skip


def _results(ctx: SubtaskContext, actions: Actions) -> RunResult:
    """What the orchestrator has seen, as a run result of its tasks (ids as assigned)."""
    return RunResult(
        run_id=ctx.run_id, goal="", status=RunStatus.COMPLETED, results=dict(actions.seen)
    )


@dataclass
class ReviewRules:
    """The literature review, planned by the review's own rules."""

    corpus: Corpus
    topic: str
    max_papers: int = 200
    researcher: str = "researcher"

    async def calls(self, ctx: SubtaskContext, actions: Actions) -> list[Call]:
        from agents.review.pipeline import decompose
        from agents.review.schemas import PLAN_ID, ReviewPlan

        tasks = actions.state.tasks
        if not tasks:
            task = (
                f"Find the documents relevant to {self.topic!r} (at most {self.max_papers}) and "
                "group them into themes. Answer with the plan."
            )
            inputs = {
                "topic": self.topic, "max_papers": self.max_papers, "themes": None,
                "corpus_size": len(self.corpus), "doc_ids": [],
            }  # fmt: skip
            assign = {"agent": "review_planner", "task": task, "inputs": inputs, "id": PLAN_ID}
            return [("assign_task", assign), ("wait", {"ids": [PLAN_ID]})]
        if len(tasks) == 1:
            result = await actions.result_of(PLAN_ID)
            if result is None or result.output is None:
                return [("finish", {"answer": f"No review: the plan failed ({_why(result)})."})]
            plan = ReviewPlan.model_validate(result.output)
            subtasks = decompose(plan, len(self.corpus), self.researcher)
            return [*map(_assign, subtasks), ("wait", {"ids": "all"})]
        from agents.review.outputs import review_markdown

        answer = review_markdown(_results(ctx, actions), self.corpus, topic=self.topic)
        return [("finish", {"answer": answer})]


@dataclass
class AnalysisRules:
    """The batch analysis, planned by the analysis's own rules."""

    datasets: Sequence[str]
    questions: Sequence[str] = ()

    async def calls(self, ctx: SubtaskContext, actions: Actions) -> list[Call]:
        from agents.analysis.schemas import PLAN_ID, SUMMARIZE_ID, AnalysisPlan
        from agents.analysis.workers import analysis_subtasks

        tasks = actions.state.tasks
        if not tasks:
            inputs = {"datasets": list(self.datasets), "questions": list(self.questions)}
            task = "Plan one analysis per (dataset, question)."
            assign = {"agent": "analysis_planner", "task": task, "inputs": inputs, "id": PLAN_ID}
            return [("assign_task", assign), ("wait", {"ids": [PLAN_ID]})]
        if len(tasks) == 1:
            result = await actions.result_of(PLAN_ID)
            if result is None or result.output is None:
                return [("finish", {"answer": f"No analysis: the plan failed ({_why(result)})."})]
            plan = AnalysisPlan.model_validate(result.output)
            return [*map(_assign, analysis_subtasks(plan)), ("wait", {"ids": "all"})]
        summary = await actions.result_of(SUMMARIZE_ID)
        if summary is not None and isinstance(summary.output, dict):
            answer = str(summary.output.get("markdown") or "")
        else:
            answer = f"The summary failed ({_why(summary)}); see report.md."
        return [("finish", {"answer": answer or "The analysis produced no summary."})]


@dataclass
class WideRules:
    """A wide task: one extractor per slice of the corpus, then the merged table."""

    task: WideTask
    documents: Sequence[str]
    slice_size: int = WIDE_SLICE

    async def calls(self, ctx: SubtaskContext, actions: Actions) -> list[Call]:
        from agents.widesearch.answer import rows_markdown

        if not actions.state.tasks:
            docs = list(self.documents)
            slices = [docs[i : i + self.slice_size] for i in range(0, len(docs), self.slice_size)]
            spec = self.task.model_dump(mode="json")
            inputs_list = [{"doc_ids": s, "task": spec} for s in slices]
            job = "Report the row of every paper of your documents that meets the task."
            fan_out = {"agent": "extractor", "task": job, "inputs_list": inputs_list}
            return [("assign_tasks", fan_out), ("wait", {"ids": "all"})]
        rows: list[dict[str, Any]] = []
        for key in actions.state.tasks:
            result = await actions.result_of(key)
            if result is not None and isinstance(result.output, dict):
                rows += [r for r in result.output.get("rows", []) if isinstance(r, dict)]
        return [("finish", {"answer": rows_markdown(tuple(self.task.columns), rows)})]


def _why(result: Any) -> str:
    if result is None:
        return "no result"
    return f"{result.error.type}: {result.error.message}" if result.error else result.status.value


Rules = ReviewRules | AnalysisRules | WideRules


@dataclass
class OfflinePlanner:
    """The orchestrator's policy when there is no model: one of the rule sets above."""

    rules: Rules
    name: str = "offline"

    async def next_turn(
        self, ctx: SubtaskContext, messages: Sequence[dict[str, Any]], actions: Actions
    ) -> ChatResponse:
        turn = actions.state.turns + 1  # counted over attempts and sessions
        return calls_response(await self.rules.calls(ctx, actions), turn)


def offline_rules(
    goal: str,
    *,
    corpus: Corpus | None,
    datasets: Sequence[str],
    wide_tasks: Callable[[], dict[str, WideTask]] | None = None,
    max_papers: int = 200,
) -> Rules:
    """The rule set for a goal and its resources.

    Raises:
        ConfigError: no rule set plans this goal without a model (says how to give one).
    """
    if corpus is not None and wide_tasks is not None:
        for task in wide_tasks().values():
            if " ".join(task.goal().split()) == " ".join(goal.split()):
                return WideRules(task, corpus.ids)
    if corpus is not None and datasets:
        raise ConfigError(
            "offline, a run plans either a review (--corpus) or an analysis (--data), not "
            "both; give a model to combine them"
        )
    if corpus is not None:
        return ReviewRules(corpus, review_topic(goal), max_papers=max_papers)
    if datasets:
        return AnalysisRules(datasets)
    raise ConfigError(NO_OFFLINE_PLAN)


_VERBS = ("review", "survey", "summarize", "summarise", "overview", "literature review")


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
    "NO_OFFLINE_PLAN",
    "AnalysisRules",
    "OfflinePlanner",
    "ReviewRules",
    "WideRules",
    "offline_rules",
    "review_topic",
]
