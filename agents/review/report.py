"""report.html of a review: the same content as review.md, as one self-contained page.

Laid out to be read on a laptop screen: each theme is prose (its synthesis, then its claims
in paragraphs) with every citation an author–year link to the record's URL; the passage
each claim was checked against is shown once, as evidence under the theme, with the
checked span highlighted in its context; the comparison table has fixed column widths and
wraps long text. The template is `agents/templates/review.html.j2` (autoescaped: every
string of the run is shown as text, never as markup).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2

from kimmy_swarm.agents.review._citations import (
    citation_links,
    cited_ids,
    kept_paragraphs,
    reference_order,
)
from kimmy_swarm.agents.review._prose import attribution, parenthetical, split_attribution
from kimmy_swarm.agents.review._venue import standing_of, venue_note
from kimmy_swarm.agents.review.content import ReviewContent

if TYPE_CHECKING:
    from kimmy_swarm.agents.review.schemas import Claim, ClaimCheck
    from kimmy_swarm.agents.tools.corpus import Corpus, Document

_TEMPLATES = Path(__file__).resolve().parent.parent / "templates"
#: Characters of the source shown on each side of a checked passage.
CONTEXT_CHARS = 180


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(_TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def _anchor(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-") or "x"


def emphasis(text: str) -> list[tuple[str, bool]]:
    """`text` cut into (segment, emphasized) around Markdown's *emphasis*."""
    pieces = re.split(r"\*([^*\n]+)\*", text)
    return [(p, i % 2 == 1) for i, p in enumerate(pieces) if p]


def _short_cite(doc: Document, labels: Mapping[str, str]) -> str:
    status = standing_of(doc.meta)
    who = attribution(doc.authors, doc.year, doc.title, status, label=labels.get(doc.id, ""))
    return parenthetical(who)[1:-1]


@dataclass
class _ClaimView:
    """A claim split around its attribution, so the template can link the attribution."""

    before: str
    subject: str
    after: str
    href: str | None
    doc_id: str
    number: int
    anchor: str
    evidence: bool
    extra: list[dict[str, str]] = field(default_factory=list)
    #: The closing punctuation, after any citations the text itself does not name.
    end: str = ""


def _href(doc_id: str, corpus: Corpus) -> str:
    """The record's URL, else the reference's anchor on this page."""
    doc = corpus.get(doc_id) if doc_id in corpus else None
    return doc.url if doc is not None and doc.url else f"#ref-{_anchor(doc_id)}"


def _claim_view(
    claim: Claim, number: int, corpus: Corpus, evidence: bool, labels: Mapping[str, str]
) -> _ClaimView:
    text, cites = citation_links(claim, corpus, labels)
    pairs = list(zip(claim.cited, (c for c, _ in cites), strict=True))
    subject = cites[0][0] if cites and split_attribution(text)[0] else ""
    at = text.find(subject) if subject else -1
    extra = [
        {"text": cite, "href": _href(doc_id, corpus), "doc_id": doc_id}
        for doc_id, cite in (pairs[1:] if at >= 0 else pairs)
    ]
    end = text[-1] if extra and text.endswith((".", "!")) else ""
    text = text[: len(text) - len(end)]
    if at < 0:  # the text names no source: every citation follows it
        return _ClaimView(
            text, "", "", None, claim.cited[0], number, _anchor(claim.id), evidence, extra, end
        )
    return _ClaimView(
        before=text[:at],
        subject=subject,
        after=text[at + len(subject) :],
        href=_href(claim.cited[0], corpus),
        doc_id=claim.cited[0],
        number=number,
        anchor=_anchor(claim.id),
        evidence=evidence,
        extra=extra,
        end=end,
    )


def _evidence(
    check: ClaimCheck, number: int, corpus: Corpus, labels: Mapping[str, str]
) -> dict[str, Any]:
    """The checked passage in its context (start/end are offsets into the document)."""
    doc = corpus.get(check.doc_id) if check.doc_id and check.doc_id in corpus else None
    before = after = ""
    if doc is not None and check.start is not None and check.end is not None:
        lo = max(0, check.start - CONTEXT_CHARS)
        hi = min(len(doc.text), check.end + CONTEXT_CHARS)
        before = doc.text[lo : check.start]
        after = doc.text[check.end : hi]
        if lo > 0:
            before = "… " + before.split(" ", 1)[-1]
        if hi < len(doc.text):
            after = after.rsplit(" ", 1)[0] + " …"
    source = f"{_short_cite(doc, labels)}, “{doc.title}”" if doc is not None else str(check.doc_id)
    return {
        "number": number,
        "anchor": _anchor(check.claim_id),
        "source": source,
        "href": doc.url if doc is not None else None,
        "before": " ".join(before.split()) + (" " if before.strip() else ""),
        "passage": " ".join(check.passage.split()),
        "after": (" " if after.strip() else "") + " ".join(after.split()),
        "score": f"{check.score:.2f}",
    }


