"""OLS coefficients and fit statistics by least squares and the textbook formulas.

The analyst's OLS comes from statsmodels (`agents.tools.stats.ols`); this one solves
b = lstsq([1, X], y) over the complete rows and derives R², adjusted R², standard errors
and t-test p-values by hand, sharing only the conventions: complete-case rows, a constant
named "const", residual variance RSS / (N - P).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats as sps

from kimmy_swarm.agents.tools.conventions import AnalysisError
from kimmy_swarm.agents.tools.finding import PAIR_STATISTICS
from kimmy_swarm.agents.tools.recompute._columns import numeric_values

__all__ = ["ols_statistic"]


def ols_statistic(
    df: pd.DataFrame,
    statistic: str,
    target: str,
    predictors: Sequence[str] | None,
    term: str = "const",
) -> float:
    """slope, intercept, se, pvalue, r2, adj_r2 or nobs of the OLS fit of target.

    Args:
        df: the table.
        statistic: the statistic.
        target: the dependent variable.
        predictors: the fit's predictors; None: the simple regression on `term` (for
            slope, se and pvalue only).
        term: the predictor a coefficient statistic is of ("const": the intercept).

    Raises:
        AnalysisError: a missing or non-numeric column, no predictor list where one is
            needed, too few complete rows, or collinear predictors.
    """
    if predictors is None:
        if statistic not in PAIR_STATISTICS:
            raise AnalysisError(f"{statistic!r} needs the fit's predictor list (`predictors`)")
        if term == "const":
            raise AnalysisError("an intercept statistic needs the fit's predictor list")
        predictors = [term]
    predictors = list(predictors)
    for name in (target, *predictors):
        numeric_values(df, name)
    data = df[[target, *predictors]].to_numpy(dtype=float, na_value=np.nan)  # (N, 1 + P)
    data = data[~np.isnan(data).any(axis=1)]
    n, p = data.shape[0], len(predictors) + 1  # p counts the constant
    if statistic == "nobs":
        return float(n)
    if n <= p:
        raise AnalysisError(f"{n} complete rows cannot fit {p} coefficients")
    y = data[:, 0]  # (N,)
    x = np.column_stack([np.ones(n), data[:, 1:]])  # (N, P)
    beta, _, rank, _ = np.linalg.lstsq(x, y, rcond=None)  # (P,)
    if rank < p:
        raise AnalysisError(f"predictors {predictors} are collinear")
    resid = y - x @ beta
    rss, tss = float(resid @ resid), float(((y - y.mean()) ** 2).sum())
    r2 = 1.0 - rss / tss
    if statistic == "r2":
        return r2
    if statistic == "adj_r2":
        return 1.0 - (1.0 - r2) * (n - 1) / (n - p)
    if statistic == "intercept":
        return float(beta[0])
    k = 0 if term == "const" else 1 + predictors.index(term)
    if statistic == "slope":
        return float(beta[k])
    cov = (rss / (n - p)) * np.linalg.pinv(x.T @ x)  # (P, P)
    se = math.sqrt(float(cov[k, k]))
    if statistic == "se":
        return se
    return float(2.0 * sps.t.sf(abs(beta[k] / se), df=n - p))  # pvalue
