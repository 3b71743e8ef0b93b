"""Build one self-contained HTML report: inline CSS, figures as base64 data URIs, a TOC.

The template is `agents/templates/report.html.j2`, rendered with autoescaping on, so every
user string (titles, paragraphs, table cells, captions) is shown as text, never as markup.

Example:
    >>> html = render_html("Longley", [ReportSection("Summary", paragraphs=["r2 = 0.98"])])
    >>> write_html("out/report.html", html)
"""

from __future__ import annotations

import base64
import math
import os
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2

from kimmy_swarm.swarm.errors import UserError

__all__ = [
    "STATUSES",
    "Figure",
    "ReportError",
    "ReportSection",
    "Table",
    "render_html",
    "write_html",
]

STATUSES = ("ok", "warning", "error")
_PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
_TEMPLATES = Path(__file__).resolve().parent.parent / "templates"


class ReportError(UserError):
    """A report part is invalid (unknown status, a figure that is not a PNG, ragged table)."""


@dataclass
class Figure:
    """A PNG chart with a caption title."""

    title: str
    png: bytes

    def __post_init__(self) -> None:
        if not bytes(self.png[:8]) == _PNG_MAGIC:
            raise ReportError(f"figure {self.title!r} is not a PNG (bad magic bytes)")


@dataclass
class Table:
    """A table: column headers and rows of cells (floats shown with 6 significant digits)."""

    columns: list[str]
    rows: list[list[Any]]
    caption: str = ""

    def __post_init__(self) -> None:
        for i, row in enumerate(self.rows):
            if len(row) != len(self.columns):
                raise ReportError(
                    f"table {self.caption or self.columns!r}: row {i} has {len(row)} cells, "
                    f"expected {len(self.columns)}"
                )


@dataclass
class ReportSection:
    """One section: text, tables and figures, with a status badge and a TOC anchor.

    `anchor` defaults to a slug of the title; anchors are made unique when rendering.
    """

    title: str
    paragraphs: list[str] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    status: str = "ok"
    anchor: str = ""

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ReportError(
                f"section {self.title!r}: unknown status {self.status!r}; allowed: {STATUSES}"
            )


def _slug(text: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return slug or "section"


def _unique_anchors(sections: Sequence[ReportSection]) -> list[str]:
    seen: set[str] = {"top", "contents"}  # ids the template itself uses
    anchors = []
    for section in sections:
        base = _slug(section.anchor or section.title)
        anchor, n = base, 2
        while anchor in seen:
            anchor, n = f"{base}-{n}", n + 1
        seen.add(anchor)
        anchors.append(anchor)
    return anchors


def _cell(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return "NaN" if math.isnan(value) else f"{value:.6g}"
    return str(value)


def _data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    """The template environment; jinja2 environments are safe to render from many threads."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(_TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["cell"] = _cell
    env.filters["data_uri"] = _data_uri
    return env


def render_html(
    title: str,
    sections: Sequence[ReportSection],
    *,
    subtitle: str = "",
    summary: Sequence[tuple[str, str]] = (),
) -> str:
    """Render the report as one HTML document.

    Args:
        title: the page title and heading.
        sections: the sections, in order; each gets a TOC entry and a unique anchor.
        subtitle: a line under the title.
        summary: key/value pairs shown in a table at the top.

    Returns:
        The HTML text, with no external assets.
    """
    anchors = _unique_anchors(sections)
    return (
        _environment()
        .get_template("report.html.j2")
        .render(
            title=title,
            subtitle=subtitle,
            summary=[(str(k), str(v)) for k, v in summary],
            sections=list(zip(anchors, sections, strict=True)),
        )
    )


def write_html(path: str | Path, html: str) -> Path:
    """Write `html` to `path` atomically (creating parent folders); return the resolved path."""
    target = Path(path).expanduser().resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    # A per-writer temporary name, then an atomic rename: readers never see half a file.
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        tmp.write_text(html, encoding="utf-8")
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target
