"""The level counts of the categorical columns in the reports' distributions section.

A categorical column (`agents.tools.variables`: nominal codes, ordered levels, two values)
is described by its rows at each value (`level_count` findings), not by a mean, skew and
outliers; one table row per (column, level), with what the source says the level means. A
zero-heavy numeric column has its rows at 0 here too (its share of zeros, checkable).
"""

from __future__ import annotations

from collections.abc import Callable

from kimmy_swarm.agents.analysis.digest import FindingRecord

__all__ = ["level_table"]

Tab = tuple[str, list[str], list[list[str]]]  # caption, header, rows


def level_table(
    recs: list[FindingRecord], placed: set[int], cell: Callable[[FindingRecord], str]
) -> Tab | None:
    """Rows at each level of each categorical column (None: no such column)."""
    rows = []
    for i, r in enumerate(recs):
        if r.statistic == "level_count" and i not in placed:
            placed.add(i)
            rows.append([r.columns[0], r.level, r.note, cell(r)])
    if not rows:
        return None
    return ("Rows at each level (categorical columns; the zeros of a zero-heavy one)",
            ["column", "level", "meaning", "rows"], rows)  # fmt: skip
