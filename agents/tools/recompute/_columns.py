"""Describe statistics, correlations (and the correlation ratio eta, Cramér's V), distinct
values, level counts and outlier counts of columns, from numpy / scipy.

The analyst's numbers come from pandas (`agents.tools.stats`); these come from the raw
arrays, sharing only the conventions documented there: the non-missing values of each
column (pairwise-complete rows for a correlation), ddof=1, the bias-corrected skewness
(0 for a constant column), linearly interpolated quartiles and Tukey fences at k=1.5.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats as sps

from kimmy_swarm.agents.tools.conventions import AnalysisError

__all__ = [
    "column",
    "column_statistic",
    "correlation",
    "distinct_count",
    "level_count",
    "numeric_values",
    "outlier_count",
]

_TUKEY_K = 1.5


def column(df: pd.DataFrame, name: str) -> pd.Series:
    """The column `name` (raises `AnalysisError` naming the columns there are)."""
    if name not in df.columns:
        shown = ", ".join(map(str, list(df.columns)[:30]))
        raise AnalysisError(f"unknown column {name!r}; columns: {shown}")
    return df[name]


def numeric_values(df: pd.DataFrame, name: str) -> np.ndarray:
    """The column as float64 with missing values removed."""
    s = column(df, name)
    if not pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
        raise AnalysisError(f"column {name!r} is not numeric (dtype {s.dtype})")
    x = s.to_numpy(dtype=float, na_value=np.nan)
    return x[~np.isnan(x)]


def _skew(x: np.ndarray) -> float:
    if x.size < 3:
        return math.nan
    if np.all(x == x[0]):
        return 0.0  # pandas' convention for a constant column
    return float(sps.skew(x, bias=False))


def column_statistic(statistic: str, df: pd.DataFrame, name: str) -> float:
    """count, missing, mean, median, std, min, max or skew of one column (NaN: undefined)."""
    if statistic == "missing":
        return float(pd.isna(column(df, name).to_numpy()).sum())
    x = numeric_values(df, name)
    if statistic == "count":
        return float(x.size)
    if x.size == 0 or (statistic == "std" and x.size < 2):
        return math.nan
    funcs = {
        "mean": np.mean,
        "median": np.median,
        "std": lambda v: np.std(v, ddof=1),
        "min": np.min,
        "max": np.max,
        "skew": _skew,
    }
    return float(funcs[statistic](x))


def correlation(df: pd.DataFrame, a: str, b: str, method: str) -> float:
    """Pearson, Spearman or Kendall correlation over the pairwise-complete rows; "eta", the
    correlation ratio of `a` over the levels of `b`; "cramers_v", Cramér's V of `a` and `b`."""
    numeric_values(df, a), numeric_values(df, b)  # type and existence checks
    xy = df[[a, b]].to_numpy(dtype=float, na_value=np.nan)  # (N, 2)
    xy = xy[~np.isnan(xy).any(axis=1)]
    if xy.shape[0] < 2 or np.ptp(xy[:, 0]) == 0 or np.ptp(xy[:, 1]) == 0:
        return math.nan
    if method == "eta":
        return _eta(xy[:, 0], xy[:, 1])
    if method == "cramers_v":
        return _cramers_v(xy[:, 0], xy[:, 1])
    if method == "pearson":
        return float(np.corrcoef(xy[:, 0], xy[:, 1])[0, 1])
    if method == "spearman":
        return float(sps.spearmanr(xy[:, 0], xy[:, 1]).statistic)
    return float(sps.kendalltau(xy[:, 0], xy[:, 1]).statistic)


def _eta(y: np.ndarray, g: np.ndarray) -> float:
    """sqrt(between-level sum of squares / total sum of squares) of y over the levels g."""
    _, codes = np.unique(g, return_inverse=True)
    n = np.bincount(codes)  # (L,)
    means = np.bincount(codes, weights=y) / n  # (L,)
    between = float(np.sum(n * (means - y.mean()) ** 2))
    total = float(np.sum((y - y.mean()) ** 2))
    return math.sqrt(between / total)


def _cramers_v(a: np.ndarray, b: np.ndarray) -> float:
    """sqrt(chi² / (n (min(rows, columns) - 1))) of the contingency table of a and b."""
    _, ia = np.unique(a, return_inverse=True)
    _, ib = np.unique(b, return_inverse=True)
    table = np.zeros((ia.max() + 1, ib.max() + 1))  # (levels of a, levels of b)
    np.add.at(table, (ia, ib), 1.0)
    expected = np.outer(table.sum(axis=1), table.sum(axis=0)) / table.sum()
    chi2 = float(np.sum((table - expected) ** 2 / expected))
    return math.sqrt(chi2 / (table.sum() * (min(table.shape) - 1)))


def distinct_count(x: np.ndarray) -> float:
    """The distinct values among the non-missing `x`."""
    return float(np.unique(x).size)


def outlier_count(x: np.ndarray) -> float:
    """Values beyond the Tukey fences (k=1.5, linearly interpolated quartiles)."""
    if x.size == 0:
        return 0.0
    q1, q3 = np.percentile(x, [25, 75])
    iqr = q3 - q1
    return float(np.count_nonzero((x < q1 - _TUKEY_K * iqr) | (x > q3 + _TUKEY_K * iqr)))


def level_count(x: np.ndarray, level: str) -> float:
    """Values equal to `level` (a level's name: "2" for 2.0, "0.5"), among the non-missing."""
    try:
        value = float(level)
    except ValueError as exc:
        raise AnalysisError(f"level {level!r} names no numeric value") from exc
    return float(np.count_nonzero(x == value))
