"""What each sub-agent of the literature review returns (both policies)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class _Out(BaseModel):
    model_config = ConfigDict(extra="ignore")


class ThemePlan(_Out):
    id: str
    label: str
    terms: list[str] = Field(default_factory=list)
    doc_ids: list[str]


class ReviewPlan(_Out):
    """The orchestrator's decomposition: which papers are relevant, grouped into themes."""

    topic: str
    relevant: list[str]
    themes: list[ThemePlan]
    corpus_size: int = 0
    notes: list[str] = Field(default_factory=list)


class Finding(_Out):
    """One key finding of a paper, with the passage it rests on, quoted exactly."""

    text: str = Field(min_length=1)
    passage: str = Field(min_length=1)
    start: int | None = None
    end: int | None = None


class PaperNotes(_Out):
    """A researcher's notes on one paper."""

    doc_id: str
    title: str
    year: int | None = None
    authors: list[str] = Field(default_factory=list)
    contribution: str = ""
    findings: list[Finding] = Field(default_factory=list)
    terms: list[str] = Field(default_factory=list)


class Claim(_Out):
    """A sentence of the review and the documents it cites."""

    id: str
    text: str = Field(min_length=1)
    cited: list[str] = Field(min_length=1)


class ComparisonRow(_Out):
    doc_id: str
    title: str
    year: int | None = None
    approach: str = ""
    key_result: str = ""


class Section(_Out):
    """A writer's section on one theme."""

    theme_id: str
    title: str
    summary: str = ""
    claims: list[Claim] = Field(default_factory=list)
    rows: list[ComparisonRow] = Field(default_factory=list)


class ClaimCheck(_Out):
    """A fact-checker's verdict on one claim, with the supporting passage quoted exactly."""

    claim_id: str
    claim: str
    cited: list[str]
    verdict: Literal["supported", "unsupported"]
    doc_id: str | None = None
    passage: str = ""
    start: int | None = None
    end: int | None = None
    score: float = 0.0
    missing: list[str] = Field(default_factory=list)
    reason: str = ""


class SectionCheck(_Out):
    theme_id: str
    checks: list[ClaimCheck] = Field(default_factory=list)


class ReviewProse(_Out):
    """The synthesizer's prose; claims and tables are assembled from the checked sections."""

    title: str = Field(min_length=1)
    introduction: str = Field(min_length=1)
    section_summaries: dict[str, str] = Field(default_factory=dict)
    conclusion: str = ""


__all__ = [
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
]
