"""The numbers an analyst reports (`NumericFinding`) and their independent recomputation.

`recompute` does not call `agents.tools.stats`: describe statistics and correlations come
from numpy/scipy directly, regression statistics from `numpy.linalg.lstsq` and the textbook
formulas. It shares only the conventions documented in `stats` (ddof=1, bias-corrected skew,
pairwise-complete correlation, complete-case OLS with a constant, linear quartiles, k=1.5).
Grouped comparisons are recomputed by `agents.tools._group_recompute` (textbook ANOVA,
Kruskal–Wallis and Welch formulas; not `agents.tools.groups`). The other model families
(logit, multinomial logit, Poisson, negative binomial, their penalised fallbacks), the fit
measures (AIC, log-likelihood, McFadden pseudo-R², accuracy, dispersion, alpha) and the
diagnostics (Jarque–Bera, Breusch–Pagan, VIF, condition number) by `agents.tools._refit`:
each model refitted from its likelihood with numpy/scipy, not statsmodels or scikit-learn,
sharing only the conventions of `agents.tools.families` and `agents.tools.models`.

Example:
    >>> f = NumericFinding(statistic="mean", columns=["TOTEMP"], value=65317.0)
    >>> verify(load_dataset("statsmodels:longley").frame, f).verdict
    'verified'
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from decimal import Decimal
from typing import Literal, get_args

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, model_validator
from scipy import stats as sps

from agents.tools import diagnostics, models, stats
from agents.tools._group_recompute import group_statistic
from agents.tools._refit import refit_statistic
from agents.tools.families import ModelFamily
from agents.tools.stats import AnalysisError

__all__ = [
    "GROUP_STATISTICS",
    "INTEGER_STATISTICS",
    "STATISTICS",
    "NumericFinding",
    "Statistic",
    "Verdict",
    "findings_from_analysis",
    "recompute",
    "verify",
]

Statistic = Literal[
    "count", "missing", "mean", "median", "std", "min", "max", "skew", "corr", "slope",
    "intercept", "se", "pvalue", "r2", "adj_r2", "nobs", "outliers",
    # grouped comparisons: columns [value, group] (`agents.tools.groups`)
    "group_count", "group_mean", "group_median", "welch_t", "welch_pvalue",
    "anova_f", "anova_pvalue", "kruskal_h", "kruskal_pvalue", "eta_squared",
    # model fit measures and diagnostics (`agents.tools.models`, `agents.tools.diagnostics`)
    "aic", "llf", "pseudo_r2", "accuracy", "dispersion", "alpha",
    "jb", "jb_pvalue", "bp", "bp_pvalue", "vif", "cond_number",
]  # fmt: skip
#: The model a model statistic belongs to.
Model = ModelFamily
STATISTICS: tuple[str, ...] = get_args(Statistic)
# Counts are compared exactly: a relative tolerance would accept a wrong row count.
INTEGER_STATISTICS = frozenset({"count", "missing", "nobs", "outliers", "group_count"})
_COLUMN_STATS = frozenset({"count", "missing", "mean", "median", "std", "min", "max", "skew"})
_PAIR_STATS = frozenset({"corr", "slope", "se", "pvalue", "vif"})  # [a, b] / [target, predictor]
_FIT_STATS = frozenset({"aic", "llf", "pseudo_r2", "accuracy", "dispersion", "alpha"})
_DIAGNOSTICS = frozenset({"jb", "jb_pvalue", "bp", "bp_pvalue", "vif", "cond_number"})
_MODEL_STATS = frozenset(
    {"slope", "intercept", "se", "pvalue", "r2", "adj_r2", "nobs", *_FIT_STATS, *_DIAGNOSTICS}
)
_WALD_MODELS = frozenset({"ols", "logit", "mnlogit", "poisson", "negbin"})  # not penalised
_GLMS = frozenset({"logit", "mnlogit", "poisson", "negbin", "logit_l2", "mnlogit_l2"})
_CLASSIFIERS = frozenset({"logit", "mnlogit", "logit_l2", "mnlogit_l2"})
# Which models report which statistics (coefficients, nobs, llf, vif, cond_number: all).
_ONLY_FOR: dict[str, frozenset[str]] = {
    **dict.fromkeys(("r2", "adj_r2", "jb", "jb_pvalue", "bp", "bp_pvalue"), frozenset({"ols"})),
    **dict.fromkeys(("se", "pvalue", "aic"), _WALD_MODELS),
    "pseudo_r2": _GLMS, "accuracy": _CLASSIFIERS,
    "dispersion": frozenset({"poisson"}), "alpha": frozenset({"negbin"}),
}  # fmt: skip
_LEVELLED = frozenset({"mnlogit", "mnlogit_l2"})  # coefficients per class (`level`)
_TUKEY_K = 1.5
#: Statistics of one group (`group` names it; welch: that group against the other rows).
_PER_GROUP_STATS = frozenset(
    {"group_count", "group_mean", "group_median", "welch_t", "welch_pvalue"}
)
#: Grouped-comparison statistics: columns [value, group].
GROUP_STATISTICS = _PER_GROUP_STATS | {
    "anova_f", "anova_pvalue", "kruskal_h", "kruskal_pvalue", "eta_squared"
}  # fmt: skip


class NumericFinding(BaseModel):
    """One reported number and what it is a statistic of.

    `columns`: [col] for count/missing/mean/median/std/min/max/skew/outliers; [a, b] for corr;
    [target, predictor] for slope/se/pvalue (predictor "const" means the intercept);
    [target] for intercept/r2/adj_r2/nobs. `predictors` is the fit's full predictor list for
    model statistics (default for slope/se/pvalue: the one predictor, a simple regression).
    `method` applies to corr only. `outliers` counts values beyond Tukey fences with k=1.5.
    Grouped comparisons (`agents.tools.groups`) take [value, group column]: group_count,
    group_mean, group_median, welch_t, welch_pvalue of the group `group` names (its
    `group_key`; welch: that group against the other rows), and anova_f, anova_pvalue,
    kruskal_h, kruskal_pvalue, eta_squared of all groups (`group` None). `note` may carry a
    group's display name (sklearn's class name of a target code).

    Model statistics also name their `model` (default "ols"; `agents.tools.models`): fit
    measures aic, llf, pseudo_r2 (McFadden), accuracy (in-sample share classified right),
    dispersion (Poisson Pearson chi²/df), alpha (NB2) take [target]; diagnostics jb,
    jb_pvalue, bp, bp_pvalue (OLS residuals) and cond_number take [target], vif
    [target, predictor]. A multinomial model's coefficients name their class in `level`
    (the class value, e.g. "2"; the base class has none, except in "mnlogit_l2").
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    statistic: Statistic
    columns: list[str]
    value: float
    predictors: list[str] | None = None
    note: str = ""
    method: Literal["pearson", "spearman", "kendall"] = "pearson"
    group: str | None = None
    model: Model = "ols"
    level: str = ""

    @model_validator(mode="after")
    def _check_shape(self) -> NumericFinding:
        if (self.group is not None) != (self.statistic in _PER_GROUP_STATS):
            raise ValueError(
                f"`group` names the group of {sorted(_PER_GROUP_STATS)} only; "
                f"statistic {self.statistic!r} got group={self.group!r}"
            )
        want = 2 if self.statistic in _PAIR_STATS | GROUP_STATISTICS else 1
        if len(self.columns) != want:
            raise ValueError(
                f"statistic {self.statistic!r} takes {want} column(s), got {self.columns}"
            )
        if self.predictors is not None:
            if self.statistic not in _MODEL_STATS:
                raise ValueError(
                    f"predictors apply to model statistics only, not {self.statistic!r}"
                )
            if not self.predictors or self.columns[0] in self.predictors:
                raise ValueError(
                    f"predictors must be non-empty and exclude the target {self.columns[0]!r}"
                )
            if self.statistic in _PAIR_STATS and self.columns[1] not in (*self.predictors, "const"):
                raise ValueError(
                    f"predictor {self.columns[1]!r} is not among the fit's predictors "
                    f"{self.predictors}"
                )
        return self._check_model()

    def _check_model(self) -> NumericFinding:
        allowed = _ONLY_FOR.get(self.statistic)
        if allowed is not None and self.model not in allowed:
            raise ValueError(
                f"statistic {self.statistic!r} does not apply to model {self.model!r}; "
                f"it applies to {sorted(allowed)}"
            )
        if self.model != "ols" and self.statistic not in _MODEL_STATS:
            raise ValueError(f"model applies to model statistics only, not {self.statistic!r}")
        coefficient = self.statistic in ("slope", "intercept", "se", "pvalue")
        if self.level and not (coefficient and self.model in _LEVELLED):
            raise ValueError(
                f"level applies to the coefficients of {sorted(_LEVELLED)} only, "
                f"not {self.statistic!r} of {self.model!r}"
            )
        return self


