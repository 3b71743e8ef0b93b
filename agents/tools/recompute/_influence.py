"""The influence of a fit's rows by Cook's distance, from textbook formulas (numpy / scipy).

OLS: the leverages h are the squared row norms of Q in X = QR, and row i's Cook's distance
is D_i = e_i² h_i / (P · MSE · (1 - h_i)²), MSE = RSS / (N - P). Logit, in its GLM form (as
statsmodels' GLM influence gives it): the leverages of the weighted design W^½ X,
W = p (1 - p) at the maximum-likelihood fit (`_refit.logit`), and D_i = r_i² h_i /
(P (1 - h_i)²) with the Pearson residual r_i = (e_i - p_i) / √W_i. A row is influential
when D_i > 4 / N. Rows are named by their position in the table, from 0; the largest's row
is the first within `conventions.TIES_RTOL` of it.

`without_influential`: the rows a logit is refitted on without its influential ones, and
without the rows of any level of a nominal predictor then left with one outcome only (that
level's coefficient would diverge; the others' estimates are their limit, the fit without
those rows), repeated until no level is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
from scipy import special

from kimmy_swarm.agents.tools.conventions import TIES_RTOL, AnalysisError
from kimmy_swarm.agents.tools.recompute._design import complete_rows, design, part_rows
from kimmy_swarm.agents.tools.recompute._refit import fitted

__all__ = ["cooks_distances", "influence_statistic", "logit_cooks_distances", "without_influential"]

#: A row whose Cook's distance exceeds this over the number of rows fitted is influential.
_INFLUENTIAL = 4.0


def _leverages(x: np.ndarray) -> np.ndarray:
    """The diagonal of the hat matrix of the design x (N, P): the squared row norms of Q."""
    q, _ = np.linalg.qr(x)  # (N, P)
    return np.sum(q * q, axis=1)


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


def logit_cooks_distances(y: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Cook's distance of each row of the logit of y (its larger value the event) on the
    design x (N, P), from its Pearson residuals and weighted leverages: (N,)."""
    e = (y == y.max()).astype(float)
    p1 = special.expit(x @ fitted("logit", y, x)["coef"])  # type: ignore[operator]
    w = p1 * (1.0 - p1)  # (N,)
    h = _leverages(x * np.sqrt(w)[:, None])
    with np.errstate(divide="ignore", invalid="ignore"):  # leverage 1: no distance
        return (e - p1) ** 2 / w * h / (x.shape[1] * (1.0 - h) ** 2)


_DISTANCES: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "ols": cooks_distances, "logit": logit_cooks_distances,
}  # fmt: skip


def _distances(
    df: pd.DataFrame, model: str, target: str, predictors: Sequence[str] | None,
    nominal: Sequence[str],
) -> np.ndarray:  # fmt: skip
    if predictors is None:
        raise AnalysisError("Cook's distance needs the fit's predictor list (`predictors`)")
    if model not in _DISTANCES:
        raise AnalysisError(f"no Cook's distance of a {model!r} fit; of: {sorted(_DISTANCES)}")
    y, x, _ = design(df, target, list(predictors), nominal)
    n, p = x.shape
    if n <= p or np.linalg.matrix_rank(x) < p:
        raise AnalysisError(f"{n} complete rows cannot fit {list(predictors)} with a constant")
    found = fitted(f"cooks: {model}", y, x, fitter=lambda y, x: {"d": _DISTANCES[model](y, x)})
    return found["d"]  # type: ignore[return-value]


def influence_statistic(
    df: pd.DataFrame,
    statistic: str,
    target: str,
    predictors: Sequence[str] | None,
    *,
    nominal: Sequence[str] = (),
    model: str = "ols",
) -> float:
    """influential (rows with Cook's distance > 4/N), cooks_max or cooks_max_row of the OLS
    or logit fit of target; `df`'s index labels are the rows' positions in the table.

    Raises:
        AnalysisError: no predictors, another model, too few complete rows or collinear
            predictors, or no row has a defined Cook's distance.
    """
    cooks = _distances(df, model, target, predictors, nominal)
    defined = np.isfinite(cooks)
    if statistic == "influential":
        return float(np.sum(defined & (cooks > _INFLUENTIAL / len(cooks))))
    if not np.any(defined):
        raise AnalysisError("no row has a defined Cook's distance (every leverage is 1)")
    largest = float(np.max(cooks[defined]))
    top = int(np.flatnonzero(defined & (cooks >= largest * (1 - TIES_RTOL)))[0])
    if statistic == "cooks_max":
        return float(cooks[top])
    return float(complete_rows(df, target, list(predictors or []))[top])  # cooks_max_row


def without_influential(
    df: pd.DataFrame, target: str, predictors: Sequence[str] | None, nominal: Sequence[str],
    part: str,
) -> pd.DataFrame:  # fmt: skip
    """The rows (of `part`) a logit is refitted on without its influential ones (module
    docstring), rows named by their position in the table."""
    rows = part_rows(df.reset_index(drop=True), target, part)
    cooks = _distances(rows, "logit", target, predictors, nominal)
    influential = np.isfinite(cooks) & (cooks > _INFLUENTIAL / len(cooks))
    kept = rows.drop(index=complete_rows(rows, target, list(predictors or []))[influential])
    while len(separated := _separated_levels(kept, target, list(predictors or []), nominal)):
        kept = kept.drop(index=separated)
    return kept


def _separated_levels(
    df: pd.DataFrame, target: str, predictors: list[str], nominal: Sequence[str]
) -> np.ndarray:
    """The complete rows of every level of a nominal predictor whose rows all share one
    outcome (index labels)."""
    data = df.loc[complete_rows(df, target, predictors)]
    y = data[target].to_numpy(dtype=float)
    out = []
    for name in nominal:
        values = data[name].to_numpy(dtype=float)
        for level in np.unique(values):
            rows = values == level
            if len(np.unique(y[rows])) < 2:
                out.extend(data.index[rows])
    return np.asarray(out)
