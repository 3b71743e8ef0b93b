"""The fact-checker's independent recomputation of a reported number, and its verdict.

A fact-check vouches for a number only if it was computed a second, independent way, so
this package never imports the statistics code it checks (`agents.tools.stats`, `groups`,
`models`, `diagnostics`); an import-linter contract in pyproject.toml enforces that. Each
statistic is recomputed with numpy / scipy from the raw table:

- describe statistics, correlations and outlier counts (`_columns`);
- OLS coefficients, R², adjusted R², standard errors and p-values by least squares and
  the textbook formulas (`_ols`);
- grouped comparisons, from the textbook ANOVA, Kruskal–Wallis and Welch formulas
  (`_groups`);
- the other model families (logit, multinomial logit, Poisson, negative binomial, their
  penalised fallbacks) and their fit measures (AIC, log-likelihood, McFadden pseudo-R²,
  accuracy, dispersion, alpha), each model refitted from its likelihood, not statsmodels or
  scikit-learn (`_refit`);
- the OLS likelihood and the diagnostics (Jarque–Bera, Breusch–Pagan, VIF, condition
  number) from textbook formulas (`_diagnostics`);
- HC3 robust standard errors from the sandwich formula (`_ols`), nominal predictors as
  dummies and the rows of a two-part model's part (`_design`);
- Cook's distances of an OLS fit from the QR leverages and residuals, and of a logit from
  its Pearson residuals and weighted leverages (`_influence`); an OLS fit's coefficients
  refitted without a row (`without_row`), a logit's without its influential rows
  (`without_influential`);
- cross-validated accuracy (of a binary or multinomial logit, penalised or not) and AUC,
  each fold refitted (`_crossval`);
- the rows at each level of a categorical column (`_columns.level_count`) and their share,
  the distinct values of a column (`_columns.distinct_count`);
- the correlation ratio eta of a numeric column over a nominal one's levels and Cramér's V
  of two nominal columns (`_columns.correlation`);
- odds and rate ratios as exp of the refitted coefficient, and a coefficient's effect per
  standard deviation as the refitted coefficient times its term's SD over the rows fitted;
- bootstrap percentile intervals of a penalised fit's coefficients, each resample refitted
  (`_bootstrap`).

Both sides share only the conventions of `agents.tools.conventions` and those documented in
the modules they check (ddof=1, bias-corrected skew, pairwise-complete correlation,
complete-case regression with a constant, linear quartiles, Tukey k=1.5).

Example:
    >>> f = NumericFinding(statistic="mean", columns=["TOTEMP"], value=65317.0)
    >>> verify(load_dataset("statsmodels:longley").frame, f).verdict
    'verified'
"""

from __future__ import annotations

import math
from decimal import Decimal

import numpy as np
import pandas as pd

from kimmy_swarm.agents.tools.conventions import AnalysisError
from kimmy_swarm.agents.tools.finding import (
    COLUMN_STATISTICS,
    DIAGNOSTIC_STATISTICS,
    FIT_STATISTICS,
    GROUP_STATISTICS,
    INFLUENCE_STATISTICS,
    INTEGER_STATISTICS,
    NumericFinding,
    Verdict,
)
from kimmy_swarm.agents.tools.recompute._bootstrap import bootstrap_bound
from kimmy_swarm.agents.tools.recompute._columns import (
    column_statistic,
    correlation,
    distinct_count,
    level_count,
    numeric_values,
    outlier_count,
)
from kimmy_swarm.agents.tools.recompute._crossval import cross_validated
from kimmy_swarm.agents.tools.recompute._design import design, part_rows, term_index
from kimmy_swarm.agents.tools.recompute._groups import group_statistic
from kimmy_swarm.agents.tools.recompute._influence import (
    influence_statistic,
    without_influential,
)
from kimmy_swarm.agents.tools.recompute._ols import ols_statistic
from kimmy_swarm.agents.tools.recompute._refit import refit_statistic

__all__ = ["recompute", "verify"]


def recompute(df: pd.DataFrame, finding: NumericFinding) -> float:
    """Recompute a finding's statistic from the raw table.

    Returns:
        The value (NaN where the statistic is undefined, e.g. std of one value).

    Raises:
        AnalysisError: a column is missing or not numeric, predictors are missing for a model
            statistic, or the regression cannot be fit.
    """
    stat = finding.statistic
    if stat in COLUMN_STATISTICS:
        return column_statistic(stat, df, finding.columns[0])
    if stat == "outliers":
        return outlier_count(numeric_values(df, finding.columns[0]))
    if stat == "level_count":
        return level_count(numeric_values(df, finding.columns[0]), finding.level)
    if stat == "level_share":
        x = numeric_values(df, finding.columns[0])
        return level_count(x, finding.level) / x.size if x.size else math.nan
    if stat == "distinct":
        return distinct_count(numeric_values(df, finding.columns[0]))
    if stat == "corr":
        return correlation(df, finding.columns[0], finding.columns[1], finding.method)
    if stat in GROUP_STATISTICS:
        return group_statistic(df, stat, list(finding.columns), finding.group)
    return _model_statistic(df, finding)