class Verdict(BaseModel):
    """The fact-checker's judgement of one finding."""

    model_config = ConfigDict(frozen=True)

    finding: NumericFinding
    recomputed: float | None
    verdict: Literal["verified", "mismatch", "unverifiable"]
    reason: str = ""


def _column(df: pd.DataFrame, name: str) -> pd.Series:
    if name not in df.columns:
        shown = ", ".join(map(str, list(df.columns)[:30]))
        raise AnalysisError(f"unknown column {name!r}; columns: {shown}")
    return df[name]


def _numeric(df: pd.DataFrame, name: str) -> np.ndarray:
    """The column as float64 with missing values removed."""
    s = _column(df, name)
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


def _column_stat(statistic: str, df: pd.DataFrame, name: str) -> float:
    if statistic == "missing":
        return float(pd.isna(_column(df, name).to_numpy()).sum())
    x = _numeric(df, name)
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


def _corr(df: pd.DataFrame, a: str, b: str, method: str) -> float:
    _numeric(df, a), _numeric(df, b)  # type and existence checks
    xy = df[[a, b]].to_numpy(dtype=float, na_value=np.nan)  # (N, 2)
    xy = xy[~np.isnan(xy).any(axis=1)]
    if xy.shape[0] < 2 or np.ptp(xy[:, 0]) == 0 or np.ptp(xy[:, 1]) == 0:
        return math.nan
    if method == "pearson":
        return float(np.corrcoef(xy[:, 0], xy[:, 1])[0, 1])
    if method == "spearman":
        return float(sps.spearmanr(xy[:, 0], xy[:, 1]).statistic)
    return float(sps.kendalltau(xy[:, 0], xy[:, 1]).statistic)


