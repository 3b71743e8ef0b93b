"""Regression diagnostics (statsmodels): residual normality, heteroscedasticity, collinearity.

What applies depends on the family: the residual checks — Jarque–Bera normality and the
Breusch–Pagan test of constant variance (Koenker's studentised form, statsmodels' default)
— are OLS assumptions; the collinearity checks — the variance inflation factor (VIF) of
each predictor and the condition number of the design [1, X] — concern the predictors and
apply to every family. `agents.tools.recompute` recomputes each number independently.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import statsmodels.api as sm
from statsmodels.stats.diagnostic import het_breuschpagan
from statsmodels.stats.outliers_influence import variance_inflation_factor
from statsmodels.stats.stattools import jarque_bera

from kimmy_swarm.agents.tools import stats
from kimmy_swarm.agents.tools.conventions import AnalysisError

__all__ = ["VIF_HIGH", "Diagnostics", "diagnose"]

#: A VIF above this means a predictor is largely explained by the others.
VIF_HIGH = 10.0


@dataclass(frozen=True)
class Diagnostics:
    """Diagnostics of `target ~ const + predictors`; `residual` is empty unless OLS.

    residual: jb, jb_pvalue (Jarque–Bera), bp, bp_pvalue (Breusch–Pagan LM on the
    predictors). vif: predictor -> VIF (only with two or more predictors). cond_number:
    the 2-norm condition number of the design with its constant (unscaled, as statsmodels
    reports it).
    """

    target: str
    predictors: list[str]
    residual: dict[str, float] = field(default_factory=dict)
    vif: dict[str, float] = field(default_factory=dict)
    cond_number: float = float("nan")


def diagnose(
    df: pd.DataFrame, target: str, predictors: Sequence[str], *, ols: bool = True
) -> Diagnostics:
    """Diagnose the fit of `target` on `predictors` (complete rows, with a constant).

    Args:
        df: the table.
        target: the dependent variable.
        predictors: the fit's predictors.
        ols: whether the model is OLS (then the residual checks are run too).

    Raises:
        AnalysisError: unknown or non-numeric columns, or too few complete rows.
    """
    chosen = stats.check_predictors(df, target, predictors)
    stats.describe(df, [target])  # unknown / non-numeric target: a clear error
    data = df[[target, *chosen]].astype(float).dropna()
    if len(data) < len(chosen) + 2:
        raise AnalysisError(
            f"too few complete rows ({len(data)}) to diagnose {target!r} on {chosen}"
        )
    design = sm.add_constant(data[chosen], has_constant="add")  # (N, 1 + P)
    x = design.to_numpy()
    vif = {}
    if len(chosen) >= 2:
        vif = {p: float(variance_inflation_factor(x, i + 1)) for i, p in enumerate(chosen)}
    residual = {}
    if ols:
        res = sm.OLS(data[target], design).fit()
        jb, jb_p, _, _ = jarque_bera(res.resid)
        bp, bp_p, _, _ = het_breuschpagan(res.resid, x)
        residual = {"jb": float(jb), "jb_pvalue": float(jb_p), "bp": float(bp),
                    "bp_pvalue": float(bp_p)}  # fmt: skip
    return Diagnostics(
        target=target,
        predictors=chosen,
        residual=residual,
        vif=vif,
        cond_number=float(np.linalg.cond(x)),
    )
