"""Regression diagnostics (statsmodels): residual normality, heteroscedasticity, influential
rows, collinearity.

What applies depends on the family: the residual checks — Jarque–Bera normality and the
Breusch–Pagan test of constant variance (Koenker's studentised form, statsmodels' default)
— are OLS checks; the influence of each row (Cook's distance: how many rows exceed 4/n, and
the largest with its row) is checked for OLS and for a (maximum-likelihood, binary) logit,
through its GLM form; the collinearity checks — the variance inflation factor (VIF) of each
predictor and the condition number of the design [1, X] — concern the predictors and apply
to every family. `agents.tools.recompute` recomputes each number independently.

What is done about influential rows: an OLS fit is run again without a row whose distance
exceeds `DOMINANT`; a logit without all its influential rows (and without the rows of a
level of a nominal predictor then left with one outcome, whose coefficient would diverge:
the others' estimates are their limit, the fit without those rows), so a reading can say
whether a predictor's sign or significance rests on them.
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
from kimmy_swarm.agents.tools._classifiers import Separated, checked_fit
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
    the OLS fit refitted without that row, by term. influence (logit): as for OLS, of its
    GLM form; `without_influential`: term -> (coefficient, p-value) of the logit refitted
    without its influential rows (module docstring; a level of a nominal predictor left with
    one outcome has no term there), or empty with `refit_failed` saying why. vif: term ->
    VIF (only with two or more terms; a nominal predictor's dummies each have one).
    cond_number: the 2-norm condition number of the design with its constant (unscaled, as
    statsmodels reports it).
    """

    target: str
    predictors: list[str]
    residual: dict[str, float] = field(default_factory=dict)
    influence: dict[str, float] = field(default_factory=dict)
    cooks_max_label: str = ""
    without_row: dict[str, float] = field(default_factory=dict)
    without_influential: dict[str, tuple[float, float]] = field(default_factory=dict)
    refit_failed: str = ""
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
    logit: bool = False,
    nominal: Sequence[str] = (),
    part: str = "",
) -> Diagnostics:
    """Diagnose the fit of `target` on `predictors` (complete rows, with a constant).

    Args:
        df: the table.
        target: the dependent variable.
        predictors: the fit's predictors.
        ols: whether the model is OLS (then the residual and influence checks are run too).
        logit: whether the model is a maximum-likelihood binary logit (then its influence
            checks are run too).
        nominal: predictors entered as dummies (`stats.design_matrix`); each dummy gets a VIF.
        part: the part of a two-part model diagnosed ("any", "positive": `stats.part_frame`).

    Raises:
        AnalysisError: unknown or non-numeric columns, too few complete rows, or both `ols`
            and `logit`.
    """
    if ols and logit:
        raise AnalysisError("a model is OLS or a logit, not both (ols=True, logit=True)")
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
    checks: dict[str, Any] = {}
    if ols:
        checks = _ols_checks(y, design, labels, refit=not dummies)
    elif logit:
        checks = _logit_checks(y, design, labels, data, chosen, dummies)
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
    cooks = np.asarray(res.get_influence().cooks_distance[0])  # (N,)
    out: dict[str, Any] = {"residual": residual, **_influence(cooks, y.index, labels)}
    if not out["influence"]:
        return out
    top = int(out["influence"]["cooks_max_row"])
    if refit and out["influence"]["cooks_max"] > DOMINANT:
        kept = y.index != top
        params = sm.OLS(y[kept], design[kept]).fit().params
        out["without_row"] = {str(k): float(v) for k, v in params.items()}
    return out


def _influence(cooks: np.ndarray, rows: pd.Index, labels: pd.Index) -> dict[str, Any]:
    """Cook's distances (N,) of a fit over `rows` (their positions in the table; `labels`:
    the table's own index): how many exceed `INFLUENTIAL`/n, the largest and its row (the
    first of those tied for it within `conventions.TIES_RTOL`), labelled where the table
    names its rows; a row of leverage 1 has none."""
    defined = np.isfinite(cooks)
    if not np.any(defined):
        return {"influence": {}}
    largest = np.max(cooks[defined])
    top = int(np.argmax(defined & (cooks >= largest * (1 - TIES_RTOL))))  # the first of ties
    influence = {
        "influential": float(np.sum(_influential(cooks))),
        "cooks_max": float(cooks[top]),
        "cooks_max_row": float(rows[top]),
    }
    named = not labels.equals(pd.RangeIndex(len(labels)))  # the table names its rows
    label = {"cooks_max_label": str(labels[rows[top]])} if named else {}
    return {"influence": influence, **label}


def _influential(cooks: np.ndarray) -> np.ndarray:
    """Which rows are influential: Cook's distance > `INFLUENTIAL`/n (n: the rows fitted)."""
    return np.isfinite(cooks) & (cooks > INFLUENTIAL / len(cooks))


def _logit_checks(
    y: pd.Series, design: pd.DataFrame, labels: pd.Index, data: pd.DataFrame,
    chosen: list[str], nominal: list[str],
) -> dict[str, Any]:  # fmt: skip
    """The influence of the rows of the logit of y (its larger value the event) on the
    design, through its GLM form (index: the rows' positions in the table, `labels` the
    table's own), and the logit refitted on `data` without them (`_without_influential`)."""
    event = (y == y.max()).astype(float)
    res = sm.GLM(event, design, family=sm.families.Binomial()).fit()
    cooks = np.asarray(res.get_influence().cooks_distance[0])  # (N,)
    out = _influence(cooks, y.index, labels)
    if out["influence"].get("influential"):
        kept = data.drop(index=y.index[_influential(cooks)])
        refit, failed = _without_influential(kept, str(y.name), chosen, nominal,
                                             list(design.columns))  # fmt: skip
        out.update(without_influential=refit, refit_failed=failed)
    return out


def _without_influential(
    data: pd.DataFrame, target: str, chosen: list[str], nominal: list[str], terms: list[str]
) -> tuple[dict[str, tuple[float, float]], str]:
    """The logit refitted on `data` (the rows kept) once the rows of every level of a
    nominal predictor left with one outcome are dropped too (again until none is): term ->
    (coefficient, p-value) over the `terms` of the reported fit, or why there is none."""
    complete = data[[target, *chosen]].astype(float).dropna()
    while single := [
        complete.index[complete[c] == level]
        for c in nominal
        for level, outcomes in complete.groupby(c)[target].nunique().items()
        if outcomes < 2
    ]:
        complete = complete.drop(index=np.concatenate(single))
    if complete[target].nunique() < 2:
        return {}, f"every row left has the same {target}"
    y, design = stats.design_matrix(complete, target, chosen, nominal=nominal)
    if not set(design.columns) <= set(terms):  # a new reference level: other dummies
        return {}, "a nominal predictor's most frequent level changes, so its dummies differ"
    try:
        res = checked_fit(sm.Logit((y == y.max()).astype(float), design))
    except Separated as exc:
        return {}, (
            f"its maximum-likelihood estimate does not exist ({exc}: the rows left are "
            "(almost) perfectly separated)"
        )
    return {t: (float(res.params[t]), float(res.pvalues[t])) for t in design.columns}, ""