def _outliers(x: np.ndarray) -> float:
    if x.size == 0:
        return 0.0
    q1, q3 = np.percentile(x, [25, 75])
    iqr = q3 - q1
    return float(np.count_nonzero((x < q1 - _TUKEY_K * iqr) | (x > q3 + _TUKEY_K * iqr)))


def _model_stat(df: pd.DataFrame, finding: NumericFinding) -> float:
    """Regression statistics by least squares: b = lstsq([1, X], y), then textbook formulas."""
    target = finding.columns[0]
    predictors = finding.predictors
    if predictors is None:
        if finding.statistic not in _PAIR_STATS:
            raise AnalysisError(
                f"{finding.statistic!r} needs the fit's predictor list (`predictors`)"
            )
        if finding.columns[1] == "const":
            raise AnalysisError("an intercept statistic needs the fit's predictor list")
        predictors = [finding.columns[1]]
    for name in (target, *predictors):
        _numeric(df, name)
    data = df[[target, *predictors]].to_numpy(dtype=float, na_value=np.nan)  # (N, 1 + P)
    data = data[~np.isnan(data).any(axis=1)]
    n, p = data.shape[0], len(predictors) + 1  # p counts the constant
    if finding.statistic == "nobs":
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
    stat = finding.statistic
    if stat == "r2":
        return r2
    if stat == "adj_r2":
        return 1.0 - (1.0 - r2) * (n - 1) / (n - p)
    if stat == "intercept":
        return float(beta[0])
    k = 0 if finding.columns[1] == "const" else 1 + predictors.index(finding.columns[1])
    if stat == "slope":
        return float(beta[k])
    cov = (rss / (n - p)) * np.linalg.pinv(x.T @ x)  # (P, P)
    se = math.sqrt(float(cov[k, k]))
    if stat == "se":
        return se
    return float(2.0 * sps.t.sf(abs(beta[k] / se), df=n - p))  # pvalue


