"""report.html from the digest: the sections in the order asked, figures that exist, status."""

from __future__ import annotations

from pathlib import Path

from kimmy_swarm.agents.analysis.digest import analysis_digest
from kimmy_swarm.agents.analysis.report_html import html_sections, render_report_html
from tests.support.analysis_board import FAILURE, PNG, checked_board


def test_sections_follow_the_order_and_carry_their_status(tmp_path: Path) -> None:
    board = checked_board(tmp_path)
    digest = analysis_digest(board)
    order = ["analyze:3", "analyze:1", "analyze:2"]
    sections = html_sections(digest, board.figures, order)
    assert [s.title for s in sections[:2]] == ["Findings across datasets", "Problems"]
    assert [s.anchor for s in sections[2:]] == order
    assert [s.status for s in sections[2:]] == ["warning", "warning", "error"]
    first = sections[3]
    assert [f.png for f in first.figures] == [PNG]
    assert "Fact-check: 2 of 4 numbers verified." in first.paragraphs
    assert html_sections(digest, {}, order)[3].figures == []  # a figure not drawn: left out


def test_the_page_has_title_intro_and_totals(tmp_path: Path) -> None:
    board = checked_board(tmp_path)
    html = render_report_html(analysis_digest(board), board.figures, title="Checked",
                              intro="All numbers recomputed.", order=["analyze:1"])  # fmt: skip
    assert "Checked" in html and "All numbers recomputed." in html
    assert FAILURE in html and "numbers reported" in html
