"""What each sub-agent of the literature review returns (both policies), and its subtask id.

Each sub-agent's output says who made it (`made_by`: the model, the offline procedure, or
the procedure after the model failed — `agents.fallback.Provenance`). The ids are built and
recognised only through the helpers below, so the pipeline, its files
and its grader (`agents.review.grader`) cannot drift apart when an id changes.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from kimmy_swarm.agents.fallback import Provenance

#: The planner's subtask: its output is the `ReviewPlan`.
PLAN_ID = "plan"
#: The synthesizer's subtask: its output is the `ReviewProse`.
SYNTHESIZE_ID = "synthesize"
READ_PREFIX = "read:"
WRITE_PREFIX = "write:"
CHECK_PREFIX = "check:"


def read_id(doc_id: str) -> str:
    """The researcher's subtask for one document: its output is `PaperNotes`."""
    return f"{READ_PREFIX}{doc_id}"


def write_id(theme_id: str) -> str:
    """The writer's subtask for one theme: its output is a `Section`."""
    return f"{WRITE_PREFIX}{theme_id}"


def check_id(theme_id: str) -> str:
    """The fact-checker's subtask for one theme: its output is a `SectionCheck`."""
    return f"{CHECK_PREFIX}{theme_id}"


def is_check_id(subtask_id: str) -> bool:
    """Whether `subtask_id` is a fact-checker's (`check_id`)."""
    return subtask_id.startswith(CHECK_PREFIX)


def theme_of_check(subtask_id: str) -> str:
    """The theme id a `check_id` was built from."""
    return subtask_id.removeprefix(CHECK_PREFIX)


class _Out(BaseModel):
    model_config = ConfigDict(extra="ignore")


class ThemePlan(_Out):
    id: str
    label: str
    terms: list[str] = Field(default_factory=list)
    doc_ids: list[str]


class ReviewPlan(_Out, Provenance):
    """The planner's decomposition: which papers are relevant, grouped into themes."""

    topic: str
    relevant: list[str]
    themes: list[ThemePlan]
    corpus_size: int = 0
    #: Documents relevant to the topic before the `max_papers` cap (None: not searched).
    matched: int | None = None
    notes: list[str] = Field(default_factory=list)
    #: The letter each relevant document is cited with where another is cited alike
    #: ("Li et al. (2017a)" / "(2017b)": `_prose.year_labels`); documents cited by names
    #: and year alone are not in it.
    year_labels: dict[str, str] = Field(default_factory=dict)


class Finding(_Out):
    """One key finding of a paper, with the passage it rests on, quoted exactly."""

    text: str = Field(min_length=1)
    passage: str = Field(min_length=1)
    start: int | None = None
    end: int | None = None
    #: What the passage states: the paper's contribution, a result, or an open question
    #: (a limitation, future work); "" when not said.
    kind: Literal["contribution", "result", "open_question", ""] = ""


class PaperNotes(_Out, Provenance):
    """A researcher's notes on one paper."""

    doc_id: str
    title: str
    year: int | None = None
    authors: list[str] = Field(default_factory=list)
    contribution: str = ""
    findings: list[Finding] = Field(default_factory=list)
    terms: list[str] = Field(default_factory=list)
    #: Where the record says the paper can be read, and how often it is cited (if it says).
    url: str | None = None
    citations: int | None = None
    #: How the paper stands at its venue by its record's decision ("accepted", "workshop",
    #: "rejected", "withdrawn"; "" when the record has none): `agents.review._venue`.
    status: str = ""
    #: The letter after the year that tells this paper from another cited alike ("a";
    #: `ReviewPlan.year_labels`), "" for most.
    year_label: str = ""


class Claim(_Out):
    """A sentence of the review and the documents it cites."""

    id: str
    text: str = Field(min_length=1)
    cited: list[str] = Field(min_length=1)
    #: The paragraph of the section the claim belongs to (a shared method, "Results",
    #: "Open questions"); "" for the section's general paragraph.
    group: str = ""


class ComparisonRow(_Out):
    doc_id: str
    title: str
    year: int | None = None
    approach: str = ""
    key_result: str = ""
    citations: int | None = None
    #: The paper's standing at its venue (`PaperNotes.status`).
    status: str = ""


class Section(_Out, Provenance):
    """A writer's section on one theme."""

    theme_id: str
    title: str
    summary: str = ""
    claims: list[Claim] = Field(default_factory=list)
    rows: list[ComparisonRow] = Field(default_factory=list)


class ClaimCheck(_Out):
    """A fact-checker's verdict on one claim, with the supporting passage quoted exactly."""

    claim_id: str
    #: The claim's text and citations, as the section has them (set from the section when
    #: a verdict leaves them out: `agents.review.roles`).
    claim: str = ""
    cited: list[str] = Field(default_factory=list)
    verdict: Literal["supported", "unsupported"]
    doc_id: str | None = None
    passage: str = ""
    start: int | None = None
    end: int | None = None
    score: float = 0.0
    missing: list[str] = Field(default_factory=list)
    reason: str = ""
    #: How the claim changes the passage's negations, hedges and caveats ("drops 'may'").
    polarity: list[str] = Field(default_factory=list)
    #: Whether the claim restates its passage word for word (only the grammatical person
    #: changed); None when the checker does not say (a model's check).
    verbatim: bool | None = None
    #: What the checker checked ("attribution", "numbers", "polarity", "wording").
    checked: list[str] = Field(default_factory=list)


class SectionCheck(_Out, Provenance):
    theme_id: str
    checks: list[ClaimCheck] = Field(default_factory=list)


class ReviewProse(_Out, Provenance):
    """The synthesizer's prose; claims and tables are assembled from the checked sections."""

    title: str = Field(min_length=1)
    introduction: str = Field(min_length=1)
    section_summaries: dict[str, str] = Field(default_factory=dict)
    conclusion: str = ""


__all__ = [
    "CHECK_PREFIX",
    "PLAN_ID",
    "READ_PREFIX",
    "SYNTHESIZE_ID",
    "WRITE_PREFIX",
    "Claim",
    "ClaimCheck",
    "ComparisonRow",
    "Finding",
    "PaperNotes",
    "ReviewPlan",
    "ReviewProse",
    "Section",
    "SectionCheck",
    "ThemePlan",
    "check_id",
    "is_check_id",
    "read_id",
    "theme_of_check",
    "write_id",
]
