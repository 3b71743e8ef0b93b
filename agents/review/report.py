"""report.html of a review: the same content as review.md, as one self-contained page."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agents.tools.report import ReportSection, Table, render_html

if TYPE_CHECKING:
    from agents.review.outputs import _Parts
    from agents.tools.corpus import Corpus


def render_review_html(parts: _Parts, corpus: Corpus) -> str:
    """The review as HTML: introduction, themes, comparison, flagged claims, references."""
    sections = [ReportSection("Introduction", paragraphs=[parts.prose.introduction])]
    for section in parts.sections:
        kept, dropped = [], 0
        for claim in section.claims:
            check = parts.checks.get(claim.id)
            if check is not None and check.verdict == "supported":
                kept.append([claim.text, ", ".join(claim.cited), check.passage])
            else:
                dropped += 1
        summary = parts.prose.section_summaries.get(section.theme_id) or section.summary
        sections.append(
            ReportSection(
                section.title,
                paragraphs=[summary],
                tables=[Table(["Claim", "Cites", "Supporting passage"], kept, caption="")],
                status="ok" if dropped == 0 else "warning",
            )
        )
    rows = [
        [r.title, r.doc_id, r.year if r.year is not None else "", s.title, r.approach, r.key_result]
        for s in parts.sections
        for r in s.rows
    ]
    if rows:
        columns = ["Document", "Id", "Year", "Theme", "Approach", "Key result"]
        sections.append(ReportSection("Comparison", tables=[Table(columns, rows)]))
    flagged = [
        [c.claim, ", ".join(c.cited), c.reason or "unsupported"]
        for c in parts.checks.values()
        if c.verdict != "supported"
    ]
    if flagged:
        sections.append(
            ReportSection(
                "Flagged claims",
                paragraphs=["These claims failed the fact-check and are not part of the review."],
                tables=[Table(["Claim", "Cites", "Why"], flagged)],
                status="warning",
            )
        )
    if parts.problems:
        sections.append(ReportSection("Problems", paragraphs=parts.problems, status="error"))
    refs = sorted({r.doc_id for s in parts.sections for r in s.rows})
    ref_rows = [
        [d, ", ".join(corpus.get(d).authors), corpus.get(d).year or "", corpus.get(d).title]
        for d in refs
        if d in corpus
    ]
    sections.append(
        ReportSection("References", tables=[Table(["Id", "Authors", "Year", "Title"], ref_rows)])
    )
    supported = sum(c.verdict == "supported" for c in parts.checks.values())
    summary = [
        ("Themes", str(len(parts.sections))),
        ("Documents", str(len(refs))),
        ("Claims supported", f"{supported} / {len(parts.checks)}"),
    ]
    return render_html(parts.prose.title, sections, summary=summary)


__all__ = ["render_review_html"]
