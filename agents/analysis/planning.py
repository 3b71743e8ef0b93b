"""How an analysis is planned: the first subtask of a run of its own (`initial_plan`; its
planner spawns the rest, `workers.analysis_subtasks`), and the orchestrator's offline rules
(`AnalysisRules`; the orchestrator assigns the same subtasks)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kimmy_swarm.agents.analysis.schemas import PLAN_ID, SUMMARIZE_ID, AnalysisPlan
from kimmy_swarm.agents.analysis.workers import analysis_subtasks
from kimmy_swarm.agents.pipeline import assign_call, failure_reason
from kimmy_swarm.swarm.schema import Plan, Subtask

if TYPE_CHECKING:
    from kimmy_swarm.agents.analysis.config import AnalysisConfig
    from kimmy_swarm.agents.loop import Call
    from kimmy_swarm.agents.pipeline import Orchestration
    from kimmy_swarm.swarm.context import SubtaskContext

#: The role of the analysis's planner (subtask `plan`).
PLANNER = "planner"
#: First words that make a goal without a question mark a question ("Which factors …").
_ASKING = frozenset(
    {"what", "which", "how", "why", "who", "when", "where", "does", "do", "is", "are", "can"}
)


def goal_questions(goal: str) -> tuple[str, ...]:
    """The questions an orchestrated analysis asks of its datasets: the goal itself when it is
    a question ("What drives employment?"; ends with "?" or starts "what", "which", …), else
    none (the general question: profile and the designated target's model)."""
    text = " ".join(goal.split())
    first = text.split(" ", 1)[0].lower() if text else ""
    return (text,) if text.endswith("?") or first in _ASKING else ()


def initial_plan(config: AnalysisConfig) -> Plan:
    """The planner's subtask of a run of its own; it spawns the rest."""
    datasets = list(dict.fromkeys(config.datasets))
    return Plan(
        goal=f"batch analysis of {len(datasets)} dataset(s)",
        subtasks=[
            Subtask(
                id=PLAN_ID,
                role=PLANNER,
                instructions="Plan one analysis per (dataset, question).",
                inputs={"datasets": datasets, "questions": list(config.questions)},
            )
        ],
    )


@dataclass
class AnalysisRules:
    """The batch analysis, planned offline by the analysis's own rules."""

    datasets: Sequence[str]
    questions: Sequence[str] = ()

    async def calls(self, ctx: SubtaskContext, progress: Orchestration) -> list[Call]:
        """Assign the planner and wait; then assign its plan's analyses, checks and reports
        and wait; then finish with the summary."""
        tasks = progress.state.tasks
        if not tasks:
            inputs = {"datasets": list(self.datasets), "questions": list(self.questions)}
            task = "Plan one analysis per (dataset, question)."
            assign = {"agent": PLANNER, "task": task, "inputs": inputs, "id": PLAN_ID}
            return [("assign_task", assign), ("wait", {"ids": [PLAN_ID]})]
        if len(tasks) == 1:
            result = await progress.result_of(PLAN_ID)
            if result is None or result.output is None:
                why = failure_reason(result)
                return [("finish", {"answer": f"No analysis: the plan failed ({why})."})]
            plan = AnalysisPlan.model_validate(result.output)
            return [*map(assign_call, analysis_subtasks(plan)), ("wait", {"ids": "all"})]
        summary = await progress.result_of(SUMMARIZE_ID)
        if summary is not None and isinstance(summary.output, dict):
            answer = str(summary.output.get("markdown") or "")
        else:
            answer = f"The summary failed ({failure_reason(summary)}); see report.md."
        return [("finish", {"answer": answer or "The analysis produced no summary."})]


__all__ = ["PLANNER", "AnalysisRules", "goal_questions", "initial_plan"]
