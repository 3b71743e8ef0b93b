"""How the review's files cite: the documents cited, their order in the reference list,
each claim's citations with the records' URLs, and the claims kept in paragraphs.

Shared by review.md (`agents.review.outputs`) and report.html (`agents.review.report`), so
the two files cite and group alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from kimmy_swarm.agents.review._prose import attribution, parenthetical, split_attribution, surname
from kimmy_swarm.agents.review._venue import standing_of

if TYPE_CHECKING:
    from kimmy_swarm.agents.review.schemas import Claim, ClaimCheck, Section
    from kimmy_swarm.agents.tools.corpus import Corpus

#: Claims in one paragraph at most; a longer group goes on in unlabelled paragraphs.
PARAGRAPH_CLAIMS = 6


def cited_ids(sections: Sequence[Section], corpus: Corpus) -> list[str]:
    """Every document a section compares or a claim cites (ids of the corpus, sorted)."""
    ids = {r.doc_id for s in sections for r in s.rows}
    ids |= {d for s in sections for c in s.claims for d in c.cited}
    return sorted(d for d in ids if d in corpus)


def reference_order(doc_ids: list[str], corpus: Corpus) -> list[str]:
    """`doc_ids` as a reference list orders them: by first author's family name, year, title."""

    def key(doc_id: str) -> tuple[str, int, str]:
        doc = corpus.get(doc_id)
        first = surname(doc.authors[0]).lower() if doc.authors else doc.title.lower()
        return first, doc.year or 0, doc.title.lower()

    return sorted(doc_ids, key=key)


def kept_paragraphs(
    section: Section, checks: Mapping[str, ClaimCheck]
) -> list[tuple[str, list[Claim]]]:
    """The section's supported claims as paragraphs: (group name, claims), in order; a
    group of more than `PARAGRAPH_CLAIMS` claims continues in paragraphs named ""."""
    groups: dict[str, list[Claim]] = {}
    for claim in section.claims:
        check = checks.get(claim.id)
        if check is not None and check.verdict == "supported":
            groups.setdefault(claim.group, []).append(claim)
    return [
        (group if i == 0 else "", claims[i : i + PARAGRAPH_CLAIMS])
        for group, claims in groups.items()
        for i in range(0, len(claims), PARAGRAPH_CLAIMS)
    ]


def citation_links(
    claim: Claim, corpus: Corpus, labels: Mapping[str, str] | None = None
) -> tuple[str, list[tuple[str, str | None]]]:
    """(the claim's text, [(citation, URL or None)]): the citation its text names first,
    then one (author, year) citation for each cited document the text does not name, with
    the letter `labels` gives it ("Li et al., 2017a")."""
    labels = labels or {}
    subject, _ = split_attribution(claim.text)
    cites: list[tuple[str, str | None]] = []
    for i, doc_id in enumerate(claim.cited):
        doc = corpus.get(doc_id) if doc_id in corpus else None
        url = doc.url if doc is not None else None
        if i == 0 and subject:
            cites.append((subject, url))
        elif doc is not None:
            who = attribution(
                doc.authors,
                doc.year,
                doc.title,
                standing_of(doc.meta),
                label=labels.get(doc_id, ""),
            )
            cites.append((parenthetical(who)[1:-1], url))
        else:
            cites.append((doc_id, None))
    return claim.text, cites


__all__ = [
    "PARAGRAPH_CLAIMS",
    "citation_links",
    "cited_ids",
    "kept_paragraphs",
    "reference_order",
]