def _themes(content: ReviewContent, corpus: Corpus) -> list[dict[str, Any]]:
    themes = []
    number = 0
    for section in content.sections:
        paragraphs, evidence = [], []
        for group, claims in kept_paragraphs(section, content.checks):
            views = []
            for claim in claims:
                number += 1
                check = content.checks[claim.id]
                labels = content.year_labels
                views.append(_claim_view(claim, number, corpus, bool(check.passage), labels))
                if check.passage:
                    evidence.append(_evidence(check, number, corpus, labels))
            paragraphs.append({"lead": group, "claims": views})
        dropped = sum(
            1
            for c in section.claims
            if (content.checks.get(c.id) is None or content.checks[c.id].verdict != "supported")
        )
        themes.append(
            {
                "anchor": f"theme-{_anchor(section.theme_id)}",
                "title": section.title,
                "summary": emphasis(
                    content.prose.section_summaries.get(section.theme_id) or section.summary
                ),
                "paragraphs": paragraphs,
                "evidence": evidence,
                "status": "ok" if dropped == 0 else "warning",
                "dropped": dropped,
            }
        )
    return themes


def _rows(content: ReviewContent, corpus: Corpus) -> list[dict[str, Any]]:
    rows = []
    for section in content.sections:
        for r in section.rows:
            doc = corpus.get(r.doc_id) if r.doc_id in corpus else None
            rows.append(
                {
                    "title": r.title,
                    "href": doc.url if doc is not None else None,
                    "cite": _short_cite(doc, content.year_labels) if doc is not None else r.doc_id,
                    "theme": section.title,
                    "approach": r.approach,
                    "key_result": r.key_result,
                    "citations": r.citations,
                }
            )
    return rows


def _references(
    doc_ids: list[str], corpus: Corpus, labels: Mapping[str, str]
) -> list[dict[str, Any]]:
    refs = []
    for doc_id in doc_ids:
        doc = corpus.get(doc_id)
        refs.append(
            {
                "id": doc.id,
                "anchor": _anchor(doc.id),
                "authors": ", ".join(a.replace("*", "") for a in doc.authors) or "Anonymous",
                "year": f"{doc.year if doc.year is not None else 'n.d.'}{labels.get(doc.id, '')}",
                "title": doc.title,
                "href": doc.url,
                "venue": venue_note(doc.venue, doc.meta.get("decision")),
            }
        )
    return refs


def _check_summary(checks: list[ClaimCheck]) -> list[tuple[str, str]]:
    """What the fact-check's count says: a claim that quotes its passage word for word could
    only fail on its attribution, so it is counted apart from claims checked against theirs
    (a blind reader: "Claims supported: 21 / 21" is a check that cannot fail)."""
    supported = [c for c in checks if c.verdict == "supported"]
    quoted = sum(c.verbatim is True for c in supported)
    out = []
    if quoted:
        out.append(
            ("Claims quoted word for word (attribution checked)", f"{quoted} / {len(checks)}")
        )
    if len(supported) > quoted or not quoted:
        label = "Other claims supported" if quoted else "Claims supported by their passage"
        out.append((label, f"{len(supported) - quoted} / {len(checks)}"))
    return out


def render_review_html(content: ReviewContent, corpus: Corpus) -> str:
    """The review as HTML: introduction, themes, comparison, conclusion, flagged claims,
    problems, references."""
    themes = _themes(content, corpus)
    rows = _rows(content, corpus)
    flagged = [
        {"claim": c.claim, "reason": c.reason or "unsupported"}
        for c in content.checks.values()
        if c.verdict != "supported"
    ]
    problems = list(content.problems) + [
        f"{sid}: made by the offline procedure after the model failed: {why}"
        for sid, why in content.fallbacks.items()
    ]
    cited = reference_order(cited_ids(content.sections, corpus), corpus)
    refs = _references(cited, corpus, content.year_labels)
    toc = [{"anchor": "introduction", "title": "Introduction", "status": "ok"}]
    toc += [{"anchor": t["anchor"], "title": t["title"], "status": t["status"]} for t in themes]
    toc += [{"anchor": "comparison", "title": "Comparison", "status": "ok"}] if rows else []
    if content.prose.conclusion:
        toc.append({"anchor": "conclusion", "title": "Conclusion", "status": "ok"})
    if flagged:
        toc.append({"anchor": "flagged-claims", "title": "Flagged claims", "status": "warning"})
    if problems:
        toc.append({"anchor": "problems", "title": "Problems", "status": "error"})
    toc.append({"anchor": "references", "title": "References", "status": "ok"})
    summary = [("Themes", str(len(content.sections))), ("Documents", str(len(cited)))]
    summary += _check_summary(list(content.checks.values()))
    return (
        _environment()
        .get_template("review.html.j2")
        .render(
            title=content.prose.title,
            summary=summary,
            toc=toc,
            introduction=content.prose.introduction,
            themes=themes,
            rows=rows,
            with_citations=any(r["citations"] is not None for r in rows),
            conclusion=[p.strip() for p in content.prose.conclusion.split("\n\n") if p.strip()],
            flagged=flagged,
            problems=problems,
            references=refs,
        )
    )


__all__ = ["CONTEXT_CHARS", "emphasis", "render_review_html"]
