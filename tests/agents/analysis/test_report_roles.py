"""The report roles' tools and offline procedures: the digest a model reads, report.html
written in the order asked, and both reports built back from the tool's JSON."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kimmy_swarm.agents.analysis.digest import analysis_digest
from kimmy_swarm.agents.analysis.report_roles import (
    build_report_page,
    compact_digest,
    report_tools,
    write_summary,
)
from kimmy_swarm.agents.analysis.report_text import render_markdown
from kimmy_swarm.swarm.errors import UserError
from tests.support.analysis_board import checked_board


class _Run:
    """The one thing the procedures use of an `Attempt`: calling a tool by name."""

    def __init__(self, tools: list[Callable[..., Any]]) -> None:
        self.tools = {fn.__name__: fn for fn in tools}

    def call(self, tool: str, /, **arguments: Any) -> Any:
        return self.tools[tool](**arguments)


def test_the_compact_digest_keeps_flags_in_full_and_verified_numbers_short(
    tmp_path: Path,
) -> None:
    digest = analysis_digest(checked_board(tmp_path))
    compact = compact_digest(digest)
    done = compact["analyses"][0]
    assert "findings" not in done and list(done)[-2:] == ["verified_numbers", "flagged"]
    assert done["verified_numbers"] == ["mean(GNP) = 387698", "r2(TOTEMP) = 0.9674"]
    assert [r["verdict"] for r in done["flagged"]] == ["mismatch", "unchecked"]
    assert "dataset" not in done["flagged"][0] and done["flagged"][0]["recomputed"] == 65317.0
    assert {k: v for k, v in compact.items() if k != "analyses"} == {
        k: v for k, v in digest.model_dump().items() if k != "analyses"
    }


def test_collect_results_gives_the_digest_as_json(tmp_path: Path) -> None:
    board = checked_board(tmp_path)
    collect, _ = report_tools(board)
    assert collect(detail=True) == analysis_digest(board).model_dump()
    assert collect() == compact_digest(analysis_digest(board))


def test_render_report_writes_the_page_in_the_order_asked(tmp_path: Path) -> None:
    board = checked_board(tmp_path)
    _, render = report_tools(board)
    page = render(title="T", intro="i", order=["analyze:3"])
    assert page == {"path": str(tmp_path / "report.html"),
                    "order": ["analyze:3", "analyze:1", "analyze:2"]}  # fmt: skip
    html = Path(page["path"]).read_text()
    assert html.index('id="analyze-3"') < html.index('id="analyze-1"')
    with pytest.raises(UserError, match=r"unknown analysis ids \['analyze:9'\]"):
        render(title="T", intro="i", order=["analyze:9"])


def test_the_offline_procedures_build_both_reports(tmp_path: Path) -> None:
    board = checked_board(tmp_path)
    run = _Run(report_tools(board))
    page = build_report_page(run)  # type: ignore[arg-type]
    assert page.title == "Batch data analysis of 1 dataset"
    assert page.order == ["analyze:1", "analyze:2", "analyze:3"]
    assert (tmp_path / "report.html").is_file()
    text = write_summary(run)  # type: ignore[arg-type]
    assert text.markdown == render_markdown(analysis_digest(board))
