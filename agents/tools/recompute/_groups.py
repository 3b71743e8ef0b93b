"""The fact-checker's recomputation of grouped-comparison statistics, from the textbook
formulas (numpy, and scipy only for distribution tails and ranks).

`agents.tools.groups` computes the same numbers with pandas' groupby, statsmodels'
`anova_oneway` and scipy's `kruskal` / `ttest_ind`; only the conventions documented there
are shared (`agents.tools.conventions.group_key`, missing rows dropped, tie-corrected H,
Welch: a group against the other rows).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
from scipy import stats as sps

from kimmy_swarm.agents.tools.conventions import AnalysisError, group_key

__all__ = ["group_statistic"]


def _samples(df: pd.DataFrame, value: str, group: str) -> dict[str, np.ndarray]:
    """Non-missing values of `value` per group key (rows with a missing group dropped)."""
    for name in (value, group):
        if name not in df.columns:
            shown = ", ".join(map(str, list(df.columns)[:30]))
            raise AnalysisError(f"unknown column {name!r}; columns: {shown}")
    v = df[value]
    if not pd.api.types.is_numeric_dtype(v) or pd.api.types.is_bool_dtype(v):
        raise AnalysisError(f"column {value!r} is not numeric (dtype {v.dtype})")
    x = v.to_numpy(dtype=float, na_value=np.nan)
    keys = df[group].to_numpy(dtype=object)
    keep = ~np.isnan(x) & ~pd.isna(keys)
    out: dict[str, list[float]] = {}
    for k, xi in zip(keys[keep], x[keep], strict=True):
        out.setdefault(group_key(k), []).append(float(xi))
    return {k: np.asarray(xs) for k, xs in out.items()}


def _anova(samples: list[np.ndarray]) -> tuple[float, float, float]:
    """(F, p, eta²) of a one-way ANOVA: between / within mean squares."""
    allx = np.concatenate(samples)
    grand = allx.mean()
    k, n = len(samples), allx.size
    ss_between = float(sum(s.size * (s.mean() - grand) ** 2 for s in samples))
    ss_within = float(sum(((s - s.mean()) ** 2).sum() for s in samples))
    ss_total = ss_between + ss_within
    eta = ss_between / ss_total if ss_total > 0 else math.nan
    if n <= k or ss_within == 0:
        return math.nan, math.nan, eta
    f = (ss_between / (k - 1)) / (ss_within / (n - k))
    return f, float(sps.f.sf(f, k - 1, n - k)), eta


def _kruskal(samples: list[np.ndarray]) -> tuple[float, float]:
    """(H, p): H = 12/(N(N+1)) Σ R_i²/n_i − 3(N+1), divided by 1 − Σ(t³−t)/(N³−N)."""
    allx = np.concatenate(samples)
    n = allx.size
    ranks = sps.rankdata(allx)  # average ranks for ties
    bounds = np.cumsum([0, *(s.size for s in samples)])
    h = 12.0 / (n * (n + 1)) * sum(
        ranks[a:b].sum() ** 2 / (b - a) for a, b in itertools.pairwise(bounds)
    ) - 3.0 * (n + 1)
    _, ties = np.unique(allx, return_counts=True)
    correction = 1.0 - float((ties**3 - ties).sum()) / (n**3 - n)
    if correction == 0:
        return math.nan, math.nan
    h /= correction
    return float(h), float(sps.chi2.sf(h, len(samples) - 1))


def _welch(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """(t, p) of Welch's t-test with the Welch–Satterthwaite degrees of freedom."""
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    if va + vb == 0:
        return math.nan, math.nan
    t = (a.mean() - b.mean()) / math.sqrt(va + vb)
    dof = (va + vb) ** 2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1))
    return float(t), float(2.0 * sps.t.sf(abs(t), dof))


def group_statistic(
    df: pd.DataFrame, statistic: str, columns: list[str], group: str | None
) -> float:
    """A grouped-comparison statistic of `columns` = [value, group column] on `df`.

    Raises:
        AnalysisError: a missing or non-numeric column, an unknown group, or fewer than two
            groups (or, for a test, a group with fewer than two values).
    """
    value, by = columns
    parts = _samples(df, value, by)
    if group is not None:
        if group not in parts:
            raise AnalysisError(
                f"no group {group!r} in column {by!r}; groups: {', '.join(sorted(parts)[:30])}"
            )
        x = parts[group]
        if statistic == "group_count":
            return float(x.size)
        if statistic == "group_mean":
            return float(x.mean())
        if statistic == "group_median":
            return float(np.median(x))
        rest = np.concatenate([s for k, s in parts.items() if k != group] or [np.empty(0)])
        if x.size < 2 or rest.size < 2:
            raise AnalysisError(f"a t-test of group {group!r} needs two values on each side")
        t, p = _welch(x, rest)
        return t if statistic == "welch_t" else p
    samples = list(parts.values())
    if len(samples) < 2 or min(s.size for s in samples) < 2:
        raise AnalysisError(f"{statistic} needs two groups of {by!r} with two values each")
    if statistic in ("kruskal_h", "kruskal_pvalue"):
        h, p = _kruskal(samples)
        return h if statistic == "kruskal_h" else p
    f, p, eta = _anova(samples)
    return {"anova_f": f, "anova_pvalue": p, "eta_squared": eta}[statistic]
