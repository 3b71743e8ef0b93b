"""The HTML report: well-formed, escaped, self-contained, with unique TOC anchors."""

from __future__ import annotations

import base64
from html.parser import HTMLParser
from pathlib import Path

import pytest

from kimmy_swarm.agents.tools.plots import histogram_png
from kimmy_swarm.agents.tools.report import (
    Figure,
    ReportError,
    ReportSection,
    Table,
    render_html,
    write_html,
)
from kimmy_swarm.swarm.errors import UserError

VOID = {"meta", "img", "br", "hr", "link", "input"}


class Collector(HTMLParser):
    """Records tags, ids, links and text, and checks that elements nest properly."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.ids: list[str] = []
        self.hrefs: list[str] = []
        self.srcs: list[str] = []
        self.text: list[str] = []
        self.stack: list[str] = []
        self.errors: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        values = dict(attrs)
        if values.get("id"):
            self.ids.append(values["id"] or "")
        if "href" in values:
            self.hrefs.append(values["href"] or "")
        if "src" in values:
            self.srcs.append(values["src"] or "")
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack.pop() != tag:
            self.errors.append(f"unexpected </{tag}>")

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(html: str) -> Collector:
    parser = Collector()
    parser.feed(html)
    parser.close()
    assert not parser.errors and not parser.stack, (parser.errors, parser.stack)
    return parser


@pytest.fixture(scope="module")
def png() -> bytes:
    return histogram_png([1.0, 2.0, 2.0, 3.5], title="h", xlabel="x")


def _sections(png: bytes) -> list[ReportSection]:
    return [
        ReportSection(
            "Results",
            paragraphs=["<script>alert('x')</script>", "a & b < c"],
            tables=[Table(["stat", "value"], [["mean", 3.14159265], ["sd", None]], caption="c")],
            figures=[Figure("Histogram <of> x", png)],
        ),
        ReportSection("Results", status="warning"),  # same title: anchor must differ
        ReportSection("Results!", status="error"),  # same slug
        ReportSection("???"),  # empty slug
        ReportSection("Custom", anchor="results"),  # explicit anchor that clashes
    ]


def test_report_is_well_formed_and_self_contained(png: bytes) -> None:
    html = render_html("Run <1>", _sections(png), subtitle="sub", summary=[("datasets", "12")])
    page = parse(html)
    assert page.tags.count("section") == 5
    assert not {"script", "link", "iframe"} & set(page.tags)
    assert all(src.startswith("data:image/png;base64,") for src in page.srcs)
    assert all(href.startswith("#") for href in page.hrefs)
    assert "Run <1>" in page.text and "datasets" in page.text and "12" in page.text


def test_user_text_is_escaped(png: bytes) -> None:
    html = render_html("<b>title</b>", _sections(png))
    page = parse(html)
    assert "script" not in page.tags and "b" not in page.tags
    assert "<script>alert('x')</script>" in page.text
    assert "a & b < c" in page.text
    assert "&lt;script&gt;" in html


def test_figures_are_embedded_byte_for_byte(png: bytes) -> None:
    page = parse(render_html("t", _sections(png)))
    assert len(page.srcs) == 1
    encoded = page.srcs[0].removeprefix("data:image/png;base64,")
    assert base64.b64decode(encoded) == png
    assert "Histogram <of> x" in page.text


def test_toc_anchors_are_unique_and_resolve(png: bytes) -> None:
    page = parse(render_html("t", _sections(png)))
    section_ids = [i for i in page.ids if i not in ("top", "contents")]
    assert len(section_ids) == len(set(section_ids)) == 5
    assert len(page.ids) == len(set(page.ids))
    toc = [h.removeprefix("#") for h in page.hrefs if h != "#top"]
    assert toc == section_ids
    assert section_ids[0] == "results" and "section" in section_ids


def test_status_badges_and_table_cells(png: bytes) -> None:
    page = parse(render_html("t", _sections(png)))
    assert {"ok", "warning", "error"} <= set(page.text)
    assert "3.14159" in page.text and "3.14159265" not in page.text
    assert "—" in page.text  # None cell


def test_invalid_parts_raise_user_errors(png: bytes) -> None:
    with pytest.raises(ReportError, match=r"'fine'.*ok"):
        ReportSection("s", status="fine")
    with pytest.raises(ReportError, match="not a PNG"):
        Figure("f", b"GIF89a....")
    with pytest.raises(ReportError, match="row 0 has 1 cells, expected 2"):
        Table(["a", "b"], [[1]])
    assert issubclass(ReportError, UserError)


def test_write_html_creates_folders_atomically(tmp_path: Path, png: bytes) -> None:
    html = render_html("t", _sections(png))
    path = write_html(tmp_path / "deep" / "er" / "report.html", html)
    assert path == (tmp_path / "deep" / "er" / "report.html").resolve()
    assert path.read_text(encoding="utf-8") == html
    assert [p.name for p in path.parent.iterdir()] == ["report.html"]  # no temporary left
