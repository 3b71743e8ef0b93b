"""The reports' text: every number with its verdict mark, each analysis in titled sections,
its status lines, and report.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from kimmy_swarm.agents.analysis.digest import AnalysisDigest, analysis_digest
from kimmy_swarm.agents.analysis.report_text import (
    cell,
    entry_notes,
    finding_sections,
    fmt,
    intro_text,
    mismatch_lines,
    model_notes,
    render_markdown,
    section_status,
    summary_rows,
)
from tests.support.analysis_board import FAILURE, checked_board


@pytest.fixture
def digest(tmp_path: Path) -> AnalysisDigest:
    return analysis_digest(checked_board(tmp_path))


def test_numbers_and_their_marks(digest: AnalysisDigest) -> None:
    assert [fmt(v) for v in (None, 16.0, 0.96737377, 1.5e20)] == ["—", "16", "0.967374", "1.5e+20"]
    verified, wrong, _, unchecked = digest.analyses[0].findings
    assert cell(verified) == "387698 ✔"
    assert cell(wrong) == "⚠ MISMATCH 1 (recomputed 65317)"
    assert cell(unchecked) == "0.99 (unchecked)"


def test_an_analysis_in_sections_with_status_lines(digest: AnalysisDigest) -> None:
    done, failed, partial = digest.analyses
    sections = finding_sections(done)
    assert [title for title, _, _ in sections] == ["Distributions", "Correlations", "Model"]
    assert sections[2][1] == "GNP explains TOTEMP"  # the model's reading
    assert model_notes(done) == ["Model choice: TOTEMP is continuous."]
    assert mismatch_lines(done) == [
        "MISMATCH: mean of TOTEMP reported as 1, but the data gives 65317 — do not use this number"
    ]
    assert [section_status(e) for e in digest.analyses] == ["warning", "error", "warning"]
    assert entry_notes(failed) == [
        "The analysis failed; nothing was reported.", f"Problem: {FAILURE}",
        "Problem: no analysis to check",
    ]  # fmt: skip
    assert entry_notes(partial) == ["Partial analysis: no model"]


def test_summary_and_markdown(digest: AnalysisDigest) -> None:
    first = summary_rows(digest)[0]
    assert first == ["statsmodels:longley", "q1", "16", "TOTEMP", "OLS", "R² 0.9674",
                     "GNP ~ TOTEMP: 0.99", "2 / 4"]  # fmt: skip
    assert intro_text(digest).startswith("3 analyses of 1 dataset(s) ran in parallel.")
    assert "1 dataset(s) could not be loaded" in intro_text(digest)
    md = render_markdown(digest, title="T")
    assert md.startswith("# T\n")
    assert "## Problems" in md and f"- {FAILURE}" in md
    assert "- ⚠ MISMATCH: mean of TOTEMP" in md
    assert "Answer: GNP" in md  # the direct answer first in its analysis
    assert "![Correlations](figures/longley-heatmap.png)" in md
    assert md.endswith("the data gives another value.\n")
