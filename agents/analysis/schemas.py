"""What each sub-agent of the batch data analysis returns (both policies), and its subtask id.

Every number an analyst reports is a `NumericFinding` (`agents.tools.finding`), so the
fact-checker can recompute it from the raw data; figures travel as base64 PNG. Each
sub-agent's output says who made it (`made_by`, see `agents.fallback.Provenance`). The ids
are built and recognised only through the helpers below, so the pipeline, its files and its
grader (`agents.analysis.grader`) cannot drift apart when an id changes.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from kimmy_swarm.agents.fallback import Provenance
from kimmy_swarm.agents.tools.finding import NumericFinding, Verdict

#: The question asked of every dataset when the user asks none.
GENERAL_QUESTION = "profile and model the data"

#: The orchestrator's subtask: its output is the `AnalysisPlan`.
PLAN_ID = "plan"
#: The frontend engineer's subtask (report.html): its output is the `ReportPage`.
REPORT_ID = "report"
#: The synthesizer's subtask (report.md): its output is the `ReportText`.
SUMMARIZE_ID = "summarize"
ANALYZE_PREFIX = "analyze:"
CHECK_PREFIX = "check:"


def analyze_id(n: int) -> str:
    """The analyst's subtask for task `n` of the plan: its output is a `DatasetAnalysis`."""
    return f"{ANALYZE_PREFIX}{n}"


def check_id(n: int) -> str:
    """The fact-checker's subtask for task `n`: its output is the `FindingChecks`."""
    return f"{CHECK_PREFIX}{n}"


def is_analyze_id(subtask_id: str) -> bool:
    """Whether `subtask_id` is an analyst's (`analyze_id`)."""
    return subtask_id.startswith(ANALYZE_PREFIX)


def is_check_id(subtask_id: str) -> bool:
    """Whether `subtask_id` is a fact-checker's (`check_id`)."""
    return subtask_id.startswith(CHECK_PREFIX)


def check_of(analysis_id: str) -> str:
    """The fact-checker's subtask of an analyst's subtask (`analyze_id(n)` → `check_id(n)`)."""
    return f"{CHECK_PREFIX}{analysis_id.removeprefix(ANALYZE_PREFIX)}"


class _Out(BaseModel):
    model_config = ConfigDict(extra="ignore")


class DatasetInfo(_Out):
    """A dataset that loaded: its key (the spec as given), shape and designated target."""

    name: str
    rows: int
    columns: int
    target: str | None = None
    description: str = ""


class AnalysisTask(_Out):
    """One (dataset, question) pair: becomes `analyze_id(n)` and `check_id(n)`."""

    n: int = Field(ge=1)
    dataset: str = Field(min_length=1)
    question: str = Field(min_length=1)


class AnalysisPlan(_Out, Provenance):
    """The orchestrator's decomposition: one analysis per (dataset, question)."""

    goal: str = ""
    tasks: list[AnalysisTask] = Field(default_factory=list)
    datasets: list[DatasetInfo] = Field(default_factory=list)
    #: Datasets that could not be loaded, and why (the run goes on without them).
    problems: list[str] = Field(default_factory=list)


class FigureOut(_Out):
    """A figure an analyst made with the `make_figure` tool (PNG filled in by the pipeline)."""

    figure_id: str = Field(min_length=1)
    kind: Literal["histogram", "scatter", "heatmap"]
    title: str = ""
    columns: list[str] = Field(default_factory=list)
    png_base64: str = ""


class DatasetAnalysis(_Out, Provenance):
    """An analyst's report on one dataset for one question.

    `findings` holds every reported number; `answered` is False when the question cannot
    be answered from this dataset (`reason` says why; the profile is still reported), and
    `status` is `partial` when part of the analysis was impossible (e.g. no numeric
    columns, no predictors for a model).
    """

    dataset: str = Field(min_length=1)
    question: str = Field(min_length=1)
    answered: bool = True
    #: False when the question is about other datasets of the run (it names no column of
    #: this one but does of another): not answered here, and no failure of the run.
    applicable: bool = True
    status: Literal["complete", "partial"] = "complete"
    reason: str = ""
    rows: int = 0
    columns: int = 0
    column_names: list[str] = Field(default_factory=list)
    target: str | None = None
    predictors: list[str] = Field(default_factory=list)
    #: The model family fitted ("ols", "logit", "mnlogit", "poisson", "negbin", "logit_l2",
    #: "mnlogit_l2", "two_part"; `agents.tools.models`) and why it was chosen; None: no model.
    model: str | None = None
    model_reason: str = ""
    summary: str = ""
    #: Choices worth knowing that are no failure: predictors left out as near-duplicates
    #: of chosen ones, a penalised refit after perfect separation.
    notes: list[str] = Field(default_factory=list)
    #: A short reading in words per section of the report ("profile", "distributions",
    #: "correlations", "model", "diagnostics", "groups", ...): templated from the numbers
    #: offline, written by the analyst in model mode.
    interpretation: dict[str, str] = Field(default_factory=dict)
    findings: list[NumericFinding] = Field(default_factory=list)
    figures: list[FigureOut] = Field(default_factory=list)
    problems: list[str] = Field(default_factory=list)


class FindingChecks(_Out, Provenance):
    """The fact-checker's verdicts on every finding of one analysis."""

    analysis: str = Field(min_length=1)
    dataset: str = ""
    verdicts: list[Verdict] = Field(default_factory=list)
    verified: int = 0
    mismatched: int = 0
    unverifiable: int = 0
    problems: list[str] = Field(default_factory=list)


class ReportPage(_Out, Provenance):
    """The frontend engineer's report.html: its title, intro, section order and path."""

    title: str = Field(min_length=1)
    intro: str = ""
    order: list[str] = Field(default_factory=list)
    path: str = ""


class ReportText(_Out, Provenance):
    """The synthesizer's report.md."""

    markdown: str = Field(min_length=1)


__all__ = [
    "ANALYZE_PREFIX",
    "CHECK_PREFIX",
    "GENERAL_QUESTION",
    "PLAN_ID",
    "REPORT_ID",
    "SUMMARIZE_ID",
    "AnalysisPlan",
    "AnalysisTask",
    "DatasetAnalysis",
    "DatasetInfo",
    "FigureOut",
    "FindingChecks",
    "ReportPage",
    "ReportText",
    "analyze_id",
    "check_id",
    "check_of",
    "is_analyze_id",
    "is_check_id",
]
