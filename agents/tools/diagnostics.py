"""Regression diagnostics (statsmodels): residual normality, heteroscedasticity, influential
rows, collinearity.

What applies depends on the family: the residual checks — Jarque–Bera normality and the
Breusch–Pagan test of constant variance (Koenker's studentised form, statsmodels' default)
— and the influence of each row (Cook's distance: how many rows exceed 4/n, and the largest
with its row) are OLS checks; the collinearity checks — the variance inflation factor (VIF) of
each predictor and the condition number of the design [1, X] — concern the predictors and
apply to every family. `agents.tools.recompute` recomputes each number independently.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import statsmodels.api as sm
from statsmodels.stats.diagnostic import het_breuschpagan
from statsmodels.stats.outliers_influence import variance_inflation_factor
from statsmodels.stats.stattools import jarque_bera

from kimmy_swarm.agents.tools import stats
from kimmy_swarm.agents.tools.conventions import TIES_RTOL, AnalysisError

__all__ = ["DOMINANT", "INFLUENTIAL", "VIF_HIGH", "Diagnostics", "diagnose"]

#: A VIF above this means a predictor is largely explained by the others.
VIF_HIGH = 10.0
#: A row whose Cook's distance exceeds this over the number of rows fitted is influential.
INFLUENTIAL = 4.0
#: A Cook's distance above this (about the median of F(P, N - P)) moves the coefficients
#: past their 50% confidence region: the fit is also run without that row.
DOMINANT = 1.0


@dataclass(frozen=True)
class Diagnostics:
    """Diagnostics of `target ~ const + predictors`; `residual` is empty unless OLS.

    residual: jb, jb_pvalue (Jarque–Bera), bp, bp_pvalue (Breusch–Pagan LM on the
    predictors). influence (OLS): influential (rows with Cook's distance > `INFLUENTIAL`/n),
    cooks_max (the largest Cook's distance), cooks_max_row (its row, counted from 0 by
    position in the table); `cooks_max_label` is that row's label where the table names its
    rows (else ""). `without_row`: when the largest Cook's distance exceeds `DOMINANT` (and
    no predictor is nominal, whose levels a dropped row could change), the coefficients of
    the OLS fit refitted without that row, by term. vif: term -> VIF (only with two or more
    terms; a nominal predictor's dummies each have one). cond_number: the 2-norm condition
    number of the design with its constant (unscaled, as statsmodels
    reports it).
    """

    target: str
    predictors: list[str]
    residual: dict[str, float] = field(default_factory=dict)
    influence: dict[str, float] = field(default_factory=dict)
    cooks_max_label: str = ""
    without_row: dict[str, float] = field(default_factory=dict)
    vif: dict[str, float] = field(default_factory=dict)
    cond_number: float = float("nan")
    nominal: list[str] = field(default_factory=list)
    part: str = ""


def diagnose(
    df: pd.DataFrame,
    target: str,
    predictors: Sequence[str],
    *,
    ols: bool = True,
    nominal: Sequence[str] = (),
    part: str = "",
) -> Diagnostics:
    """Diagnose the fit of `target` on `predictors` (complete rows, with a constant).

    Args:
        df: the table.
        target: the dependent variable.
        predictors: the fit's predictors.
        ols: whether the model is OLS (then the residual checks are run too).
        nominal: predictors entered as dummies (`stats.design_matrix`); each dummy gets a VIF.
        part: the part of a two-part model diagnosed ("any", "positive": `stats.part_frame`).

    Raises:
        AnalysisError: unknown or non-numeric columns, or too few complete rows.
    """
    chosen = stats.check_predictors(df, target, predictors)
    stats.describe(df, [target])  # unknown / non-numeric target: a clear error
    labels = df.index
    df = df.reset_index(drop=True)  # a row is named by its position in the table
    data = stats.part_frame(df, target, part)
    complete = data[[target, *chosen]].astype(float).dropna()
    if len(complete) < len(chosen) + 2:
        raise AnalysisError(
            f"too few complete rows ({len(complete)}) to diagnose {target!r} on {chosen}"
        )
    y, design = stats.design_matrix(data, target, chosen, nominal=nominal)  # (N,), (N, 1 + P)
    x = design.to_numpy()
    terms = list(design.columns[1:])
    vif = {}
    if len(terms) >= 2:
        vif = {p: float(variance_inflation_factor(x, i + 1)) for i, p in enumerate(terms)}
    dummies = [c for c in chosen if c in nominal]
    checks = _ols_checks(y, design, labels, refit=not dummies) if ols else {}
    return Diagnostics(
        target=target,
        predictors=chosen,
        vif=vif,
        cond_number=float(np.linalg.cond(x)),
        nominal=dummies,
        part=part,
        **checks,
    )


def _ols_checks(
    y: pd.Series, design: pd.DataFrame, labels: pd.Index, *, refit: bool
) -> dict[str, Any]:
    """The residual tests and the influence of the rows of the OLS fit of y on the design,
    whose index holds the rows' positions in the table (`labels`: the table's own index);
    `refit`: refit without a dominant row (D > `DOMINANT`) when there is one."""
    res = sm.OLS(y, design).fit()
    jb, jb_p, _, _ = jarque_bera(res.resid)
    bp, bp_p, _, _ = het_breuschpagan(res.resid, design.to_numpy())
    residual = {"jb": float(jb), "jb_pvalue": float(jb_p), "bp": float(bp),
                "bp_pvalue": float(bp_p)}  # fmt: skip
    influence = _influence(res, y.index.to_numpy())
    out: dict[str, Any] = {"residual": residual, "influence": influence}
    if not influence:
        return out
    top = int(influence["cooks_max_row"])
    if not labels.equals(pd.RangeIndex(len(labels))):  # the table names its rows
        out["cooks_max_label"] = str(labels[top])
    if refit and influence["cooks_max"] > DOMINANT:
        kept = y.index != top
        params = sm.OLS(y[kept], design[kept]).fit().params
        out["without_row"] = {str(k): float(v) for k, v in params.items()}
    return out


def _influence(res: object, rows: np.ndarray) -> dict[str, float]:
    """Cook's distances of an OLS fit over `rows` (their positions in the table): how many
    exceed `INFLUENTIAL`/n, the largest and its row (the first of those tied for it within
    `conventions.TIES_RTOL`); a row of leverage 1 has none."""
    cooks = np.asarray(res.get_influence().cooks_distance[0])  # type: ignore[attr-defined]  # (N,)
    defined = np.isfinite(cooks)
    if not np.any(defined):
        return {}
    largest = np.max(cooks[defined])
    top = int(np.argmax(defined & (cooks >= largest * (1 - TIES_RTOL))))  # the first of ties
    return {
        "influential": float(np.sum(defined & (cooks > INFLUENTIAL / len(cooks)))),
        "cooks_max": float(cooks[top]),
        "cooks_max_row": float(rows[top]),
    }
