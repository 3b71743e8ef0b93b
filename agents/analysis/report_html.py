"""report.html of the batch analysis, from an `AnalysisDigest`: a summary table across
datasets, the run's problems, then a section per analysis (its readings, notes, flags,
tables and figures), built with `agents.tools.report`.

The text pieces are those of report.md (`agents.analysis.report_text`), so both reports say
the same; a section's status marks failed analyses and flagged numbers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from kimmy_swarm.agents.analysis.digest import AnalysisDigest
from kimmy_swarm.agents.analysis.report_groups import group_paragraphs
from kimmy_swarm.agents.analysis.report_text import (
    SUMMARY_HEADER,
    entry_notes,
    finding_sections,
    mismatch_lines,
    model_notes,
    run_status,
    section_status,
    summary_rows,
)

if TYPE_CHECKING:
    from kimmy_swarm.agents.tools.report import ReportSection

__all__ = ["html_sections", "render_report_html"]


def html_sections(
    digest: AnalysisDigest, figures: Mapping[str, bytes], order: Sequence[str]
) -> list[ReportSection]:
    """The page's sections: the summary, the problems, then the analyses in `order` (ids);
    a figure is shown when its PNG is in `figures` (by figure id)."""
    from kimmy_swarm.agents.tools.report import Figure, ReportSection, Table

    header = ReportSection(
        "Findings across datasets",
        tables=[Table(SUMMARY_HEADER, summary_rows(digest), "one row per (dataset, question)")],
        status=run_status(digest),
    )
    sections: list[ReportSection] = [header]
    if digest.problems:
        sections.append(ReportSection("Problems", paragraphs=digest.problems, status="error"))
    by_id = {e.id: e for e in digest.analyses}
    for aid in order:
        e = by_id[aid]
        paras = [f"Question: {e.question}", *([e.summary] if e.summary else [])]
        paras += group_paragraphs(e) + entry_notes(e) + [f"⚠ {m}" for m in mismatch_lines(e)]
        paras.append(f"Fact-check: {e.counts.verified} of {e.total} numbers verified.")
        parts = finding_sections(e)  # readings in section order; the tables follow in it
        paras += [f"{title}: {reading}" for title, reading, _ in parts if reading]
        paras += model_notes(e)
        sections.append(ReportSection(
            f"{e.dataset} — {e.question}",
            paragraphs=paras,
            tables=[Table(h, rows, cap) for _, _, tabs in parts for cap, h, rows in tabs],
            figures=[Figure(f.title or f.kind, figures[f.figure_id])
                     for f in e.figures if f.figure_id in figures],
            status=section_status(e),
            anchor=aid,
        ))  # fmt: skip
    return sections


def render_report_html(
    digest: AnalysisDigest,
    figures: Mapping[str, bytes],
    *,
    title: str,
    intro: str,
    order: Sequence[str],
) -> str:
    """The whole page: `title`, `intro` as its subtitle, the verdict totals, the sections."""
    from kimmy_swarm.agents.tools.report import render_html

    t = digest.totals
    summary = [("analyses", t.analyses), ("numbers reported", t.findings),
               ("verified", t.verified), ("mismatched", t.mismatch),
               ("unverifiable", t.unverifiable)]  # fmt: skip
    sections = html_sections(digest, figures, order)
    return render_html(title, sections, subtitle=intro, summary=summary)
