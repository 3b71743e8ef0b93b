"""`WideTask`: a WideSearch-style wide task over the ICLR 2017 paper corpus.

A wide task asks for *every* paper that meets a condition, as a table: the answer is many
rows, each of which can be checked against the data. The condition is a set of key phrases
(the title or abstract mentions any of them) and, optionally, a decision filter; the columns
are fields of the papers. The ground truth is computed from the same records the agents read.

    task = WIDE_TASKS["rl_papers"]
    papers = load_papers("../shared/data/papers/iclr2017_citations_in_2018.json")
    rows = task.ground_truth(papers)          # 55 rows, in corpus order
    task.goal()                               # the goal in words, for the orchestrator
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from kimmy_swarm.agents.tools.authors import parse_authors
from kimmy_swarm.agents.tools.corpus import Document, load_corpus

#: A column a wide task may ask for.
Column: TypeAlias = Literal["title", "first_author", "decision", "citations", "rating"]
#: One table row: a value per requested column (str, or int for `citations`, float for
#: `rating`).
Row: TypeAlias = dict[str, str | int | float]

#: What each column holds, as the goal says it.
COLUMN_MEANINGS: dict[str, str] = {
    "title": "the paper's title as in the corpus",
    "first_author": "the first listed author's full name",
    "decision": "the OpenReview decision, e.g. 'Accept (Poster)' or 'Reject'",
    "citations": "the citation count recorded in the corpus, an integer",
    "rating": "the confidence-weighted mean reviewer rating, to 2 decimals",
}
#: Corpus defaults for the ICLR 2017 file (it has no year or venue field).
ICLR_DEFAULTS: dict[str, Any] = {"year": 2017, "venue": "ICLR 2017"}
#: Columns that come from a paper's metadata, not from its title, authors or abstract.
METADATA_COLUMNS = frozenset({"decision", "citations", "rating"})


@dataclass(frozen=True, slots=True)
class Paper:
    """One ICLR 2017 record: the fields wide tasks read. `id` is the corpus doc id."""

    id: str
    title: str
    authors: tuple[str, ...]
    abstract: str
    decision: str
    citations: int
    rating: float | None

    @classmethod
    def from_document(cls, doc: Document) -> Paper:
        """A paper from a corpus document (the metadata fields live in `doc.meta`)."""
        return cls.from_parts(doc.id, doc.title, doc.authors, doc.text, doc.meta)

    @classmethod
    def from_parts(
        cls,
        doc_id: str,
        title: str,
        authors: Iterable[str],
        abstract: str,
        meta: Mapping[str, Any],
    ) -> Paper:
        """A paper from what `read_document` and `read_metadata` return."""
        rating = meta.get("rating")
        return cls(
            id=doc_id,
            title=" ".join(title.split()),
            authors=parse_authors(list(authors)),
            abstract=abstract,
            decision=str(meta.get("decision") or ""),
            citations=int(meta.get("citations") or 0),
            rating=round(float(rating), 2) if rating not in (None, "") else None,
        )

    @property
    def first_author(self) -> str:
        return self.authors[0] if self.authors else ""


def load_papers(path: str | Path) -> list[Paper]:
    """The papers of a corpus file or folder, read by `load_corpus` (so ids match its doc ids).

    The placeholder "No Title" record of the ICLR file has no text, so the corpus skips it.
    """
    corpus = load_corpus(path, defaults=ICLR_DEFAULTS)
    return [Paper.from_document(d) for d in corpus]


@lru_cache(maxsize=256)
def _patterns(phrases: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    # Whole words only ("agent" does not match "agents"); the words of a phrase may be
    # split by any whitespace (abstracts have line breaks) or a hyphen.
    out = []
    for phrase in phrases:
        words = [re.escape(w) for w in phrase.split()]
        out.append(re.compile(r"(?<!\w)" + r"[\s-]+".join(words) + r"(?!\w)", re.IGNORECASE))
    return tuple(out)


def _quoted(items: Iterable[str], joiner: str) -> str:
    parts = [f"'{x}'" for x in items]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + f" {joiner} {parts[-1]}"


class WideTask(BaseModel):
    """A condition on papers and the columns to report for each paper that meets it.

    Attributes:
        name: a short id (the preset's key).
        phrases: the title or abstract mentions at least one (case-insensitive, whole words).
        decision: when set, only papers whose decision starts with it (case-insensitive):
            "Accept" keeps "Accept (Oral)" and "Accept (Poster)".
        columns: the table's columns; `title` is required (rows are matched by title).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    phrases: tuple[str, ...] = Field(min_length=1)
    decision: str | None = None
    columns: tuple[Column, ...] = ("title", "first_author", "decision", "citations")

    @field_validator("phrases")
    @classmethod
    def _phrases_not_blank(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        cleaned = tuple(" ".join(p.split()) for p in value)
        if not all(cleaned):
            raise ValueError(f"phrases must be non-blank, got {list(value)!r}")
        return cleaned

    @model_validator(mode="after")
    def _columns_ok(self) -> WideTask:
        if "title" not in self.columns:
            raise ValueError(f"columns must include 'title' (rows are keyed by it): {self.columns}")
        if len(set(self.columns)) != len(self.columns):
            raise ValueError(f"columns repeat a name: {self.columns}")
        if self.decision is not None and not self.decision.strip():
            raise ValueError("decision must be None or a non-blank prefix such as 'Accept'")
        return self

    @property
    def needs_metadata(self) -> bool:
        """Whether deciding a row needs the paper's metadata (decision, citations, rating)."""
        return self.decision is not None or bool(METADATA_COLUMNS & set(self.columns))

    def mentions(self, title: str, abstract: str) -> bool:
        """Whether the title or the abstract mentions one of the phrases."""
        return any(p.search(title) or p.search(abstract) for p in _patterns(self.phrases))

    def matches(self, paper: Paper) -> bool:
        """Whether `paper` meets the task's condition."""
        if self.decision is not None and not paper.decision.lower().startswith(
            self.decision.strip().lower()
        ):
            return False
        return self.mentions(paper.title, paper.abstract)

    def row(self, paper: Paper) -> Row:
        """The requested columns of `paper`."""
        values: dict[str, str | int | float] = {
            "title": paper.title,
            "first_author": paper.first_author,
            "decision": paper.decision,
            "citations": paper.citations,
            "rating": paper.rating if paper.rating is not None else "",
        }
        return {c: values[c] for c in self.columns}

    def ground_truth(self, papers: Iterable[Paper]) -> list[Row]:
        """The rows of every paper that meets the condition, in the given (corpus) order."""
        return [self.row(p) for p in papers if self.matches(p)]

    def condition(self) -> str:
        """The condition in words (shared by the goal and the extractor's prompt)."""
        text = f"whose title or abstract mentions {_quoted(self.phrases, 'or')}"
        text += " (whole words, any case)"
        if self.decision is not None:
            text += f" and whose decision starts with '{self.decision.strip()}'"
        return text

    def goal(self) -> str:
        """The goal in words, as the orchestrator gets it (deterministic: graders compare it)."""
        columns = "; ".join(f"{c}: {COLUMN_MEANINGS[c]}" for c in self.columns)
        return (
            f"For every ICLR 2017 paper in the corpus {self.condition()}, give a table with "
            f"these columns: {columns}. One row per paper; include every such paper and no "
            "other. Answer with a Markdown table whose header row names the columns."
        )


#: Named wide tasks (figures are for the 489 usable ICLR 2017 records).
WIDE_TASKS: dict[str, WideTask] = {
    t.name: t
    for t in (
        # 55 papers.
        WideTask(name="rl_papers", phrases=("reinforcement learning",)),
        # 35 papers.
        WideTask(
            name="attention_papers",
            phrases=("attention",),
            columns=("title", "first_author", "citations"),
        ),
        # 17 papers (of 30 that mention a phrase).
        WideTask(
            name="accepted_gan_papers",
            phrases=("generative adversarial", "GAN", "GANs"),
            decision="Accept",
            columns=("title", "first_author", "citations", "rating"),
        ),
        # 55 papers.
        WideTask(
            name="memory_papers",
            phrases=("memory",),
            columns=("title", "first_author", "decision"),
        ),
    )
}


__all__ = [
    "COLUMN_MEANINGS",
    "ICLR_DEFAULTS",
    "METADATA_COLUMNS",
    "WIDE_TASKS",
    "Column",
    "Paper",
    "Row",
    "WideTask",
    "load_papers",
]
