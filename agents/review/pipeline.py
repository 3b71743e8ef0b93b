"""`run_review`: the literature-review swarm, from a corpus folder to the review's files.

    plan (orchestrator) ─spawns─▶ read:<doc> (researcher, one per relevant paper)
                                   └▶ write:<theme> (writer, one per theme)
                                       └▶ check:<theme> (fact_checker)
                                           └▶ synthesize (synthesizer) ─▶ review.md, …

The width follows the corpus: a 500-paper corpus on a broad topic runs hundreds of
sub-agents. Built from the public swarm API only; the same plan runs offline (procedures)
or with a model (`config.model`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agents.fallback import fallbacks, made_by_counts
from agents.pipeline_record import (
    PIPELINE_KEY,
    PipelineRecord,
    ReviewSettings,
    load_pipeline_run,
    resume_sync,
)
from agents.review.outputs import ReviewFiles, write_review
from agents.review.roles import review_roles
from agents.review.schemas import PLAN_ID, SYNTHESIZE_ID, ReviewPlan, check_id, read_id, write_id
from agents.subagent import SubAgent, install
from agents.tools.search import Relevance
from agents.tracking import RoleConcurrency
from swarm import Swarm
from swarm.errors import ConfigError, UserError
from swarm.llm.endpoint import ModelEndpoint
from swarm.schema import Plan, Subtask

if TYPE_CHECKING:
    from concurrent.futures import Executor

    from agents.toolbox import ToolBox
    from agents.tools.corpus import Corpus, Skipped
    from swarm import EventSink, SubtaskContext
    from swarm.llm.protocol import ChatModel


class EmptyCorpusError(UserError):
    """The corpus has no readable document."""


RESEARCHER_ROLES = ("researcher", "physics_researcher")


@dataclass(frozen=True)
class ReviewConfig:
    """What to review and where the files go (checked when made, before anything runs).

    Attributes:
        corpus: a folder of .md/.txt/.pdf files, a .bib, .jsonl or .json file.
        topic: what the review is about (empty: every document, up to `max_papers`).
        out: the output folder (created).
        model: the model sub-agents call (None: the offline procedures).
        runs_dir: where the swarm stores the run (None: nowhere).
        max_papers: the most documents reviewed (one researcher each).
        themes: the number of themes (None: chosen from the number of documents).
        max_concurrency: sub-agents in flight at most.
        threads: worker threads for procedures and tools.
        defaults: metadata for records that lack it, e.g. {"year": 2017}.
        researcher: the role reading each paper: `researcher`, or `physics_researcher`
            (it reports the sentences that state measured quantities first).
        relevance: when a document is relevant to the topic (`agents.tools.search.Relevance`:
            a BM25 score threshold and the topic's key words); `max_papers` only caps.
        fallback: with a model, a sub-agent (the planner too) whose model fails its
            subtask by its answers gets it done by its role's offline procedure, marked as
            such (`agents.fallback`); False: that sub-agent fails (strict model mode).

    Raises:
        ConfigError: a count below 1 or an unknown researcher role.
    """

    corpus: Path
    topic: str
    out: Path
    model: ChatModel | None = None
    runs_dir: Path | None = None
    max_papers: int = 200
    themes: int | None = None
    max_concurrency: int = 64
    threads: int = 8
    defaults: Mapping[str, Any] | None = None
    researcher: str = "researcher"
    relevance: Relevance = field(default_factory=Relevance)
    fallback: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "corpus", Path(self.corpus))
        if isinstance(self.relevance, Mapping):  # as stored in `ReviewSettings`
            object.__setattr__(self, "relevance", Relevance(**self.relevance))
        if not isinstance(self.relevance, Relevance):
            raise ConfigError(f"relevance must be a Relevance, got {self.relevance!r}")
        object.__setattr__(self, "out", Path(self.out))
        if self.max_papers < 1:
            raise ConfigError(f"max_papers must be >= 1, got {self.max_papers}")
        if self.themes is not None and self.themes < 1:
            raise ConfigError(
                f"themes must be >= 1, or None to choose from the corpus; got {self.themes}"
            )
        if self.researcher not in RESEARCHER_ROLES:
            raise ConfigError(
                f"unknown researcher role {self.researcher!r}; "
                f"use one of {', '.join(RESEARCHER_ROLES)}"
            )
        if self.threads < 1 or self.max_concurrency < 1:
            raise ConfigError(
                f"threads and max_concurrency must be >= 1, got {self.threads} and "
                f"{self.max_concurrency}"
            )

    def settings(self) -> ReviewSettings:
        """What a resume needs (the model and the runs directory are given again)."""
        return ReviewSettings(
            corpus=self.corpus.expanduser().resolve(),
            topic=self.topic,
            out=self.out.expanduser().resolve(),
            max_papers=self.max_papers,
            themes=self.themes,
            max_concurrency=self.max_concurrency,
            threads=self.threads,
            defaults=dict(self.defaults) if self.defaults is not None else None,
            researcher=self.researcher,
            relevance=self.relevance,
            fallback=self.fallback,
        )

    @classmethod
    def from_settings(cls, settings: ReviewSettings, **changes: Any) -> ReviewConfig:
        """The config a run was stored with; `changes` set other fields (model, runs_dir)."""
        return cls(**{**settings.model_dump(exclude={"kind"}), **changes})


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


def decompose(plan: ReviewPlan, corpus_size: int, researcher: str = "researcher") -> list[Subtask]:
    """The subtasks the orchestrator spawns for its plan."""
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
                inputs={"theme_id": theme.id},
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
            depends_on=[PLAN_ID]
            + [write_id(t.id) for t in plan.themes]
            + [check_id(t.id) for t in plan.themes],
        )
    )
    return subtasks


def _orchestrator(planner: SubAgent, corpus_size: int, researcher: str) -> Any:
    async def orchestrate(ctx: SubtaskContext) -> ReviewPlan:
        plan = ReviewPlan.model_validate(await planner(ctx))
        ctx.spawn(decompose(plan, corpus_size, researcher))
        return plan

    return orchestrate


def load_review_corpus(config: ReviewConfig) -> Corpus:
    """The corpus, or `EmptyCorpusError` saying why nothing could be read."""
    from agents.tools.corpus import load_corpus

    corpus = load_corpus(config.corpus, defaults=config.defaults)
    if len(corpus) == 0:
        why = "; ".join(f"{s.source}: {s.reason}" for s in corpus.skipped[:5])
        more = f" (and {len(corpus.skipped) - 5} more)" if len(corpus.skipped) > 5 else ""
        raise EmptyCorpusError(
            f"corpus {str(config.corpus)!r} has no readable document"
            + (
                f"; skipped {why}{more}"
                if why
                else "; it holds no .md, .txt, .pdf, .bib, .jsonl or .json file"
            )
        )
    return corpus


def _initial_plan(config: ReviewConfig, corpus: Corpus) -> Plan:
    """The orchestrator's subtask; it spawns the rest (`decompose`)."""
    return Plan(
        goal=f"literature review: {config.topic}",
        subtasks=[
            Subtask(
                id=PLAN_ID,
                role="orchestrator",
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


def build_swarm(config: ReviewConfig, corpus: Corpus, tools: ToolBox, executor: Executor) -> Swarm:
    """A swarm with the review roles: the orchestrator spawns its plan's subtasks."""
    roles = review_roles()
    swarm = Swarm(
        model=config.model,
        max_concurrency=config.max_concurrency,
        failure_policy="continue",
        runs_dir=config.runs_dir,
    )
    others = [r for n, r in roles.items() if n != "orchestrator"]
    install(swarm, others, tools, executor=executor, fallback=config.fallback)
    planner = SubAgent(
        roles.get_role("orchestrator"), tools, executor=executor, fallback=config.fallback
    )
    swarm.add_role(
        "orchestrator",
        _orchestrator(planner, len(corpus), config.researcher),
        output=ReviewPlan,
    )
    return swarm


def _run(
    config: ReviewConfig,
    sinks: Sequence[EventSink],
    endpoint: ModelEndpoint | None,
    resume: str | None = None,
) -> ReviewOutcome:
    """Run (or, given a stored run's id, continue) the review and write its files."""
    from agents.review.tools import build_toolbox

    t0 = time.perf_counter()
    corpus = load_review_corpus(config)
    tools = build_toolbox(corpus, relevance=config.relevance)
    tracker = RoleConcurrency()
    record = PipelineRecord(settings=config.settings(), endpoint=endpoint or
                            ModelEndpoint.of(config.model))  # fmt: skip
    with (
        ThreadPoolExecutor(config.threads, thread_name_prefix="kimmy-agent") as executor,
        build_swarm(config, corpus, tools, executor) as swarm,
    ):
        swarm.settings[PIPELINE_KEY] = record.model_dump(mode="json")
        if resume is None:
            result = swarm.run_sync(_initial_plan(config, corpus), sinks=[tracker, *sinks])
        else:
            result = resume_sync(swarm, resume, sinks=[tracker, *sinks])
    files = write_review(config.out, corpus, result, topic=config.topic)
    plan_out = result.outputs.get(PLAN_ID) or {}
    return ReviewOutcome(
        out_dir=config.out,
        run_id=result.run_id,
        status=result.status.value,
        files=files,
        documents=len(corpus),
        skipped=list(corpus.skipped),
        relevant=len(plan_out.get("relevant", [])),
        themes=len(plan_out.get("themes", [])),
        subagents=len(result.results),
        peak_researchers=tracker.peak[config.researcher],
        duration_s=time.perf_counter() - t0,
        problems=files.problems,
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
    return _run(config, sinks, endpoint)


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
    stored, record = load_pipeline_run(run_id, runs_dir, "review")
    assert isinstance(record.settings, ReviewSettings)
    config = ReviewConfig.from_settings(record.settings, model=model, runs_dir=runs_dir, **changes)
    return _run(config, sinks, record.endpoint, stored.run_id)


__all__ = [
    "RESEARCHER_ROLES",
    "EmptyCorpusError",
    "ReviewConfig",
    "ReviewOutcome",
    "build_swarm",
    "decompose",
    "resume_review",
    "run_review",
]
