"""The grouped-comparison section of an analysis in the reports: per (value, group column)
a table of the groups and a table of the tests, every number with its verdict mark; and the
answer to the question (interpretation "question"), shown first in the analysis.
"""

from __future__ import annotations

from collections.abc import Callable

from kimmy_swarm.agents.analysis.digest import AnalysisEntry, FindingRecord

__all__ = ["group_paragraphs", "group_tables"]

Tab = tuple[str, list[str], list[list[str]]]  # caption, header, rows
_PER_GROUP = ("group_count", "group_mean", "group_median")
_TESTS = (
    ("one-way ANOVA", "anova_f", "anova_pvalue", "F"),
    ("Kruskal–Wallis", "kruskal_h", "kruskal_pvalue", "H"),
    ("Welch t-test", "welch_t", "welch_pvalue", "t"),
)
_GROUP_STATS = frozenset({*_PER_GROUP, "eta_squared"} | {s for t in _TESTS for s in t[1:3]})
_Slots = dict[tuple[str, str], dict[tuple[str, str | None], FindingRecord]]


def _slots(recs: list[FindingRecord], placed: set[int]) -> _Slots:
    """The group findings by (value, group column), then by (statistic, group key)."""
    out: _Slots = {}
    for i, r in enumerate(recs):
        if r.statistic not in _GROUP_STATS:
            continue
        slot = out.setdefault((r.columns[0], r.columns[1]), {})
        key = (r.statistic, r.group)
        if key not in slot:
            slot[key] = r
            placed.add(i)
    return out


def group_tables(
    recs: list[FindingRecord], placed: set[int], cell: Callable[[FindingRecord], str]
) -> list[Tab]:
    """Per compared (value, group column): the groups table and the tests table."""
    tables: list[Tab] = []
    for (value, by), slot in _slots(recs, placed).items():
        keys = list(dict.fromkeys(k for (stat, k) in slot if stat in _PER_GROUP and k))
        labels = {k: next(r.note or k for (s, g), r in slot.items() if g == k) for k in keys}
        rows = []
        for k in keys:
            found = [slot[(s, k)] for s in _PER_GROUP if (s, k) in slot]
            label = found[0].note or k
            named = label != k and not label.startswith(f"{by} = ")  # a class name
            name = f"{label} ({by} = {k})" if named else label
            rows.append([name, *(cell(slot[(s, k)]) if (s, k) in slot else "" for s in _PER_GROUP)])
        if rows:
            tables.append((f"{value} by {by}", [by, "count", "mean", "median"], rows))
        tests = []
        for name, stat, pstat, symbol in _TESTS:
            for (s, k), r in slot.items():
                if s != stat:
                    continue
                other = [g for g in labels if g != k]
                rest = labels[other[0]] if len(other) == 1 else "the rest"
                against = f" ({labels.get(k, k)} vs {rest})" if k else ""
                p = slot.get((pstat, k))
                tests.append([f"{name}{against}", f"{symbol} = {cell(r)}", cell(p) if p else ""])
        if ("eta_squared", None) in slot:
            tests.append(["eta² (share of variance)", cell(slot[("eta_squared", None)]), ""])
        if tests:
            tables.append((f"Tests: {value} by {by}", ["test", "statistic", "p-value"], tests))
    return tables


def group_paragraphs(entry: AnalysisEntry) -> list[str]:
    """The direct answer to the question, first in its section (empty: none); the
    comparison in words ("groups") is the reading of the grouped-comparison section."""
    answer = entry.interpretation.get("question")
    return [f"Answer: {answer}"] if answer else []
