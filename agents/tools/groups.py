"""Grouped comparisons: a numeric column across the groups of another (pandas / scipy /
statsmodels).

These are the numbers an analyst reports for "which group has the highest Y" and "does Y
differ by X"; `agents.tools.recompute` recomputes each from the textbook formulas. The
conventions both sides share: rows with a missing value or group are dropped; a group is
named by `agents.tools.conventions.group_key` of its value (an integer-valued number as
digits, "2"; another number as `repr(float)`; text as is); groups are ordered by value;
one-way ANOVA assumes equal variances; Kruskal–Wallis corrects for ties; the Welch t-test
compares one group with all the other rows (for two groups: the one with the other);
eta² = SS_between / SS_total.

Example:
    >>> cmp = compare_groups(load_dataset("sklearn:iris").frame, "sepal length (cm)", "target")
    >>> cmp.highest, round(cmp.groups[cmp.highest].mean, 3)
    ('2', 6.588)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as sps

from kimmy_swarm.agents.tools.conventions import AnalysisError, group_key
from kimmy_swarm.agents.tools.stats import numeric_columns

__all__ = [
    "MAX_GROUPS",
    "GroupComparison",
    "GroupSummary",
    "compare_groups",
    "groupable",
]

#: A column with more distinct values than this is not compared as groups.
MAX_GROUPS = 20


def groupable(df: pd.DataFrame, column: str) -> bool:
    """Whether `column` splits the rows into 2..`MAX_GROUPS` groups (text, bool or codes)."""
    if column not in df.columns:
        return False
    distinct = df[column].nunique(dropna=True)
    return 2 <= distinct <= MAX_GROUPS


@dataclass(frozen=True)
class GroupSummary:
    """One group's count, mean and median of the value column.

    `label` is its display name: the one given (a class name), else text as it is and a
    number as "<group column> = <value>" (4 significant digits).
    """

    key: str
    label: str
    count: int
    mean: float
    median: float


@dataclass(frozen=True)
class GroupComparison:
    """A value column compared across the groups of a grouping column.

    Attributes:
        groups: per group key (in value order) its summary.
        highest / lowest: the key of the group with the highest / lowest mean.
        anova_f, anova_pvalue: one-way ANOVA (equal variances); NaN when every
            group is constant.
        kruskal_h, kruskal_pvalue: Kruskal–Wallis H test (tie-corrected); NaN when all
            values are equal.
        eta_squared: SS_between / SS_total (the share of variance the groups explain).
        welch: for two groups, the Welch t-test of the first group against the other:
            (group key, t, p), NaN t and p when both groups are constant; None
            otherwise.
    """

    value: str
    group: str
    groups: dict[str, GroupSummary]
    highest: str
    lowest: str
    anova_f: float
    anova_pvalue: float
    kruskal_h: float
    kruskal_pvalue: float
    eta_squared: float
    welch: tuple[str, float, float] | None


def _label(group: str, key: str, numeric: bool) -> str:
    """A group without a name: text as it is, a number as "sex = 0.05068" (4 digits)."""
    return f"{group} = {float(key):.4g}" if numeric else key


def _split(df: pd.DataFrame, value: str, group: str) -> dict[str, np.ndarray]:
    """The value column's non-missing values per group key, groups in value order."""
    for name in (value, group):
        if name not in df.columns:
            shown = ", ".join(map(str, list(df.columns)[:30]))
            raise AnalysisError(f"unknown column {name!r}; columns: {shown}")
    if value not in numeric_columns(df):
        raise AnalysisError(f"column {value!r} is not numeric (dtype {df[value].dtype})")
    if value == group:
        raise AnalysisError(f"cannot compare {value!r} across its own values")
    pair = df[[group, value]].dropna()
    parts = {
        group_key(k): part[value].to_numpy(dtype=float)
        for k, part in pair.groupby(group, sort=True)
    }
    if not 2 <= len(parts) <= MAX_GROUPS:
        raise AnalysisError(
            f"column {group!r} has {len(parts)} groups with values of {value!r}; "
            f"a comparison needs 2 to {MAX_GROUPS}"
        )
    small = [k for k, x in parts.items() if x.size < 2]
    if small:
        raise AnalysisError(f"groups {small} of {group!r} have fewer than two values of {value!r}")
    return parts


def compare_groups(
    df: pd.DataFrame, value: str, group: str, *, labels: Mapping[str, str] | None = None
) -> GroupComparison:
    """Compare `value` across the groups of `group`.

    Args:
        df: the table.
        value: a numeric column.
        group: a column with 2..`MAX_GROUPS` distinct values.
        labels: display names by group key (e.g. sklearn's class names of a target code);
            other groups are labelled as `GroupSummary` says.

    Raises:
        AnalysisError: an unknown or non-numeric column, too few or too many groups, or a
            group with fewer than two values.
    """
    from statsmodels.stats.oneway import anova_oneway

    parts = _split(df, value, group)
    names = dict(labels or {})
    numeric = group in numeric_columns(df)
    summaries = {
        k: GroupSummary(
            k, names.get(k) or _label(group, k, numeric), int(x.size), float(x.mean()),
            float(np.median(x)),
        )
        for k, x in parts.items()
    }  # fmt: skip
    samples = list(parts.values())
    everything = np.concatenate(samples)
    ss_total = float(((everything - everything.mean()) ** 2).sum())
    ss_between = sum(x.size * (x.mean() - everything.mean()) ** 2 for x in samples)
    # no spread within any group: the tests are undefined (NaN), not a division by zero
    varying = any(np.ptp(x) > 0 for x in samples)
    anova_f = anova_p = math.nan
    if varying:
        anova = anova_oneway(samples, use_var="equal")
        anova_f, anova_p = float(anova.statistic), float(anova.pvalue)
    kruskal_h = kruskal_p = math.nan
    if np.ptp(everything) > 0:
        kruskal = sps.kruskal(*samples)
        kruskal_h, kruskal_p = float(kruskal.statistic), float(kruskal.pvalue)
    welch = None
    if len(parts) == 2:
        first, second = samples
        t, p = math.nan, math.nan
        if varying:
            res = sps.ttest_ind(first, second, equal_var=False)
            t, p = float(res.statistic), float(res.pvalue)
        welch = (next(iter(parts)), t, p)
    by_mean = sorted(summaries, key=lambda k: summaries[k].mean)
    return GroupComparison(
        value=value,
        group=group,
        groups=summaries,
        highest=by_mean[-1],
        lowest=by_mean[0],
        anova_f=anova_f,
        anova_pvalue=anova_p,
        kruskal_h=kruskal_h,
        kruskal_pvalue=kruskal_p,
        eta_squared=float(ss_between / ss_total) if ss_total > 0 else math.nan,
        welch=welch,
    )
