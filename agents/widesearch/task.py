"""`WideTask`: a WideSearch-style wide task over the ICLR 2017 paper corpus.

A wide task asks for *every* paper that meets a condition, as a table: the answer is many
rows, each of which can be checked against the data. The condition is a set of key phrases
(the title, the abstract or either mentions one of them) and filters on the records' fields:
a decision, numeric thresholds (citations, rating, author count, rank, …) and e-mail domains.
The columns are fields of the papers. The ground truth is computed from the same records the
agents read.

    task = WIDE_TASKS["rl_papers"]
    papers = load_papers("../shared/data/papers/iclr2017_citations_in_2018.json")
    rows = task.ground_truth(papers)          # 55 rows, in corpus order
    task.goal()                               # the goal in words, for the orchestrator
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from kimmy_swarm.agents.tools.authors import parse_authors
from kimmy_swarm.agents.tools.corpus import Document, load_corpus
from kimmy_swarm.agents.tools.search import mentions_any
from kimmy_swarm.agents.widesearch.answer import sort_rows

#: A column a wide task may ask for: every field of the records but the abstract and the
#: per-review lists, plus the first author and the author count.
Column: TypeAlias = Literal[
    "title", "first_author", "authors", "n_authors", "decision", "citations", "rating",
    "rank", "variance", "karpathy", "emails", "url",
]  # fmt: skip
#: The numeric fields a filter may test.
NumericField: TypeAlias = Literal[
    "citations", "rating", "n_authors", "rank", "variance", "karpathy"
]
#: How a filter compares a field with its value.
Comparison: TypeAlias = Literal[">", ">=", "<", "<=", "=="]
#: Where the key phrases are looked for.
Scope: TypeAlias = Literal["title_or_abstract", "title", "abstract"]
#: One table row: a value per requested column (str, or int / float for numbers).
Row: TypeAlias = dict[str, str | int | float]

#: What each column holds, as the goal says it.
COLUMN_MEANINGS: dict[str, str] = {
    "title": "the paper's title as in the corpus",
    "first_author": "the first listed author's full name",
    "authors": "every author's full name, in order, separated by commas",
    "n_authors": "the number of authors, an integer",
    "decision": "the OpenReview decision, e.g. 'Accept (Poster)' or 'Reject'",
    "citations": "the citation count recorded in the corpus, an integer",
    "rating": "the confidence-weighted mean reviewer rating, to 2 decimals",
    "rank": "the paper's rank by rating (1 is the best), an integer",
    "variance": "the standard deviation of the reviewers' ratings, to 2 decimals",
    "karpathy": "the 'karpathy' count recorded in the corpus, an integer",
    "emails": "the authors' e-mail domains, separated by commas",
    "url": "the paper's OpenReview URL",
}
#: A numeric field in words (for conditions).
FIELD_WORDS: dict[str, str] = {
    "citations": "citation count",
    "rating": "mean rating",
    "n_authors": "number of authors",
    "rank": "rank by rating",
    "variance": "rating standard deviation",
    "karpathy": "karpathy count",
}
_COMPARISON_WORDS = {">": "above", ">=": "at least", "<": "below", "<=": "at most", "==": "exactly"}
#: Corpus defaults for the ICLR 2017 file (it has no year or venue field).
ICLR_DEFAULTS: dict[str, Any] = {"year": 2017, "venue": "ICLR 2017"}
#: Columns and fields that come from a paper's metadata, not from its title, authors or
#: abstract.
METADATA_COLUMNS = frozenset({"decision", "citations", "rating", "rank", "variance", "karpathy",
                              "emails"})  # fmt: skip


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
    rank: int | None = None
    variance: float | None = None
    karpathy: int | None = None
    emails: tuple[str, ...] = ()
    url: str = ""

    @classmethod
    def from_document(cls, doc: Document) -> Paper:
        """A paper from a corpus document (the metadata fields live in `doc.meta`)."""
        meta = {**doc.meta, "url": doc.url} if doc.url else doc.meta
        return cls.from_parts(doc.id, doc.title, doc.authors, doc.text, meta)

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
        rating, variance = meta.get("rating"), meta.get("variance")
        return cls(
            id=doc_id,
            title=" ".join(title.split()),
            authors=parse_authors(list(authors)),
            abstract=abstract,
            decision=str(meta.get("decision") or ""),
            citations=int(meta.get("citations") or 0),
            rating=round(float(rating), 2) if rating not in (None, "") else None,
            rank=int(meta["rank"]) if meta.get("rank") not in (None, "") else None,
            variance=round(float(variance), 2) if variance not in (None, "") else None,
            karpathy=int(meta["karpathy"]) if meta.get("karpathy") not in (None, "") else None,
            emails=tuple(str(e).lower() for e in meta.get("emails") or ()),
            url=str(meta.get("url") or f"https://openreview.net/forum?id={doc_id}"),
        )

    @property
    def first_author(self) -> str:
        return self.authors[0] if self.authors else ""

    @property
    def n_authors(self) -> int:
        return len(self.authors)

    def number(self, field: str) -> float | None:
        """A numeric field's value (None where the record has none)."""
        value = getattr(self, field)
        return None if value is None else float(value)

    def has_domain(self, domain: str) -> bool:
        """Whether an author's e-mail domain is `domain` or under it (`cs.x.edu` is `x.edu`)."""
        domain = domain.lower().lstrip("@.")
        return any(e == domain or e.endswith("." + domain) for e in self.emails)