def recompute(df: pd.DataFrame, finding: NumericFinding) -> float:
    """Recompute a finding's statistic from the raw table.

    Returns:
        The value (NaN where the statistic is undefined, e.g. std of one value).

    Raises:
        AnalysisError: a column is missing or not numeric, predictors are missing for a model
            statistic, or the regression cannot be fit.
    """
    stat = finding.statistic
    if stat in _COLUMN_STATS:
        return _column_stat(stat, df, finding.columns[0])
    if stat == "outliers":
        return _outliers(_numeric(df, finding.columns[0]))
    if stat == "corr":
        return _corr(df, finding.columns[0], finding.columns[1], finding.method)
    if stat in GROUP_STATISTICS:
        return group_statistic(df, stat, list(finding.columns), finding.group)
    if stat in _FIT_STATS or stat in _DIAGNOSTICS or finding.model != "ols":
        return refit_statistic(df, finding)
    return _model_stat(df, finding)


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


def _finding(statistic: str, columns: list[str], value: float, **extra: object) -> NumericFinding:
    return NumericFinding.model_validate(
        {"statistic": statistic, "columns": columns, "value": value, **extra}
    )


def _model_findings(fit: models.ModelFit, diag: diagnostics.Diagnostics) -> list[NumericFinding]:
    """The coefficients, fit measures and diagnostics of a fit as findings."""
    t, model = fit.target, {"predictors": fit.predictors, "model": fit.family}
    out = []
    for c in fit.coefficients:
        extra = {**model, **({"level": c.level} if c.level else {})}
        if c.term == "const":
            out.append(_finding("intercept", [t], c.coef, **extra))
        else:
            out.append(_finding("slope", [t, c.term], c.coef, **extra))
        if math.isfinite(c.se):
            out.append(_finding("se", [t, c.term], c.se, **extra))
            out.append(_finding("pvalue", [t, c.term], c.pvalue, **extra))
    out.extend(_finding(name, [t], v, **model) for name, v in fit.measures.items())
    out.append(_finding("nobs", [t], fit.nobs, **model))
    if fit.family == "negbin" and fit.poisson_dispersion is not None:
        out.append(_finding("dispersion", [t], fit.poisson_dispersion,
                            predictors=fit.predictors, model="poisson"))  # fmt: skip
    out.extend(_finding(name, [t], v, **model) for name, v in diag.residual.items())
    out.extend(_finding("vif", [t, p], v, **model) for p, v in diag.vif.items())
    out.append(_finding("cond_number", [t], diag.cond_number, **model))
    return out


def findings_from_analysis(
    df: pd.DataFrame,
    *,
    target: str | None,
    predictors: Sequence[str] | None = None,
    columns: Sequence[str] | None = None,
    top_corr: int = 3,
    max_predictors: int = 6,
    labels: Sequence[str] | None = None,
) -> list[NumericFinding]:
    """Compute a standard finding set with `stats`, `models` and `diagnostics` (the
    analyst's path).

    Args:
        df: the table.
        target: the dependent variable; None skips the model findings.
        predictors: the fit's predictors; default chosen by `stats.select_predictors`.
        columns: the columns to describe; default the target and the fit's predictors (or
            the first six numeric columns when there is no target).
        top_corr: how many of the strongest correlations to report.
        max_predictors: passed to `models.fit_model` when `predictors` is None.
        labels: the target's class names, when the source designates it a class label.

    Returns:
        Findings for describe statistics, missing counts, outliers, the top correlations
        and, with a target, the model `families.choose_family` picks: its coefficients, fit
        measures and diagnostics. Non-finite values (e.g. std of one value) are left out.

    Raises:
        AnalysisError: as `stats.describe`, `stats.correlations` and `models.fit_model` do.
    """
    fit = None
    if target:
        fit = models.fit_model(df, target, predictors, max_predictors=max_predictors,
                               labels=labels)  # fmt: skip
    if columns is None:
        columns = [target, *fit.predictors] if fit else stats.numeric_columns(df)[:6]
    out: list[NumericFinding] = []
    counts = stats.missing(df)
    for col, desc in stats.describe(df, columns).items():
        out.extend(_finding(name, [col], v) for name, v in desc.items())
        out.append(_finding("missing", [col], counts[str(col)]))
        out.append(_finding("outliers", [col], stats.outliers(df, col)))
    for a, b, r in stats.correlations(df, top=top_corr):
        out.append(_finding("corr", [a, b], r))
    if fit is not None:
        diag = diagnostics.diagnose(df, target, fit.predictors, ols=fit.family == "ols")
        out.extend(_model_findings(fit, diag))
    return [f for f in out if math.isfinite(f.value)]
