"""One theme's section, offline: a synthesis paragraph, then its claims in paragraphs.

The summary says what the theme's papers share (phrases several of them use, with the
papers that use them) and how they differ (the lines of work they fall into, how many report
numbers); the claims follow grouped — a paragraph per shared line of work, one for the other
papers, one setting the reported results side by side, one for the open questions the
papers name. Every claim is a researcher's quoted finding, attributed to its paper
(`_prose.third_person`) and opened by a connector where it follows another.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kimmy_swarm.agents.review._prose import (
    attribution,
    opens_with_source,
    parenthetical,
    with_connector,
)
from kimmy_swarm.agents.review._synthesis import (
    SharedPhrase,
    cite_list,
    group_by_phrase,
    shared_phrases,
    states_measure,
)
from kimmy_swarm.agents.review.schemas import Claim, Finding, PaperNotes

#: Paragraph names of the claims that are not grouped by a shared phrase.
OTHER_WORK, RESULTS, OPEN_QUESTIONS = "Other lines of work", "Results", "Open questions"
#: What `RESULTS` is called for documents without authors (documentation states no results).
DETAILS = "Details"
#: Connectors by position in a paragraph (none for the first sentence, then every other).
_IN_GROUP = {1: "Similarly", 3: "Relatedly", 5: "Along the same line"}
_IN_OTHER = {2: "Elsewhere", 4: "Also"}
_IN_RESULTS = {1: "By comparison", 3: "By comparison", 5: "In contrast"}
_IN_OPEN = {1: "Also", 2: "Further"}


@dataclass(frozen=True)
class SectionLimits:
    """How much of a theme's notes goes into its section."""

    max_results: int = 6
    max_open_questions: int = 3
    max_groups: int = 4

    def __post_init__(self) -> None:
        for name in ("max_results", "max_open_questions", "max_groups"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")


def short_cite(notes: PaperNotes) -> str:
    """ "Zhang et al., 2017" (or "“json”") for a paper's notes."""
    return parenthetical(attribution(notes.authors, notes.year, notes.title))[1:-1]


def _kind(notes: PaperNotes, i: int, finding: Finding) -> str:
    if finding.kind:
        return finding.kind
    return "contribution" if i == 0 else "result"


def _noun(papers: Sequence[PaperNotes]) -> str:
    """ "papers" for authored work, "documents" for records without authors (docs)."""
    return "papers" if any(p.authors for p in papers) else "documents"


def _text_of(notes: PaperNotes) -> str:
    return " ".join([notes.title, notes.contribution, *(f.passage for f in notes.findings)])


def _phrase_list(phrases: Sequence[SharedPhrase], cite: dict[str, str]) -> str:
    parts = [
        f"*{p.phrase}* ({len(p.doc_ids)}: {cite_list([cite[d] for d in p.doc_ids])[1:-1]})"
        for p in phrases
    ]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _summary(
    papers: Sequence[PaperNotes],
    phrases: Sequence[SharedPhrase],
    groups: Sequence[SharedPhrase],
    left: Sequence[str],
    with_numbers: int,
    terms: Sequence[str],
) -> str:
    cite = {n.doc_id: short_cite(n) for n in papers}
    years = sorted({n.year for n in papers if n.year is not None})
    span = f" from {years[0]} to {years[-1]}" if len(years) > 1 else ""
    span = span or (f" from {years[0]}" if years else "")
    n = len(papers)
    noun = _noun(papers)
    out = [f"{n} {noun if n != 1 else noun[:-1]}{span}."]
    if phrases:
        shared = _phrase_list(phrases[:3], cite)
        out.append(f"Common ground, in the {noun}' own words: {shared}.")
    elif terms:
        out.append(f"They share the theme's vocabulary ({', '.join(terms[:5])}) but no phrase.")
    if groups:
        lines = [f"{p.phrase} ({len(p.doc_ids)})" for p in groups]
        if left:
            lines.append(f"{'other lines' if noun == 'papers' else 'other ' + noun} ({len(left)})")
        joined = lines[0] if len(lines) == 1 else ", ".join(lines[:-1]) + " and " + lines[-1]
        what = "the line of work they take up" if noun == "papers" else "what they cover"
        out.append(f"They differ in {what}: {joined}.")
    if not any(p.authors for p in papers):
        pass  # documentation states no results to set side by side
    elif with_numbers >= 2:
        out.append(
            f"{with_numbers} of them give numbers for their results, set side by side under "
            "Results below; each was measured on that paper's own tasks and data."
        )
    elif with_numbers == 1:
        out.append("One of them states numbers for its results (below).")
    return " ".join(out)


def _paragraph(findings: Sequence[str], connectors: dict[int, str]) -> list[str]:
    """The findings in order, a connector before those at the connectors' positions that
    open with their source (a sentence with its own opening keeps it)."""
    return [
        with_connector(text, connectors[i]) if i in connectors and opens_with_source(text) else text
        for i, text in enumerate(findings)
    ]


def theme_section(
    theme_id: str,
    papers: Sequence[PaperNotes],
    *,
    topic: str = "",
    terms: Sequence[str] = (),
    limits: SectionLimits = SectionLimits(),
) -> tuple[str, list[Claim]]:
    """(summary, claims) of one theme's section from its papers' notes.

    Args:
        theme_id: claim ids are `<theme_id>.c<n>`.
        papers: the researchers' notes, in theme order.
        topic: the review's topic (its words are not named as shared: all papers share them).
        terms: the theme's vocabulary, said when no phrase is shared.
        limits: how many results and open questions, and how many groups at most.
    """
    by_id = {n.doc_id: n for n in papers}
    phrases = shared_phrases({n.doc_id: _text_of(n) for n in papers}, exclude=topic.lower().split())
    groups, left = group_by_phrase(list(by_id), phrases, max_groups=limits.max_groups)
    first: dict[str, str] = {}
    results: list[tuple[str, str]] = []
    measured: set[str] = set()
    opens: list[tuple[str, str]] = []
    for notes in papers:
        for i, finding in enumerate(notes.findings):
            kind = _kind(notes, i, finding)
            if kind == "contribution" and notes.doc_id not in first:
                first[notes.doc_id] = finding.text
            elif kind == "result" and states_measure(finding.passage):
                measured.add(notes.doc_id)
                results.append((notes.doc_id, finding.text))
            elif kind == "result" and len(papers) <= 6:
                results.append((notes.doc_id, finding.text))
            elif kind == "open_question":
                opens.append((notes.doc_id, finding.text))
    for notes in papers:  # a paper without a contribution sentence leads with a finding
        if notes.doc_id not in first and notes.findings:
            first[notes.doc_id] = notes.findings[0].text
    results.sort(key=lambda r: r[0] not in measured)  # measured results first
    one_each = {}
    for doc_id, text in results:
        one_each.setdefault(doc_id, text)
    results = list(one_each.items())[: limits.max_results]
    opens = opens[: limits.max_open_questions]
    paragraphs: list[tuple[str, list[tuple[str, str]], dict[int, str]]] = [
        (p.phrase[:1].upper() + p.phrase[1:], [(d, first[d]) for d in p.doc_ids if d in first],
         _IN_GROUP)
        for p in groups
    ]  # fmt: skip
    rest = [(d, first[d]) for d in left if d in first]
    other = OTHER_WORK if any(n.authors for n in papers) else "Other documents"
    paragraphs.append((other if groups else "", rest, _IN_OTHER))
    authored = any(n.authors for n in papers)
    paragraphs.append((RESULTS if authored else DETAILS, results, _IN_RESULTS))
    paragraphs.append((OPEN_QUESTIONS, opens, _IN_OPEN))
    claims: list[Claim] = []
    for group, items, connectors in paragraphs:
        texts = _paragraph([t for _, t in items], connectors)
        for (doc_id, _), text in zip(items, texts, strict=True):
            claims.append(
                Claim(id=f"{theme_id}.c{len(claims) + 1}", text=text, cited=[doc_id], group=group)
            )
    with_numbers = len(measured)
    summary = _summary(papers, phrases, groups, left, with_numbers, terms)
    return summary, claims


__all__ = [
    "DETAILS",
    "OPEN_QUESTIONS",
    "OTHER_WORK",
    "RESULTS",
    "SectionLimits",
    "short_cite",
    "theme_section",
]
