"""OLS coefficients and fit statistics by least squares and the textbook formulas.

The analyst's OLS comes from statsmodels (`agents.tools.stats.ols`); this one solves
b = lstsq([1, X], y) over the complete rows and derives R², adjusted R², standard errors
and t-test p-values by hand, sharing only the conventions: complete-case rows, a constant
named "const", residual variance RSS / (N - P), nominal predictors as dummies (`_design`).
HC3 standard errors are the sandwich (X'X)⁻¹ X' diag(e²/(1-h)²) X (X'X)⁻¹ with the
leverages h, and their p-values come from the normal distribution.

Influence: the leverages h are the squared row norms of Q in X = QR, and row i's Cook's
distance is D_i = e_i² h_i / (P · MSE · (1 - h_i)²), MSE = RSS / (N - P); a row is
influential when D_i > 4 / N. Rows are named by their position in the table, from 0; the
largest's row is the first within `conventions.TIES_RTOL` of it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats as sps

from kimmy_swarm.agents.tools.conventions import TIES_RTOL, AnalysisError
from kimmy_swarm.agents.tools.finding import PAIR_STATISTICS
from kimmy_swarm.agents.tools.recompute._design import complete_rows, design, term_index

__all__ = ["cooks_distances", "influence_statistic", "ols_statistic"]


def ols_statistic(
    df: pd.DataFrame,
    statistic: str,
    target: str,
    predictors: Sequence[str] | None,
    term: str = "const",
    *,
    nominal: Sequence[str] = (),
    cov_type: str = "nonrobust",
) -> float:
    """slope, intercept, se, pvalue, r2, adj_r2 or nobs of the OLS fit of target.

    Args:
        df: the table.
        statistic: the statistic.
        target: the dependent variable.
        predictors: the fit's predictors; None: the simple regression on `term` (for
            slope, se and pvalue only).
        term: the predictor a coefficient statistic is of ("const": the intercept; a
            nominal predictor's dummy: "occupation=2").
        nominal: the predictors entered as dummies.
        cov_type: "HC3" for robust se and pvalue, else the classical ones.

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
    y, x, names = design(df, target, predictors, nominal)  # (N,), (N, P)
    n, p = x.shape  # p counts the constant
    if statistic == "nobs":
        return float(n)
    if n <= p:
        raise AnalysisError(f"{n} complete rows cannot fit {p} coefficients")
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
    k = term_index(names, term)
    if statistic == "slope":
        return float(beta[k])
    # (X'X)^-1 = R^-1 R^-T from X = QR: inverting X'X itself squares the condition number
    # (longley's GNP on YEAR: 4e8 -> 2e17), past what a pseudo-inverse of it resolves
    r_inv = np.linalg.inv(np.linalg.qr(x, mode="r"))  # (P, P)
    if cov_type == "HC3":
        q = x @ r_inv  # (N, P): X R⁻¹, whose squared row norms are the leverages
        w = (resid / (1.0 - np.sum(q * q, axis=1))) ** 2  # (N,)
        se = math.sqrt(float(r_inv[k] @ ((q.T * w) @ q) @ r_inv[k]))
    else:
        se = math.sqrt(rss / (n - p) * float(r_inv[k] @ r_inv[k]))
    if statistic == "se":
        return se
    if cov_type == "HC3":
        return float(2.0 * sps.norm.sf(abs(beta[k] / se)))
    return float(2.0 * sps.t.sf(abs(beta[k] / se), df=n - p))  # pvalue


def cooks_distances(y: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Cook's distance of each row of the OLS fit of y (N,) on the design x (N, P): (N,)."""
    n, p = x.shape
    q, r = np.linalg.qr(x)  # (N, P), (P, P)
    beta = np.linalg.solve(r, q.T @ y)  # (P,)
    resid = y - x @ beta
    h = np.sum(q * q, axis=1)  # (N,) leverages
    mse = float(resid @ resid) / (n - p)
    with np.errstate(divide="ignore", invalid="ignore"):  # leverage 1: no distance
        return resid**2 * h / (p * mse * (1.0 - h) ** 2)


def influence_statistic(
    df: pd.DataFrame,
    statistic: str,
    target: str,
    predictors: Sequence[str] | None,
    *,
    nominal: Sequence[str] = (),
) -> float:
    """influential (rows with Cook's distance > 4/N), cooks_max or cooks_max_row of the OLS
    fit of target; `df`'s index labels are the rows' positions in the table.

    Raises:
        AnalysisError: as `ols_statistic`, or no row has a defined Cook's distance.
    """
    if predictors is None:
        raise AnalysisError(f"{statistic!r} needs the fit's predictor list (`predictors`)")
    y, x, _ = design(df, target, list(predictors), nominal)
    n, p = x.shape
    if n <= p or np.linalg.matrix_rank(x) < p:
        raise AnalysisError(f"{n} complete rows cannot fit {predictors} with a constant")
    cooks = cooks_distances(y, x)
    if statistic == "influential":
        return float(np.sum(np.isfinite(cooks) & (cooks > 4.0 / n)))
    defined = np.isfinite(cooks)
    if not np.any(defined):
        raise AnalysisError("no row has a defined Cook's distance (every leverage is 1)")
    largest = float(np.max(cooks[defined]))
    top = int(np.flatnonzero(defined & (cooks >= largest * (1 - TIES_RTOL)))[0])
    if statistic == "cooks_max":
        return float(cooks[top])
    return float(complete_rows(df, target, list(predictors))[top])  # cooks_max_row