def _model_statistic(df: pd.DataFrame, finding: NumericFinding) -> float:
    stat, target = finding.statistic, finding.columns[0]
    term = finding.columns[1] if len(finding.columns) > 1 else "const"
    if finding.without_row is not None:
        df = _without(df, finding.without_row)
    if finding.without_influential:
        df = without_influential(df, target, finding.predictors, finding.nominal, finding.part)
    if stat in INFLUENCE_STATISTICS:  # rows are named by position: count them before a part
        df = part_rows(df.reset_index(drop=True), target, finding.part)
        return influence_statistic(df, stat, target, finding.predictors,
                                   nominal=finding.nominal, model=finding.model)  # fmt: skip
    df = part_rows(df, target, finding.part)
    if stat in ("cv_accuracy", "cv_auc", "slope_per_sd", "ci_low", "ci_high"):
        return _design_statistic(df, finding, term)
    if stat in ("odds_ratio", "rate_ratio"):  # exp of the refitted coefficient
        return math.exp(refit_statistic(
            df, finding.model, "slope", target, finding.predictors, term=term,
            level=finding.level, nominal=finding.nominal,
        ))  # fmt: skip
    if stat in FIT_STATISTICS or stat in DIAGNOSTIC_STATISTICS or finding.model != "ols":
        return refit_statistic(
            df, finding.model, stat, target, finding.predictors, term=term, level=finding.level,
            nominal=finding.nominal,
        )  # fmt: skip
    return ols_statistic(
        df, stat, target, finding.predictors, term, nominal=finding.nominal,
        cov_type=finding.cov_type,
    )  # fmt: skip


def _design_statistic(df: pd.DataFrame, finding: NumericFinding, term: str) -> float:
    """A statistic of the fit's design itself: its cross-validation, a coefficient times its
    term's SD (ddof=1) over the rows fitted, a bootstrap bound of a penalised coefficient."""
    stat, target = finding.statistic, finding.columns[0]
    if finding.predictors is None:
        raise AnalysisError(f"{stat!r} needs the fit's predictor list (`predictors`)")
    y, x, names = design(df, target, finding.predictors, finding.nominal)
    if stat in ("cv_accuracy", "cv_auc"):
        return cross_validated(stat, finding.model, y, x)
    if stat in ("ci_low", "ci_high"):
        return bootstrap_bound(stat, y, x, term_index(names, term), finding.level)
    slope = _model_statistic(df, finding.model_copy(update={"statistic": "slope"}))
    return slope * float(np.std(x[:, term_index(names, term)], ddof=1))


def _without(df: pd.DataFrame, row: int) -> pd.DataFrame:
    """The table without its row at position `row` (from 0), whatever its index labels."""
    if row >= len(df):
        raise AnalysisError(f"no row {row} to leave out: the table has {len(df)} rows")
    return df.iloc[np.arange(len(df)) != row]


def _decimals(value: float) -> int:
    """Decimal places `value` was written with (negative for 1.5e20-style magnitudes)."""
    exponent = Decimal(repr(value)).as_tuple().exponent
    return -int(exponent) if isinstance(exponent, int) else 0


def _matches(stat: str, value: float, ref: float, rel_tol: float, abs_tol: float) -> bool:
    if math.isnan(value) or math.isnan(ref):
        return math.isnan(value) and math.isnan(ref)
    if math.isinf(value) or math.isinf(ref):
        return value == ref
    diff = abs(value - ref)
    if stat in INTEGER_STATISTICS:
        return diff == 0
    if diff <= max(abs_tol, rel_tol * abs(ref)):
        return True
    # `value` may be `ref` rounded to the decimals it was reported with (3.14 for 3.14159).
    half_unit = 0.5 * 10.0 ** (-_decimals(value))
    return diff <= half_unit * (1 + 1e-9)


def verify(
    df: pd.DataFrame, finding: NumericFinding, *, rel_tol: float = 1e-3, abs_tol: float = 1e-6
) -> Verdict:
    """Check a reported number against its recomputation.

    Verified when |v - r| <= max(abs_tol, rel_tol * |r|), or when v is r rounded to the
    decimals v was written with; counts (count, missing, nobs, outliers) must match exactly;
    a reported NaN matches an undefined statistic. Unverifiable when a column is missing or
    not numeric, the fit lacks its predictors, or the statistic is undefined on the data
    (reason says why).
    """
    try:
        ref = recompute(df, finding)
    except AnalysisError as exc:
        return Verdict(finding=finding, recomputed=None, verdict="unverifiable", reason=str(exc))
    if math.isnan(ref) and not math.isnan(finding.value):
        reason = f"{finding.statistic} is undefined on this data (e.g. too few or constant values)"
        return Verdict(finding=finding, recomputed=None, verdict="unverifiable", reason=reason)
    if _matches(finding.statistic, finding.value, ref, rel_tol, abs_tol):
        return Verdict(finding=finding, recomputed=ref, verdict="verified")
    reason = f"reported {finding.value!r}, recomputed {ref!r}"
    return Verdict(finding=finding, recomputed=ref, verdict="mismatch", reason=reason)
