"""Descriptive statistics, correlations and OLS on a DataFrame (pandas / statsmodels).

These are the numbers an analyst reports; `agents.tools.recompute` recomputes them through an
independent numpy/scipy path. Conventions both sides share: `std` uses ddof=1, `skew` is the
bias-corrected sample skewness (pandas `Series.skew`, scipy `skew(bias=False)`), correlations
and descriptive statistics use the non-missing values of each column (pairwise for `corr`),
OLS drops rows with a missing value in any used column, and Tukey fences use linearly
interpolated quartiles.

All functions are pure and thread-safe; bad input raises `AnalysisError` naming the column.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import statsmodels.api as sm
from scipy import stats as sps

from kimmy_swarm.agents.tools.conventions import AnalysisError, dummy_term

__all__ = [
    "CORR_METHODS",
    "OLSFit",
    "PredictorChoice",
    "associations",
    "check_predictors",
    "correlations",
    "cramers_v",
    "describe",
    "design_matrix",
    "eta",
    "missing",
    "numeric_columns",
    "ols",
    "outliers",
    "part_frame",
    "pick_target",
    "profile",
    "reference_level",
    "select_predictors",
]

CORR_METHODS = ("pearson", "spearman", "kendall")
_COLLINEAR = 0.98  # |r| above which a candidate predictor duplicates a chosen one


def numeric_columns(df: pd.DataFrame) -> list[str]:
    """Return the numeric (non-boolean) columns of `df`, in frame order."""
    return [
        c
        for c in df.columns
        if pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c])
    ]


def _require_numeric(df: pd.DataFrame, column: str) -> None:
    if column not in df.columns:
        shown = ", ".join(map(str, list(df.columns)[:30]))
        raise AnalysisError(f"unknown column {column!r}; columns: {shown}")
    if column not in numeric_columns(df):
        raise AnalysisError(
            f"column {column!r} is not numeric (dtype {df[column].dtype}); "
            f"numeric columns: {', '.join(map(str, numeric_columns(df)))}"
        )


def profile(df: pd.DataFrame) -> dict[str, Any]:
    """Summarise the shape of a table.

    Returns:
        rows, columns (count), column_names, dtypes (column -> dtype name), numeric_columns,
        missing_cells (total) and memory_bytes (deep).
    """
    return {
        "rows": int(df.shape[0]),
        "columns": int(df.shape[1]),
        "column_names": [str(c) for c in df.columns],
        "dtypes": {str(c): str(t) for c, t in df.dtypes.items()},
        "numeric_columns": [str(c) for c in numeric_columns(df)],
        "missing_cells": int(df.isna().sum().sum()),
        "memory_bytes": int(df.memory_usage(deep=True).sum()),
    }


def missing(df: pd.DataFrame) -> dict[str, int]:
    """Return the number of missing values in each column."""
    return {str(c): int(n) for c, n in df.isna().sum().items()}


def describe(df: pd.DataFrame, columns: Sequence[str] | None = None) -> dict[str, dict[str, float]]:
    """Describe numeric columns over their non-missing values.

    Args:
        df: the table.
        columns: the columns to describe (each must be numeric); default all numeric columns.

    Returns:
        column -> {count, mean, median, std (ddof=1), min, max, skew}; NaN where undefined
        (e.g. std of one value).

    Raises:
        AnalysisError: a named column is missing or not numeric.
    """
    cols = list(columns) if columns is not None else numeric_columns(df)
    out: dict[str, dict[str, float]] = {}
    for col in cols:
        _require_numeric(df, col)
        s = df[col].dropna().astype(float)
        out[col] = {
            "count": float(s.size),
            "mean": float(s.mean()),
            "median": float(s.median()),
            "std": float(s.std(ddof=1)),
            "min": float(s.min()),
            "max": float(s.max()),
            "skew": float(s.skew()),
        }
    return out


def correlations(
    df: pd.DataFrame, *, top: int = 5, method: str = "pearson"
) -> list[tuple[str, str, float]]:
    """Return the `top` numeric column pairs with the largest |r|: `associations` with no
    column taken as nominal (pairwise-complete rows; a pair with an undefined r, of a
    constant column, left out; ties in frame order).

    Raises:
        AnalysisError: `method` is not pearson/spearman/kendall, or `top` < 1.
    """
    return [(a, b, r) for a, b, r, _ in associations(df, top=top, method=method)]


def associations(
    df: pd.DataFrame, *, top: int = 5, nominal: Sequence[str] = (), method: str = "pearson"
) -> list[tuple[str, str, float, str]]:
    """The `top` numeric column pairs most strongly associated, each by a measure suited to
    its columns' kinds: `method`'s r between two columns with numeric meaning (measured,
    ordered or binary); the correlation ratio eta of the other column over a `nominal`
    one's levels (its codes' r means nothing); Cramér's V between two nominal ones.

    Returns:
        (a, b, value, measure) by |value|, ties in frame order; an eta pair names the
        nominal column second (a ~ b: a over b's levels); undefined values are left out.

    Raises:
        AnalysisError: `method` is not pearson/spearman/kendall, or `top` < 1.
    """
    if method not in CORR_METHODS:
        raise AnalysisError(f"unknown correlation method {method!r}; allowed: {CORR_METHODS}")
    if top < 1:
        raise AnalysisError(f"top must be at least 1, got {top}")
    cols = numeric_columns(df)
    data = df[cols].astype(float)
    matrix = data.corr(method=method)  # (C, C)
    pairs: list[tuple[float, int, int, str, str, float, str]] = []
    for i, first in enumerate(cols):
        for j in range(i + 1, len(cols)):
            a, b = first, cols[j]
            if a in nominal and b in nominal:
                value, measure = cramers_v(data[a], data[b]), "cramers_v"
            elif a in nominal or b in nominal:
                a, b = (b, a) if a in nominal else (a, b)  # the nominal column second
                value, measure = eta(data[a], data[b]), "eta"
            else:
                value, measure = float(matrix.at[a, b]), method
            if np.isfinite(value):
                pairs.append((-abs(value), i, j, a, b, value, measure))
    pairs.sort(key=lambda p: p[:3])
    return [(a, b, value, measure) for _, _, _, a, b, value, measure in pairs[:top]]


def cramers_v(a: pd.Series, b: pd.Series) -> float:
    """Cramér's V of two nominal columns over their pairwise-complete rows, without a
    continuity or bias correction: sqrt(chi² / (n (min(levels) - 1)))."""
    table = pd.crosstab(a, b)  # pairwise-complete: crosstab drops missing values
    if min(table.shape) < 2:
        return float("nan")
    chi2 = float(sps.chi2_contingency(table.to_numpy(), correction=False)[0])
    return float(np.sqrt(chi2 / (table.to_numpy().sum() * (min(table.shape) - 1))))


@dataclass(frozen=True)
class OLSFit:
    """An OLS fit with a constant; dict keys are "const" then the predictors, in order."""

    target: str
    predictors: list[str]
    coef: dict[str, float]
    se: dict[str, float]
    pvalues: dict[str, float]
    r2: float
    adj_r2: float
    nobs: int
    f_pvalue: float


@dataclass(frozen=True)
class PredictorChoice:
    """The default predictors of a target, and the candidates left out as near-duplicates.

    `dropped` holds (candidate, chosen predictor it duplicates, r between them) for every
    candidate skipped because |r| > 0.98 with an already chosen predictor (before the cap
    of `max_predictors` was reached), and `limited` every ranked candidate left out for the
    caps (`max_predictors`, or its parameters past `max_parameters`), so a report can say
    what was left out and why.
    `measures` says what ranked each candidate: "pearson" (|r|), "eta" (the target's
    correlation ratio over a nominal candidate's levels), "eta_target" (the candidate's over a
    nominal target's classes) or "cramers_v" (a nominal candidate of a nominal target).
    """

    chosen: list[str]
    dropped: list[tuple[str, str, float]]
    measures: dict[str, str] = field(default_factory=dict)
    limited: list[str] = field(default_factory=list)


def eta(target: pd.Series, groups: pd.Series) -> float:
    """The correlation ratio of `target` over the levels of `groups` (pairwise-complete):
    sqrt(between-level sum of squares / total), |r|'s analogue for a nominal predictor."""
    data = pd.DataFrame({"y": target.astype(float), "g": groups}).dropna()
    total = float(((data["y"] - data["y"].mean()) ** 2).sum())
    if total == 0 or data["g"].nunique() < 2:
        return float("nan")
    by = data.groupby("g")["y"]
    between = float((by.count() * (by.mean() - data["y"].mean()) ** 2).sum())
    return float(np.sqrt(between / total))


def select_predictors(
    df: pd.DataFrame,
    target: str,
    max_predictors: int | None = 6,
    *,
    max_parameters: int | None = None,
    exclude: Sequence[str] = (),
    nominal: Sequence[str] = (),
    nominal_target: bool = False,
) -> PredictorChoice:
    """Numeric columns by |r| with the target, skipping near-duplicates (|r| > 0.98) of chosen
    ones and the `exclude`d columns (e.g. class codes, which are no numeric quantity); a
    `nominal` column ranks by its correlation ratio eta with the target instead (its codes'
    r means nothing) and is never taken as a near-duplicate. With a `nominal_target` (a class
    label), a candidate ranks by its own eta over the target's classes, a nominal one by
    Cramér's V with the target. Eta is at least |r| of any scoring of the levels, so a
    nominal candidate is never ranked below what its best numeric coding would earn.

    At most `max_predictors` are chosen (None: no cap), and their parameters stay within
    `max_parameters` (None: no budget): a nominal candidate costs its levels - 1 (its
    dummies), another one 1; a candidate past the budget is left out and the next ones
    still tried.

    Raises:
        AnalysisError: unknown or non-numeric target, max_predictors or max_parameters < 1,
            or no usable numeric predictor.
    """
    _require_numeric(df, target)
    for name, cap in (("max_predictors", max_predictors), ("max_parameters", max_parameters)):
        if cap is not None and cap < 1:
            raise AnalysisError(f"{name} must be at least 1, got {cap}")
    candidates = [c for c in numeric_columns(df) if c != target and c not in exclude]
    if not candidates:
        raise AnalysisError(f"no numeric predictors for target {target!r}")
    data = df[[target, *candidates]].astype(float)
    corr = data.corr()  # pairwise-complete pearson
    measures = {c: _ranking_measure(c in nominal, nominal_target) for c in candidates}
    strength = {c: _strength(data, target, c, measures[c], corr) for c in candidates}
    ranked = [c for c in candidates if np.isfinite(strength[c])]
    ranked.sort(key=lambda c: -strength[c])  # stable: ties keep frame order
    chosen: list[str] = []
    dropped: list[tuple[str, str, float]] = []
    limited: list[str] = []
    left = math.inf if max_parameters is None else max_parameters
    for i, c in enumerate(ranked):
        if len(chosen) == max_predictors:
            limited.extend(ranked[i:])
            break
        twin = next((k for k in chosen if c not in nominal and k not in nominal
                     and abs(corr.at[c, k]) > _COLLINEAR), None)  # fmt: skip
        cost = max(int(data[c].nunique()) - 1, 1) if c in nominal else 1
        if twin is not None:
            dropped.append((c, twin, float(corr.at[c, twin])))
        elif cost > left:
            limited.append(c)
        else:
            chosen.append(c)
            left -= cost
    if not chosen:
        why = (f"each candidate's parameters exceed max_parameters={max_parameters}"
               if limited else "every candidate is constant or empty")  # fmt: skip
        raise AnalysisError(f"no numeric predictors for target {target!r}: {why}")
    return PredictorChoice(chosen=chosen, dropped=dropped, measures=measures, limited=limited)


def _ranking_measure(nominal: bool, nominal_target: bool) -> str:
    if nominal and nominal_target:
        return "cramers_v"
    if nominal_target:
        return "eta_target"  # the candidate over the target's classes
    return "eta" if nominal else "pearson"


def _strength(data: pd.DataFrame, target: str, c: str, measure: str, corr: pd.DataFrame) -> float:
    """How strongly candidate `c` goes with the target by `measure` (pearson: |r|)."""
    if measure == "cramers_v":
        return cramers_v(data[c], data[target])
    if measure == "eta":  # the target over the nominal candidate's levels
        return eta(data[target], data[c])
    if measure == "eta_target":  # the candidate over the nominal target's classes
        return eta(data[c], data[target])
    return abs(float(corr.at[c, target]))


def check_predictors(df: pd.DataFrame, target: str, predictors: Sequence[str]) -> list[str]:
    """The given predictors de-duplicated (order kept), each checked to be a numeric column.

    Raises:
        AnalysisError: none given, unknown or non-numeric column, the target itself, "const".
    """
    return _check_predictors(df, target, predictors)


def _check_predictors(df: pd.DataFrame, target: str, predictors: Sequence[str]) -> list[str]:
    chosen = list(dict.fromkeys(predictors))  # de-duplicated, order kept
    if not chosen:
        raise AnalysisError(f"no numeric predictors given for target {target!r}")
    for p in chosen:
        _require_numeric(df, p)
        if p == target:
            raise AnalysisError(f"predictor {p!r} is the target itself")
        if p == "const":
            raise AnalysisError("a predictor may not be named 'const' (the intercept's name)")
    return chosen


def reference_level(values: pd.Series) -> float:
    """The reference level of a nominal predictor: its most frequent value (missing values
    ignored; the smallest of those tied)."""
    levels, counts = np.unique(values.dropna().astype(float).to_numpy(), return_counts=True)
    return float(levels[int(np.argmax(counts))])


def design_matrix(
    df: pd.DataFrame, target: str, chosen: Sequence[str], *, nominal: Sequence[str] = ()
) -> tuple[pd.Series, pd.DataFrame]:
    """The target and the design matrix (a constant, then `chosen`) over the rows complete
    in every used column, for any model of `target` on `chosen`. A `nominal` predictor
    enters as dummies, one per level present but its `reference_level`, in place, named
    `conventions.dummy_term` ("occupation=2").

    Raises:
        AnalysisError: fewer complete rows than coefficients + 1, or collinear predictors.
    """
    chosen = list(chosen)
    data = df[[target, *chosen]].astype(float).dropna()
    parts = []
    for c in chosen:
        if c not in nominal:
            parts.append(data[[c]])
            continue
        ref = reference_level(data[c])
        levels = [v for v in np.unique(data[c].to_numpy()) if v != ref]
        parts.append(pd.DataFrame(
            {dummy_term(c, v): (data[c] == v).astype(float) for v in levels},
            index=data.index,
        ))  # fmt: skip
    x = pd.concat(parts, axis=1) if parts else data[[]]
    if len(data) < x.shape[1] + 2:
        raise AnalysisError(
            f"too few complete rows ({len(data)}) to fit {target!r} on {len(chosen)} "
            f"predictor(s); need at least {x.shape[1] + 2}"
        )
    design = sm.add_constant(x, has_constant="add")  # (N, 1 + P)
    if np.linalg.matrix_rank(design.to_numpy()) < design.shape[1]:
        raise AnalysisError(f"predictors {chosen} are collinear (with each other or the constant)")
    return data[target], design


def ols(
    df: pd.DataFrame,
    target: str,
    predictors: Sequence[str] | None = None,
    *,
    max_predictors: int = 6,
) -> OLSFit:
    """Fit `target ~ const + predictors` by ordinary least squares (statsmodels).

    Args:
        df: the table.
        target: the numeric dependent variable.
        predictors: numeric regressors; default: the numeric columns most correlated with the
            target (|r|), skipping any with |r| > 0.98 to an already chosen one.
        max_predictors: the most predictors to choose by default.

    Returns:
        The fit, over the rows with no missing value in the used columns.

    Raises:
        AnalysisError: unknown or non-numeric column, no numeric predictors, collinear
            predictors, or too few complete rows (fewer than predictors + 2).
    """
    _require_numeric(df, target)
    if max_predictors < 1:
        raise AnalysisError(f"max_predictors must be at least 1, got {max_predictors}")
    if predictors is None:
        chosen = select_predictors(df, target, max_predictors).chosen
    else:
        chosen = _check_predictors(df, target, predictors)
    y, design = design_matrix(df, target, chosen)
    res = sm.OLS(y, design).fit()
    names = ["const", *chosen]
    return OLSFit(
        target=target,
        predictors=chosen,
        coef={n: float(res.params[n]) for n in names},
        se={n: float(res.bse[n]) for n in names},
        pvalues={n: float(res.pvalues[n]) for n in names},
        r2=float(res.rsquared),
        adj_r2=float(res.rsquared_adj),
        nobs=int(res.nobs),
        f_pvalue=float(res.f_pvalue),
    )


def part_frame(df: pd.DataFrame, target: str, part: str) -> pd.DataFrame:
    """The rows and target a part of a two-part model is fitted on: "any", every row with
    the target replaced by 1.0 where it is > 0, else 0.0 (missing stays missing);
    "positive", the rows where the target is > 0; "": the table itself.

    Raises:
        AnalysisError: an unknown part.
    """
    if part == "":
        return df
    values = df[target]
    if part == "any":
        return df.assign(**{target: (values > 0).astype(float).where(values.notna())})
    if part == "positive":
        return df[values > 0]
    raise AnalysisError(f"unknown part {part!r}; parts: 'any', 'positive'")


def outliers(df: pd.DataFrame, column: str, *, k: float = 1.5) -> int:
    """Count values outside the Tukey fences [Q1 - k*IQR, Q3 + k*IQR] (missing values ignored).

    Raises:
        AnalysisError: the column is missing or not numeric, or k < 0.
    """
    _require_numeric(df, column)
    if k < 0:
        raise AnalysisError(f"k must be non-negative, got {k}")
    s = df[column].dropna().astype(float)
    if s.empty:
        return 0
    q1, q3 = float(s.quantile(0.25)), float(s.quantile(0.75))
    iqr = q3 - q1
    return int(((s < q1 - k * iqr) | (s > q3 + k * iqr)).sum())


def _mention(text: str, column: str) -> int | None:
    """Position of the first whole-word, case-insensitive mention of `column` in `text`."""
    forms = {column, column.replace("_", " ")}
    hits = []
    for form in forms:
        pattern = rf"(?<![A-Za-z0-9_]){re.escape(form)}(?![A-Za-z0-9_])"
        m = re.search(pattern, text, flags=re.IGNORECASE)
        if m:
            hits.append(m.start())
    return min(hits) if hits else None


def pick_target(df: pd.DataFrame, hint: str | None, designated: str | None) -> str | None:
    """Choose the dependent variable for a question.

    Args:
        df: the table.
        hint: the question text; a numeric column named in it (case-insensitive whole word,
            "_" may be written as a space) wins. If several are named, the designated one
            wins, else the one mentioned first.
        designated: the dataset's designated target, used when the hint names none.

    Returns:
        A numeric column (the fallback is the last one with two or more distinct values), or
        None when the table has no numeric column.
    """
    numeric = [str(c) for c in numeric_columns(df)]
    if not numeric:
        return None
    if hint:
        named = {c: pos for c in numeric if (pos := _mention(hint, c)) is not None}
        if designated in named:
            return designated
        if named:
            return min(named, key=lambda c: (named[c], -len(c)))
    if designated in numeric:
        return designated
    varying = [c for c in numeric if df[c].nunique(dropna=True) >= 2]
    return varying[-1] if varying else numeric[-1]
