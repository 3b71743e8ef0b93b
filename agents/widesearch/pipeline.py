"""The wide search as a `Pipeline`: the orchestrator plans a wide task's goal over the paper
corpus with `WideRules` (extractors over slices of the corpus, then the merged table), and
`WideGrader` scores such a run by the F1 of its answer.

It runs only under the orchestrator (`run_solve` with a `WIDE_TASKS` goal and the corpus):
its answer is the orchestrator's, so it stores no settings of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kimmy_swarm.agents.pipeline import (
    OFFLINE_PLANS,
    Pipeline,
    PipelineConfig,
    PipelineFiles,
    RunResources,
)
from kimmy_swarm.agents.pipeline_record import stored_settings
from kimmy_swarm.agents.review.pipeline import load_review_corpus
from kimmy_swarm.agents.review.tools import build_toolbox
from kimmy_swarm.agents.subagent import install
from kimmy_swarm.agents.toolbox import ToolBox
from kimmy_swarm.agents.widesearch.extract import extractor_role, metadata_tool
from kimmy_swarm.agents.widesearch.goal_reader import (
    GoalNotUnderstood,
    asks_for_table,
    read_wide_goal,
)
from kimmy_swarm.agents.widesearch.grader import WideGrader
from kimmy_swarm.agents.widesearch.suite import suite_goal_of
from kimmy_swarm.agents.widesearch.task import WIDE_TASKS, WideTask, load_papers
from kimmy_swarm.swarm.errors import ConfigError

if TYPE_CHECKING:
    from concurrent.futures import Executor

    from kimmy_swarm.agents.loop import Call
    from kimmy_swarm.agents.pipeline import Orchestration, RunInputs
    from kimmy_swarm.rewards.graders import PipelineGrader
    from kimmy_swarm.rewards.trajectory import Trajectory
    from kimmy_swarm.swarm import RunResult, Swarm
    from kimmy_swarm.swarm.context import SubtaskContext

#: Papers per extractor of a wide task (the corpus is split into slices of this size).
WIDE_SLICE = 5


def _ws(text: str) -> str:
    return " ".join(text.split())


def wide_task_of(goal: str, *, read: bool = True) -> WideTask | None:
    """The wide task `goal` asks for: a preset's or a suite goal's (whitespace aside), else,
    with `read`, the goal read in words when it asks for a table and is understood whole.
    None: not a wide goal (or one not understood)."""
    wanted = _ws(goal)
    preset = next((t for t in WIDE_TASKS.values() if _ws(t.goal()) == wanted), None)
    if preset is not None:
        return preset
    known = suite_goal_of(goal)
    if known is not None:
        return known.task
    if read and asks_for_table(goal):
        try:
            return read_wide_goal(goal)
        except GoalNotUnderstood:
            return None
    return None


def plan_wide_goal(goal: str) -> WideTask | None:
    """The wide task the offline planner plans for `goal`; None when `goal` does not ask for
    a table of papers.

    Raises:
        ConfigError: it asks for a table, but not every part of it is understood (one line:
            what was not, what can be planned offline, how to give a model).
    """
    task = wide_task_of(goal, read=False)
    if task is not None or not asks_for_table(goal):
        return task
    try:
        return read_wide_goal(goal)
    except GoalNotUnderstood as exc:
        raise ConfigError(
            f"this goal needs a model to plan it: it asks for a table, but {exc}; {OFFLINE_PLANS}"
        ) from None


def search_query(task: WideTask) -> str | None:
    """The search query whose matches are the papers whose title or abstract holds one of
    the task's phrases (each quoted: `'GAN' or 'GANs'`), or None when the task has no
    phrases (then every document is a candidate)."""
    if not task.phrases:
        return None
    return " or ".join(f'"{p}"' if "'" in p else f"'{p}'" for p in task.phrases)


@dataclass
class WideRules:
    """A wide task: one extractor per slice of the candidate papers — those its phrases'
    words match, found by the orchestrator's `fan_out` over a query without listing them, or
    the whole corpus — then the table assembled from their rows by `finish`."""

    task: WideTask
    documents: Sequence[str]
    slice_size: int = WIDE_SLICE

    async def calls(self, ctx: SubtaskContext, progress: Orchestration) -> list[Call]:
        """Fan the extractors out at once and wait; then finish with their rows as one table."""
        if not progress.state.tasks:
            query = search_query(self.task)
            over: dict[str, Any] = {"query": query} if query else {"all_documents": True}
            job = "Report the row of every paper of your documents that meets the task."
            fan_out = {"agent": "extractor", "task": job, **over, "per_task": self.slice_size,
                       "inputs": {"task": self.task.model_dump(mode="json")}}  # fmt: skip
            return [("fan_out", fan_out), ("wait", {"ids": "all"})]
        table: dict[str, Any] = {"columns": list(self.task.columns)}
        if self.task.sort_by is not None:
            table.update(sort_by=self.task.sort_by, descending=self.task.descending)
        return [("finish", {"table": table})]


class WidePipeline(Pipeline[PipelineConfig, PipelineFiles]):
    """The wide search (its resources: the corpus, with the review's tools and
    `read_metadata`)."""

    name = "widesearch"

    def load_inputs(self, inputs: RunInputs, resources: RunResources, executor: Executor) -> None:
        if inputs.corpus is None:
            return
        if resources.corpus is None:
            resources.corpus = load_review_corpus(inputs.corpus, defaults=inputs.defaults)
        if "read_document" not in resources.tools:
            resources.add_tools(build_toolbox(resources.corpus, resources.search_index()))
        resources.add_tools(ToolBox([metadata_tool(resources.corpus)]))

    def install(
        self,
        swarm: Swarm,
        resources: RunResources,
        executor: Executor,
        *,
        planner: str = "planner",
        config: PipelineConfig | None = None,
    ) -> dict[str, str]:
        install(swarm, [extractor_role()], resources.tools, executor=executor)
        return {"extractor": "reports the rows of the papers that meet a wide task"}

    def write_outputs(
        self,
        resources: RunResources,
        result: RunResult,
        out: Path,
        *,
        config: PipelineConfig | None = None,
    ) -> PipelineFiles:
        return PipelineFiles(paths={})  # the answer (answer.md) is the table

    def offline_rules(self, goal: str, resources: RunResources) -> WideRules | None:
        """Extractors over the corpus for a goal that asks for a table of papers (a preset, a
        suite goal, or one read whole in words); None for any other goal.

        Raises:
            ConfigError: the goal asks for a table the planner does not understand whole.
        """
        if resources.corpus is None:
            return None
        task = plan_wide_goal(goal)
        return WideRules(task, resources.corpus.ids) if task is not None else None

    def grader(self, traj: Trajectory) -> PipelineGrader | None:
        """`WideGrader` of a run whose goal is a wide task's (a preset's, a suite goal's, or
        a table goal read whole), its truth computed from the corpus the run read (None
        when that corpus is not there any more)."""
        task = wide_task_of(traj.goal) if isinstance(traj.goal, str) else None
        corpus = stored_settings(traj.settings).get("corpus")
        if task is None or not isinstance(corpus, str) or not Path(corpus).exists():
            return None
        return WideGrader(task, load_papers(corpus), goal=traj.goal)


#: The wide search (registered in `agents.pipelines`).
WIDESEARCH = WidePipeline()


__all__ = [
    "WIDESEARCH",
    "WIDE_SLICE",
    "WidePipeline",
    "WideRules",
    "plan_wide_goal",
    "search_query",
    "wide_task_of",
]
