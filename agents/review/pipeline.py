"""`run_review`: the literature-review swarm, from a corpus folder to the review's files.

    plan (planner) ─spawns─▶ read:<doc> (researcher, one per relevant paper)
                              └▶ write:<theme> (writer, one per theme)
                                  └▶ check:<theme> (fact_checker)
                                      └▶ synthesize (synthesizer) ─▶ review.md, …

The width follows the corpus: a 500-paper corpus on a broad topic runs hundreds of
sub-agents. Built from the public swarm API only; the same plan runs offline (procedures)
or with a model (`config.model`). `REVIEW` is the review as a `Pipeline`: run on its own by
`run_review` (`agents.pipeline.run_pipeline`), or planned by the orchestrator for a goal
with a corpus.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kimmy_swarm.agents.fallback import fallbacks, made_by_counts
from kimmy_swarm.agents.pipeline import (
    Pipeline,
    PipelineRun,
    RunResources,
    resume_pipeline,
    run_pipeline,
)
from kimmy_swarm.agents.review.config import ReviewConfig, ReviewSettings
from kimmy_swarm.agents.review.grader import ReviewGrader
from kimmy_swarm.agents.review.outputs import ReviewFiles, write_review
from kimmy_swarm.agents.review.planning import (
    PLANNER,
    ReviewRules,
    asks_for_review,
    initial_plan,
    review_topic,
    spawning_planner,
)
from kimmy_swarm.agents.review.roles import review_roles
from kimmy_swarm.agents.review.schemas import PLAN_ID, ReviewPlan
from kimmy_swarm.agents.review.tools import build_toolbox
from kimmy_swarm.agents.subagent import SubAgent, install
from kimmy_swarm.swarm.errors import UserError

if TYPE_CHECKING:
    from concurrent.futures import Executor

    from kimmy_swarm.agents.pipeline import RunInputs
    from kimmy_swarm.agents.tools.corpus import Corpus, Skipped
    from kimmy_swarm.rewards.graders import PipelineGrader
    from kimmy_swarm.rewards.trajectory import Trajectory
    from kimmy_swarm.swarm import EventSink, Plan, RunResult, Swarm
    from kimmy_swarm.swarm.llm.endpoint import ModelEndpoint
    from kimmy_swarm.swarm.llm.protocol import ChatModel


class EmptyCorpusError(UserError):
    """The corpus has no readable document."""


@dataclass
class ReviewOutcome:
    """What a review run produced (the CLI prints it)."""

    out_dir: Path
    run_id: str
    status: str
    files: ReviewFiles
    documents: int
    skipped: list[Skipped]
    relevant: int
    themes: int
    subagents: int
    peak_researchers: int
    duration_s: float
    problems: list[str] = field(default_factory=list)
    #: Sub-agents whose model failed their subtask, done by the offline procedure instead:
    #: the model's error by subtask id (`agents.fallback`).
    fallbacks: dict[str, str] = field(default_factory=dict)
    #: How many sub-agents' outputs each maker made: `model`, `offline`, `offline_fallback`
    #: (`agents.fallback.made_by_counts`).
    made_by: dict[str, int] = field(default_factory=dict)

    @property
    def pass_rate(self) -> float:
        """Supported claims over all checked claims (0.0 when nothing was checked: a
        fact-check that checked nothing vouches for nothing)."""
        total = self.files.claims
        return self.files.supported / total if total else 0.0


def load_review_corpus(path: Path, *, defaults: Mapping[str, Any] | None = None) -> Corpus:
    """The corpus at `path`, or `EmptyCorpusError` saying why nothing could be read."""
    from kimmy_swarm.agents.tools.corpus import load_corpus

    corpus = load_corpus(path, defaults=defaults)
    if len(corpus) == 0:
        why = "; ".join(f"{s.source}: {s.reason}" for s in corpus.skipped[:5])
        more = f" (and {len(corpus.skipped) - 5} more)" if len(corpus.skipped) > 5 else ""
        raise EmptyCorpusError(
            f"corpus {str(path)!r} has no readable document"
            + (
                f"; skipped {why}{more}"
                if why
                else "; it holds no .md, .txt, .pdf, .bib, .jsonl or .json file"
            )
        )
    return corpus


class ReviewPipeline(Pipeline[ReviewConfig, ReviewFiles]):
    """The literature review as a `Pipeline` (its resources: the corpus and its tools)."""

    name = "review"
    Settings = ReviewSettings

    def configure(self, settings: ReviewSettings, **given: Any) -> ReviewConfig:
        return ReviewConfig.from_settings(settings, **given)

    def load(self, config: ReviewConfig, executor: Executor) -> RunResources:
        corpus = load_review_corpus(config.corpus, defaults=config.defaults)
        return RunResources(tools=build_toolbox(corpus, relevance=config.relevance), corpus=corpus)

    def load_inputs(self, inputs: RunInputs, resources: RunResources, executor: Executor) -> None:
        if inputs.corpus is None:
            return
        if resources.corpus is None:
            resources.corpus = load_review_corpus(inputs.corpus, defaults=inputs.defaults)
        if "search_corpus" not in resources.tools:
            resources.add_tools(build_toolbox(resources.corpus, resources.search_index()))

    def install(
        self,
        swarm: Swarm,
        resources: RunResources,
        executor: Executor,
        *,
        planner: str = PLANNER,
        config: ReviewConfig | None = None,
    ) -> dict[str, str]:
        roles = review_roles(briefs=config.briefs if config is not None else True)
        others = [r for n, r in roles.items() if n != PLANNER]
        planning = roles.get_role(PLANNER).derive(name=planner)
        if config is None:  # the orchestrator assigns the plan's subtasks
            install(swarm, [planning, *others], resources.tools, executor=executor)
            return {r.name: r.system_prompt[:80] for r in others}
        assert resources.corpus is not None
        install(swarm, others, resources.tools, executor=executor, fallback=config.fallback)
        agent = SubAgent(planning, resources.tools, executor=executor, fallback=config.fallback)
        spawning = spawning_planner(agent, len(resources.corpus), config.researcher)
        swarm.add_role(planner, spawning, output=ReviewPlan)
        return {}

    def plan(self, config: ReviewConfig, resources: RunResources) -> Plan:
        assert resources.corpus is not None
        return initial_plan(config, resources.corpus)

    def write_outputs(
        self,
        resources: RunResources,
        result: RunResult,
        out: Path,
        *,
        config: ReviewConfig | None = None,
    ) -> ReviewFiles:
        assert resources.corpus is not None
        if config is not None:
            return write_review(out, resources.corpus, result, topic=config.topic)
        plan = result.outputs.get(PLAN_ID)
        if plan is None:  # the orchestrator's plan failed: no review to write
            return ReviewFiles(paths={}, claims=0, supported=0, flagged=0)
        topic = str(plan.get("topic", "")) if isinstance(plan, dict) else ""
        return write_review(out, resources.corpus, result, topic=topic)

    def offline_rules(self, goal: str, resources: RunResources) -> ReviewRules | None:
        """The review's rules for a goal that asks for a review of the corpus ("Review …",
        "a survey of …", "summarize …"); None for any other goal or without a corpus."""
        if resources.corpus is None or not asks_for_review(goal):
            return None
        return ReviewRules(resources.corpus, review_topic(goal))

    def grader(self, traj: Trajectory) -> PipelineGrader | None:
        grader = ReviewGrader()
        return grader if grader.applies(traj) else None


#: The literature review (registered in `agents.pipelines`).
REVIEW = ReviewPipeline()


def _outcome(run: PipelineRun[ReviewConfig, ReviewFiles]) -> ReviewOutcome:
    config, result, corpus = run.config, run.result, run.resources.corpus
    assert corpus is not None
    plan_out = result.outputs.get(PLAN_ID) or {}
    return ReviewOutcome(
        out_dir=config.out,
        run_id=result.run_id,
        status=result.status.value,
        files=run.files,
        documents=len(corpus),
        skipped=list(corpus.skipped),
        relevant=len(plan_out.get("relevant", [])),
        themes=len(plan_out.get("themes", [])),
        subagents=len(result.results),
        peak_researchers=run.peak[config.researcher],
        duration_s=run.wall_s,
        problems=run.files.problems,
        fallbacks=fallbacks(result.outputs),
        made_by=made_by_counts(result.outputs),
    )


def run_review(
    config: ReviewConfig,
    *,
    sinks: Sequence[EventSink] = (),
    endpoint: ModelEndpoint | None = None,
) -> ReviewOutcome:
    """Run the review swarm and write review.md, references.bib, report.html, claims.jsonl.

    The run records its settings and `endpoint` (default: `ModelEndpoint.of(config.model)`)
    so that `resume_review` can continue it.

    Raises:
        CorpusError: the corpus path is missing or of an unsupported type.
        EmptyCorpusError: no document of the corpus could be read.
    """
    return _outcome(run_pipeline(REVIEW, config, sinks=sinks, endpoint=endpoint))


def resume_review(
    run_id: str,
    *,
    runs_dir: Path,
    model: ChatModel | None = None,
    sinks: Sequence[EventSink] = (),
    **changes: Any,
) -> ReviewOutcome:
    """Continue a stored `run_review` run: its finished subtasks are reused, the rest runs
    with the same roles, and the files are written as an unbroken run writes them.

    Args:
        model: the model of the run (None: offline; give the one its endpoint names).
        changes: `ReviewConfig` fields to change (e.g. `max_concurrency`).

    Raises:
        ConfigError: the run was not made by `run_review`.
        RunNotFoundError: no such run.
        EmptyCorpusError: the corpus has no readable document any more.
    """
    run = resume_pipeline(REVIEW, run_id, runs_dir=runs_dir, model=model, sinks=sinks, **changes)
    return _outcome(run)


__all__ = [
    "REVIEW",
    "EmptyCorpusError",
    "ReviewOutcome",
    "ReviewPipeline",
    "load_review_corpus",
    "resume_review",
    "run_review",
]
