"""A standard set of findings computed the analyst's way (`agents.tools.stats`, `models`,
`diagnostics`), for tests that check the fact-checker's recomputation against it.

The analysis pipeline builds its findings through its tools (`agents.analysis.model_step`,
`agents.analysis.procedures`); this is the same set without a pipeline, so a test can ask
that every number of a dataset verifies and every tampered one does not.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from kimmy_swarm.agents.tools import diagnostics, models, stats, variables
from kimmy_swarm.agents.tools.finding import NumericFinding

__all__ = ["findings_from_analysis"]


def _finding(statistic: str, columns: list[str], value: float, **extra: object) -> NumericFinding:
    return NumericFinding.model_validate(
        {"statistic": statistic, "columns": columns, "value": value, **extra}
    )


def _effect_findings(
    fit: models.ModelFit, c: models.Coefficient, extra: dict[str, object]
) -> list[NumericFinding]:
    """A slope's effect per SD of its term (an unpenalised fit's) and its bootstrap interval
    (a penalised fit's), as `agents.analysis.tools` reports them."""
    t, out = fit.target, []
    if not fit.family.endswith("_l2") and c.term in fit.sds:
        out.append(_finding("slope_per_sd", [t, c.term], c.coef * fit.sds[c.term], **extra))
    for i in fit.intervals:
        if (i.term, i.level) == (c.term, c.level):
            out.append(_finding("ci_low", [t, c.term], i.low, **extra))
            out.append(_finding("ci_high", [t, c.term], i.high, **extra))
    return out


def _model_findings(fit: models.ModelFit, diag: diagnostics.Diagnostics) -> list[NumericFinding]:
    """The coefficients, fit measures and diagnostics of a fit (one part of a two-part model
    alike) as findings."""
    t, model = fit.target, {"predictors": fit.predictors, "model": fit.family}
    model.update({"part": fit.part, "nominal": fit.nominal})
    robust = {"cov_type": fit.cov_type} if fit.family == "ols" else {}
    out = []
    for c in fit.coefficients:
        extra = {**model, **({"level": c.level} if c.level else {})}
        if c.term == "const":
            out.append(_finding("intercept", [t], c.coef, **extra))
        else:
            out.append(_finding("slope", [t, c.term], c.coef, **extra))
            ratio = {"logit": "odds_ratio", "mnlogit": "odds_ratio", "poisson": "rate_ratio",
                     "negbin": "rate_ratio"}.get(fit.family)  # fmt: skip
            if ratio is not None:
                out.append(_finding(ratio, [t, c.term], math.exp(c.coef), **extra))
            out.extend(_effect_findings(fit, c, extra))
        if math.isfinite(c.se):
            out.append(_finding("se", [t, c.term], c.se, **extra, **robust))
            out.append(_finding("pvalue", [t, c.term], c.pvalue, **extra, **robust))
    out.extend(_finding(name, [t], v, **model) for name, v in fit.measures.items())
    out.append(_finding("nobs", [t], fit.nobs, **model))
    if fit.family == "negbin" and fit.poisson_dispersion is not None:
        out.append(_finding("dispersion", [t], fit.poisson_dispersion,
                            predictors=fit.predictors, model="poisson",
                            nominal=fit.nominal))  # fmt: skip
    out.extend(_finding(name, [t], v, **model) for name, v in diag.residual.items())
    out.extend(_finding(name, [t], v, **model) for name, v in diag.influence.items())
    for term, v in diag.without_row.items():  # refitted without the dominant row
        stat, columns = ("intercept", [t]) if term == "const" else ("slope", [t, term])
        out.append(_finding(stat, columns, v, **model,
                            without_row=int(diag.influence["cooks_max_row"])))  # fmt: skip
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
    kinds: dict[str, variables.ColumnType] | None = None,
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
        kinds: the column types (`variables.column_types`; default from the data alone):
            a categorical described column gets its level counts, a nominal predictor
            enters the model as dummies.

    Returns:
        Findings for describe statistics, missing counts, outliers, level counts of the
        categorical columns, the top correlations and, with a target, the model
        `families.choose_family` picks (each part of a two-part one): its coefficients,
        fit measures and diagnostics. Non-finite values (e.g. std of one value) are left out.

    Raises:
        AnalysisError: as `stats.describe`, `stats.correlations` and `models.fit_model` do.
    """
    fit = None
    kinds = variables.column_types(df) if kinds is None else kinds
    if target:
        fit = models.fit_model(df, target, predictors, max_predictors=max_predictors,
                               labels=labels, kinds=kinds)  # fmt: skip
    if columns is None:
        columns = [target, *fit.predictors] if fit else stats.numeric_columns(df)[:6]
    out: list[NumericFinding] = []
    counts = stats.missing(df)
    for col, desc in stats.describe(df, columns).items():
        out.extend(_finding(name, [col], v) for name, v in desc.items())
        out.append(_finding("missing", [col], counts[str(col)]))
        out.append(_finding("outliers", [col], stats.outliers(df, col)))
        if col in kinds and kinds[col].categorical:
            levels = variables.level_counts(df[col])
            out.extend(_finding("level_count", [col], n, level=lv) for lv, n in levels.items())
        values = df[col].dropna()
        out.append(_finding("distinct", [col], values.nunique()))
        if len(values) and (values == 0).any():
            out.append(_finding("level_share", [col], float((values == 0).mean()), level="0"))
    nominal = [c for c, t in kinds.items() if t.kind == "nominal"]
    for a, b, r, method in stats.associations(df, top=top_corr, nominal=nominal):
        out.append(_finding("corr", [a, b], r, method=method))
    for one in (fit.parts or [fit]) if fit is not None else []:
        diag = diagnostics.diagnose(df, one.target, one.predictors, ols=one.family == "ols",
                                    nominal=one.nominal, part=one.part)  # fmt: skip
        out.extend(_model_findings(one, diag))
    return [f for f in out if math.isfinite(f.value)]