def column_value(paper: Paper, column: str) -> str | int | float:
    """The value of one column for `paper` ("" where the record has none)."""
    if column == "authors":
        return ", ".join(paper.authors)
    if column == "emails":
        return ", ".join(paper.emails)
    value = getattr(paper, column)
    return "" if value is None else value


def load_papers(path: str | Path) -> list[Paper]:
    """The papers of a corpus file or folder, read by `load_corpus` (so ids match its doc ids).

    The placeholder "No Title" record of the ICLR file has no text, so the corpus skips it.
    """
    corpus = load_corpus(path, defaults=ICLR_DEFAULTS)
    return [Paper.from_document(d) for d in corpus]


def _quoted(items: Iterable[str], joiner: str) -> str:
    parts = [f"'{x}'" for x in items]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + f" {joiner} {parts[-1]}"


class FieldFilter(BaseModel):
    """A threshold on a numeric field: `citations > 100`, `n_authors == 1`, `rating >= 7`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    field: NumericField
    op: Comparison
    value: float

    def holds(self, paper: Paper) -> bool:
        """Whether `paper` passes (a paper without the field does not)."""
        have = paper.number(self.field)
        if have is None:
            return False
        return {
            ">": have > self.value, ">=": have >= self.value, "<": have < self.value,
            "<=": have <= self.value, "==": have == self.value,
        }[self.op]  # fmt: skip

    def words(self) -> str:
        value = int(self.value) if float(self.value).is_integer() else self.value
        return f"whose {FIELD_WORDS[self.field]} is {_COMPARISON_WORDS[self.op]} {value}"


class WideTask(BaseModel):
    """A condition on papers and the columns to report for each paper that meets it.

    Attributes:
        name: a short id (the preset's key).
        phrases: `where` mentions at least one (case-insensitive, whole words); () for no
            condition on the text (then some other condition is required).
        where: the title, the abstract, or either.
        decision: when set, only papers whose decision starts with it (case-insensitive):
            "Accept" keeps "Accept (Oral)" and "Accept (Poster)".
        filters: thresholds on numeric fields, all of which must hold.
        email_domains: when set, an author's e-mail domain is one of these (or under one).
        columns: the table's columns; `title` is required (rows are matched by title).
        sort_by: a column the table is sorted by (None: corpus order); `descending`: its
            largest first. Grading ignores the order.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    phrases: tuple[str, ...] = ()
    where: Scope = "title_or_abstract"
    decision: str | None = None
    filters: tuple[FieldFilter, ...] = ()
    email_domains: tuple[str, ...] = ()
    columns: tuple[Column, ...] = ("title", "first_author", "decision", "citations")
    sort_by: Column | None = None
    descending: bool = False

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
        if self.sort_by is not None and self.sort_by not in self.columns:
            raise ValueError(f"sort_by {self.sort_by!r} is not one of the columns {self.columns}")
        if len(set(self.columns)) != len(self.columns):
            raise ValueError(f"columns repeat a name: {self.columns}")
        if self.decision is not None and not self.decision.strip():
            raise ValueError("decision must be None or a non-blank prefix such as 'Accept'")
        if not (self.phrases or self.decision or self.filters or self.email_domains):
            raise ValueError(
                "a wide task needs a condition: phrases, a decision, filters or email_domains"
            )
        return self

    @property
    def needs_metadata(self) -> bool:
        """Whether deciding a row needs the paper's metadata (decision, numbers, e-mails)."""
        fields = {f.field for f in self.filters} | set(self.columns)
        if self.email_domains:
            fields.add("emails")
        return self.decision is not None or bool(METADATA_COLUMNS & fields)

    def mentions(self, title: str, abstract: str) -> bool:
        """Whether the text (`where`) mentions one of the phrases (True without phrases)."""
        if not self.phrases:
            return True
        texts = {"title": (title,), "abstract": (abstract,)}.get(self.where, (title, abstract))
        return mentions_any(self.phrases, texts)

    def matches(self, paper: Paper) -> bool:
        """Whether `paper` meets the task's condition."""
        if self.decision is not None and not paper.decision.lower().startswith(
            self.decision.strip().lower()
        ):
            return False
        if not all(f.holds(paper) for f in self.filters):
            return False
        if self.email_domains and not any(paper.has_domain(d) for d in self.email_domains):
            return False
        return self.mentions(paper.title, paper.abstract)

    def row(self, paper: Paper) -> Row:
        """The requested columns of `paper`."""
        return {c: column_value(paper, c) for c in self.columns}

    def ground_truth(self, papers: Iterable[Paper]) -> list[Row]:
        """The rows of every paper that meets the condition, in the given (corpus) order."""
        return [self.row(p) for p in papers if self.matches(p)]

    def condition(self) -> str:
        """The condition in words (shared by the goal and the extractor's prompt)."""
        parts = []
        if self.phrases:
            where = {"title_or_abstract": "title or abstract"}.get(self.where, self.where)
            parts.append(
                f"whose {where} mentions {_quoted(self.phrases, 'or')} (whole words, any case)"
            )
        if self.decision is not None:
            parts.append(f"whose decision starts with '{self.decision.strip()}'")
        parts += [f.words() for f in self.filters]
        if self.email_domains:
            parts.append(
                f"with an author whose e-mail domain is {_quoted(self.email_domains, 'or')}"
            )
        return " and ".join(parts)

    def goal(self) -> str:
        """The goal in words, as the orchestrator gets it (deterministic: graders compare it)."""
        columns = "; ".join(f"{c}: {COLUMN_MEANINGS[c]}" for c in self.columns)
        order = ""
        if self.sort_by is not None:
            order = f" Sort the rows by {self.sort_by}, {self.direction} first."
        return (
            f"For every ICLR 2017 paper in the corpus {self.condition()}, give a table with "
            f"these columns: {columns}. One row per paper; include every such paper and no "
            f"other.{order} Answer with a Markdown table whose header row names the columns."
        )

    @property
    def direction(self) -> str:
        return "largest" if self.descending else "smallest"

    def ordered(self, rows: list[Row]) -> list[Row]:
        """`rows` in the task's order (`sort_by`; rows without a value last), else as given."""
        if self.sort_by is None:
            return list(rows)
        return sort_rows(rows, self.sort_by, descending=self.descending)  # type: ignore[arg-type]


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
    "FIELD_WORDS",
    "ICLR_DEFAULTS",
    "METADATA_COLUMNS",
    "WIDE_TASKS",
    "Column",
    "Comparison",
    "FieldFilter",
    "NumericField",
    "Paper",
    "Row",
    "Scope",
    "WideTask",
    "column_value",
    "load_papers",
]
