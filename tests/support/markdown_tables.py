"""Reading the Markdown tables of a results page (benchmarks write them; tests check them)."""

from __future__ import annotations


def table_rows(page: str, header_start: str) -> list[list[str]]:
    """The body rows (cells stripped) of the first table whose header line starts with
    `header_start`."""
    lines = page.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header_start))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip("|").split("|")])
    return rows
