"""The report roles of the batch analysis: their tools (`collect_results`, `render_report`)
and the offline procedures of the frontend engineer (report.html) and the synthesizer
(report.md).

`collect_results` gives the run's `AnalysisDigest` as JSON — in full with `detail`, else
compacted for a model's context (`compact_digest`) — and the offline procedures read it back
into the typed digest, so both policies build the reports from the same data.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kimmy_swarm.agents.analysis.digest import AnalysisDigest, analysis_digest
from kimmy_swarm.agents.analysis.report_html import render_report_html
from kimmy_swarm.agents.analysis.report_text import fmt, intro_text, render_markdown
from kimmy_swarm.agents.analysis.schemas import ReportPage, ReportText
from kimmy_swarm.swarm.errors import UserError

if TYPE_CHECKING:
    from kimmy_swarm.agents.analysis.board import AnalysisBoard
    from kimmy_swarm.agents.loop import Attempt

__all__ = ["build_report_page", "compact_digest", "report_tools", "write_summary"]


def compact_digest(digest: AnalysisDigest) -> dict[str, Any]:
    """The digest for a model's context: verified numbers as short lines, the rest in full."""
    data = digest.model_dump()
    for short, entry in zip(data["analyses"], digest.analyses, strict=True):
        del short["findings"]
        short["verified_numbers"] = [
            f"{r.statistic}({', '.join(r.columns)}) = {fmt(r.value)}"
            for r in entry.findings
            if r.verdict == "verified"
        ]
        short["flagged"] = [
            r.model_dump(exclude={"dataset", "question"})
            for r in entry.findings
            if r.verdict != "verified"
        ]
    return data


def report_tools(board: AnalysisBoard) -> list[Callable[..., Any]]:
    """`collect_results` and `render_report` over `board`."""

    def collect_results(detail: bool = False) -> dict[str, Any]:
        """Every analysis with its checked numbers, totals and problems (`detail`: each
        finding as a full record)."""
        digest = analysis_digest(board)
        return digest.model_dump() if detail else compact_digest(digest)

    def render_report(title: str, intro: str, order: list[str] | None = None) -> dict[str, Any]:
        """Build report.html (analyses in `order`, by id; the rest after) and write it."""
        from kimmy_swarm.agents.tools.report import write_html

        digest = analysis_digest(board)
        known = [e.id for e in digest.analyses]
        unknown = [i for i in order or [] if i not in known]
        if unknown:
            raise UserError(f"unknown analysis ids {unknown} in order; known: {known}")
        full = list(dict.fromkeys([*(order or []), *known]))
        html = render_report_html(digest, board.figures, title=title, intro=intro, order=full)
        path = write_html(board.out_dir / "report.html", html)
        return {"path": str(path), "order": full}

    return [collect_results, render_report]


def _collected(run: Attempt) -> AnalysisDigest:
    return AnalysisDigest.model_validate(run.call("collect_results", detail=True))


def build_report_page(run: Attempt) -> ReportPage:
    """report.html: a summary, then a section per analysis in plan order."""
    digest = _collected(run)
    n = len(digest.datasets)
    title = f"Batch data analysis of {n} dataset{'s' if n != 1 else ''}"
    intro = intro_text(digest)
    order = [e.id for e in digest.analyses]
    page = run.call("render_report", title=title, intro=intro, order=order)
    return ReportPage(title=title, intro=intro, order=page["order"], path=page["path"])


def write_summary(run: Attempt) -> ReportText:
    """report.md: findings across datasets, verified numbers, flags, problems."""
    return ReportText(markdown=render_markdown(_collected(run)))
