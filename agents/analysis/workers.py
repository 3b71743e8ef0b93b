"""The swarm workers of the batch analysis: each runs its role's `SubAgent` (model policy or
offline procedure) and keeps the run's `AnalysisBoard` up to date.

- `PlanWorker` (subtask `plan`): the orchestrator's `AnalysisPlan`, then it spawns
  `analyze:<n>` → `check:<n>` per task, and `report` + `summarize` after all checks.
- `AnalystWorker`: the analysis, with the dataset's shape and the figures' PNGs filled in
  from the data (never trusted from a model).
- `CheckWorker`: the fact-check; a failed analysis is recorded, not sent to a model.
- `ReportWorker`: records failed dependencies as problems, then builds its report.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

from kimmy_swarm.agents.analysis.procedures import failed_dependency
from kimmy_swarm.agents.analysis.schemas import (
    PLAN_ID,
    AnalysisPlan,
    DatasetAnalysis,
    FindingChecks,
    analyze_id,
    check_id,
    is_analyze_id,
    is_check_id,
)
from kimmy_swarm.swarm.schema import Subtask, SubtaskStatus

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pydantic import BaseModel

    from kimmy_swarm.agents.analysis.board import AnalysisBoard
    from kimmy_swarm.agents.subagent import SubAgent
    from kimmy_swarm.swarm.context import SubtaskContext
    from kimmy_swarm.swarm.schema import SubtaskResult


def analysis_subtasks(plan: AnalysisPlan) -> list[Subtask]:
    """The subtasks a plan spawns: analyses, their checks, then the two reports."""
    out: list[Subtask] = []
    checks: list[str] = []
    for t in plan.tasks:
        aid, cid = analyze_id(t.n), check_id(t.n)
        out.append(Subtask(
            id=aid, role="data_analyst",
            instructions=f"Analyse dataset {t.dataset!r} to answer: {t.question}",
            inputs={"dataset": t.dataset, "question": t.question, "n": t.n},
        ))  # fmt: skip
        out.append(Subtask(
            id=cid, role="fact_checker", depends_on=[aid],
            instructions=f"Recompute every number of {aid} from the raw data of {t.dataset!r}.",
            inputs={"analysis": aid, "dataset": t.dataset},
        ))  # fmt: skip
        checks.append(cid)
    deps = ["plan", *checks]
    out.append(Subtask(
        id="report", role="frontend_engineer", depends_on=deps,
        instructions="Build report.html from the checked analyses (render_report).",
    ))  # fmt: skip
    out.append(Subtask(
        id="summarize", role="synthesizer", depends_on=deps,
        instructions="Write report.md: the findings across datasets, with their verdicts.",
    ))  # fmt: skip
    return out


class _BoardWorker:
    def __init__(self, agent: SubAgent, board: AnalysisBoard) -> None:
        self.agent = agent
        self.board = board


class PlanWorker(_BoardWorker):
    """Plans with the orchestrator, then spawns the rest of the DAG."""

    async def __call__(self, ctx: SubtaskContext) -> AnalysisPlan:
        plan = await self.plan(ctx)
        ctx.spawn(analysis_subtasks(plan))
        return plan

    async def plan(self, ctx: SubtaskContext) -> AnalysisPlan:
        """The plan, its tasks recorded on the board (nothing spawned)."""
        plan = AnalysisPlan.model_validate(await self.agent(ctx))
        # A model may leave out load errors; the report must not.
        missing = [
            f"dataset {spec!r} was not loaded: {msg}"
            for spec, msg in self.board.load_errors.items()
            if not any(spec in p for p in plan.problems)
        ]
        plan = plan.model_copy(update={"problems": [*plan.problems, *missing]})
        for t in plan.tasks:
            self.board.record_task(analyze_id(t.n), t)
        return plan


class PlanOnlyWorker(PlanWorker):
    """Plans and records the tasks, leaving the spawning to an orchestrator above it."""

    async def __call__(self, ctx: SubtaskContext) -> AnalysisPlan:
        return await self.plan(ctx)


class AnalystWorker(_BoardWorker):
    """Runs the analyst; fills in the data's shape and the figures; records the analysis."""

    async def __call__(self, ctx: SubtaskContext) -> DatasetAnalysis:
        out = DatasetAnalysis.model_validate(await self.agent(ctx))
        dataset = str(ctx.inputs["dataset"])
        frame = self.board.frame(dataset)
        figures, problems = [], list(out.problems)
        for f in out.figures:
            png = self.board.figures.get(f.figure_id)
            if png is None:
                problems.append(f"figure {f.figure_id!r} was not made with make_figure; dropped")
                continue
            figures.append(f.model_copy(update={"png_base64": base64.b64encode(png).decode()}))
        out = out.model_copy(update={
            "question": str(ctx.inputs["question"]),
            "rows": int(frame.shape[0]),
            "columns": int(frame.shape[1]),
            "column_names": [str(c) for c in frame.columns],
            "figures": figures,
            "problems": problems,
        })  # fmt: skip
        self.board.record_analysis(ctx.id, out)
        return out


class CheckWorker(_BoardWorker):
    """Runs the fact-checker over a finished analysis; records the verdicts."""

    async def __call__(self, ctx: SubtaskContext) -> FindingChecks:
        analysis_id = str(ctx.inputs["analysis"])
        if ctx.upstream.get(analysis_id) is None:
            problem = failed_dependency(ctx, analysis_id)
            self.board.add_problem(problem)
            dataset = str(ctx.inputs.get("dataset", ""))
            out = FindingChecks(analysis=analysis_id, dataset=dataset, problems=[problem])
        else:
            self.board.record_analysis(
                analysis_id, DatasetAnalysis.model_validate(ctx.upstream[analysis_id])
            )
            out = FindingChecks.model_validate(await self.agent(ctx))
        self.board.record_checks(ctx.id, out)
        return out


class ReportWorker(_BoardWorker):
    """Records which checks failed, then runs the frontend engineer or the synthesizer."""

    async def __call__(self, ctx: SubtaskContext) -> BaseModel | Any:
        for dep, res in ctx.upstream_results.items():
            if res.status is not SubtaskStatus.DONE:
                self.board.add_problem(failed_dependency(ctx, dep))
        return await self.agent(ctx)


def restore_board(board: AnalysisBoard, results: Mapping[str, SubtaskResult]) -> None:
    """Put on the board what the workers of finished subtasks recorded there, from their
    stored results (a resumed run does not run them again): the planned tasks, the
    analyses with their figures, the fact-checks and the problems they found."""
    done = {k: r.output for k, r in results.items() if r.status is SubtaskStatus.DONE}
    if isinstance(done.get(PLAN_ID), dict):
        for t in AnalysisPlan.model_validate(done[PLAN_ID]).tasks:
            board.record_task(analyze_id(t.n), t)
    for sid, output in done.items():
        if is_analyze_id(sid):
            analysis = DatasetAnalysis.model_validate(output)
            for f in analysis.figures:
                board.add_figure(f.figure_id, base64.b64decode(f.png_base64))
            board.record_analysis(sid, analysis)
    for sid, output in done.items():
        if is_check_id(sid):
            checks = FindingChecks.model_validate(output)
            if checks.analysis not in done:  # CheckWorker noted the failed analysis
                for problem in checks.problems:
                    board.add_problem(problem)
            board.record_checks(sid, checks)


__all__ = [
    "AnalystWorker",
    "CheckWorker",
    "PlanOnlyWorker",
    "PlanWorker",
    "ReportWorker",
    "analysis_subtasks",
    "restore_board",
]
