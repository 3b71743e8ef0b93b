"""OLS coefficients and fit statistics by least squares and the textbook formulas.

The analyst's OLS comes from statsmodels (`agents.tools.stats.ols`); this one solves
b = lstsq([1, X], y) over the complete rows and derives R², adjusted R², standard errors
and t-test p-values by hand, sharing only the conventions: complete-case rows, a constant
named "const", residual variance RSS / (N - P), nominal predictors as dummies (`_design`).
HC3 standard errors are the sandwich (X'X)⁻¹ X' diag(e²/(1-h)²) X (X'X)⁻¹ with the
leverages h, and their p-values come from the normal distribution. The influence of its rows (Cook's
distance) is `_influence`'s.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats as sps

from kimmy_swarm.agents.tools.conventions import AnalysisError
from kimmy_swarm.agents.tools.finding import PAIR_STATISTICS
from kimmy_swarm.agents.tools.recompute._design import design, term_index
from kimmy_swarm.agents.tools.recompute._refit import Fit, fitted

__all__ = ["ols_statistic"]


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
    fit = fitted("ols: least squares", y, x, fitter=_least_squares)
    if fit["rank"] < p:
        raise AnalysisError(f"predictors {predictors} are collinear")
    r2 = 1.0 - fit["rss"] / fit["tss"]  # type: ignore[operator]
    if statistic == "r2":
        return r2
    if statistic == "adj_r2":
        return 1.0 - (1.0 - r2) * (n - 1) / (n - p)
    k = 0 if statistic == "intercept" else term_index(names, term)
    beta = fit["beta"][k]  # type: ignore[index]
    if statistic in ("slope", "intercept"):
        return float(beta)
    se = float(fit["hc3" if cov_type == "HC3" else "se"][k])  # type: ignore[index]
    if statistic == "se":
        return se
    if cov_type == "HC3":
        return float(2.0 * sps.norm.sf(abs(beta / se)))
    return float(2.0 * sps.t.sf(abs(beta / se), df=n - p))  # pvalue


def _least_squares(y: np.ndarray, x: np.ndarray) -> Fit:
    """The least-squares fit of y (N,) on x (N, P): coefficients, rank, RSS, TSS, and the
    classical and HC3 standard errors (None where x is rank-deficient)."""
    n, p = x.shape
    beta, _, rank, _ = np.linalg.lstsq(x, y, rcond=None)  # (P,)
    resid = y - x @ beta
    fit: Fit = {"beta": beta, "rank": int(rank), "rss": float(resid @ resid),
                "tss": float(((y - y.mean()) ** 2).sum())}  # fmt: skip
    if rank < p:
        return fit
    # (X'X)^-1 = R^-1 R^-T from X = QR: inverting X'X itself squares the condition number
    # (longley's GNP on YEAR: 4e8 -> 2e17), past what a pseudo-inverse of it resolves
    r_inv = np.linalg.inv(np.linalg.qr(x, mode="r"))  # (P, P)
    q = x @ r_inv  # (N, P): X R⁻¹, whose squared row norms are the leverages
    w = (resid / (1.0 - np.sum(q * q, axis=1))) ** 2  # (N,)
    fit["se"] = np.sqrt(float(fit["rss"]) / (n - p) * np.sum(r_inv * r_inv, axis=1))
    fit["hc3"] = np.sqrt(np.einsum("kp,pq,kq->k", r_inv, (q.T * w) @ q, r_inv))
    return fit
