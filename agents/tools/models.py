"""Fit the model a target calls for (statsmodels), with the fit measures of its family.

The family comes from `agents.tools.families.choose_family` (the rule, and why); a count
target's Poisson fit is switched to negative binomial (NB2) when it is overdispersed
(Pearson chi²/df > `OVERDISPERSED`) and NB2 has an interior maximum (else Poisson, with a
note).

Fit measures: OLS R², adjusted R², AIC, log-likelihood; logit / multinomial logit McFadden
pseudo-R², AIC, log-likelihood and in-sample accuracy, the cross-validated accuracy, and
for a binary logit the cross-validated AUC (`_classifiers.cross_validated`: each fold
refitted with the reported fit's estimator, penalised or not); counts McFadden
pseudo-R², AIC, log-likelihood and the dispersion (Poisson) or alpha (NB2). When the classes
are perfectly separated (the maximum-likelihood coefficients are infinite) the logit is
refitted with an L2 penalty (scikit-learn, C = 1, predictors standardised) and that is said
in `notes`; such a fit has no standard errors or p-values.

OLS standard errors are HC3 heteroscedasticity-robust (`cov_type`, p-values from the normal
distribution) when the Breusch–Pagan test of its residuals (Koenker's form, as
`agents.tools.diagnostics` reports it) rejects constant variance at `ROBUST_ALPHA`.

A zero-heavy target (`families.TWO_PART`) gets a two-part model: `parts` holds the logit of
"any" (target > 0, all rows; `part` "any") and the OLS of the amount over the rows where the
target is positive (`part` "positive"), each a `ModelFit` of its own.

Predictors the column types (`agents.tools.variables`) call nominal enter as dummies
(`stats.design_matrix`: one per level but the most frequent, the reference, which `notes`
name); ordinal ones enter as ordered scores, and `notes` say so. `agents.tools.recompute`
recomputes every number independently.

The default predictors are as many as the data can support (`parameter_budget`): one
parameter per `EVENTS_PER_PARAMETER` events of the rarer outcome class of a classifier, per
`ROWS_PER_PARAMETER` rows of an OLS or count model (a two-part model: the stricter of its
parts), never fewer than `MIN_PARAMETERS`; a nominal predictor costs its levels - 1.

Each fit keeps the standard deviation of each term of its design over the rows fitted
(`sds`: a coefficient times it is the effect of one SD), and a penalised one the bootstrap
percentile intervals of its coefficients (`intervals`, `finding.BOOTSTRAP_RESAMPLES`
resamples drawn as `finding` says).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd
import statsmodels.api as sm
from statsmodels.stats.diagnostic import het_breuschpagan

from kimmy_swarm.agents.tools import stats
from kimmy_swarm.agents.tools._classifiers import (
    PENALTY_C,
    Coefficient,
    Separated,
    cross_validated,
    fit_logit,
    fit_mnlogit,
    fit_penalised,
)
from kimmy_swarm.agents.tools.conventions import level_name
from kimmy_swarm.agents.tools.families import (
    FamilyChoice,
    ModelFamily,
    TargetKind,
    choose_family,
)
from kimmy_swarm.agents.tools.finding import BOOTSTRAP_LEVEL, BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED
from kimmy_swarm.agents.tools.variables import ColumnType
from kimmy_swarm.agents.tools.warning_notes import noted_warnings

__all__ = [
    "EVENTS_PER_PARAMETER",
    "MIN_ALPHA",
    "MIN_PARAMETERS",
    "OVERDISPERSED",
    "PENALTY_C",
    "ROBUST_ALPHA",
    "ROWS_PER_PARAMETER",
    "Coefficient",
    "Interval",
    "ModelFit",
    "fit_model",
    "parameter_budget",
]

#: Poisson Pearson chi²/df above which a count model switches to negative binomial.
OVERDISPERSED = 1.5
#: NB2 alpha below which the negative binomial is taken to have collapsed to the Poisson.
MIN_ALPHA = 1e-4
#: Breusch–Pagan p-value below which OLS reports HC3 robust standard errors.
ROBUST_ALPHA = 0.05
#: Events of the rarer outcome class per parameter of a classifier's default predictors.
EVENTS_PER_PARAMETER = 10
#: Rows per parameter of an OLS or count model's default predictors.
ROWS_PER_PARAMETER = 15
#: Parameters the default predictors may use however small the data (as many as before
#: the budget followed the data: spector's 32 rows keep their 3 predictors).
MIN_PARAMETERS = 5


_NAMES = {"logit": "logistic regression", "mnlogit": "multinomial logit"}


@dataclass(frozen=True)
class Interval:
    """A penalised coefficient's bootstrap percentile interval (`level`: its class, as the
    coefficient's)."""

    term: str
    level: str
    low: float
    high: float


@dataclass(frozen=True)
class ModelFit:
    """A fitted model of `target`; `measures` maps a statistic name to its value.

    measures: r2, adj_r2 (OLS); aic (not for penalised fits); llf; pseudo_r2 (McFadden, not
    OLS); accuracy (logit, mnlogit); cv_accuracy (logit, mnlogit, when every fold could be
    fitted), cv_auc (binary logit, alike); dispersion (Poisson: Pearson chi²/df); alpha (negbin).
    `poisson_dispersion` is the Pearson chi²/df of the Poisson fit of a count target (the
    reason for switching to negative binomial when it exceeds `OVERDISPERSED`).
    `cov_type` is "HC3" where OLS standard errors are robust (`bp_pvalue` < `ROBUST_ALPHA`);
    `nominal` lists the predictors entered as dummies (terms "occupation=2"); `part` names
    the part of a two-part model a fit is ("any", "positive"), and a two-part model (family
    "two_part") has no coefficients of its own, only its `parts`. `ranked_by` says, for each
    candidate of a default predictor choice, the measure that ranked it ("pearson": |r|;
    "eta"; "cramers_v": `stats.select_predictors`); empty where the predictors were given.
    `max_parameters` is the parameter budget of a default choice (`parameter_budget`; None
    where the predictors were given or a caller capped them at `max_predictors` instead),
    and `limited` the candidates left out for either. `sds`: each design term's standard
    deviation (ddof=1) over the rows fitted; `intervals`: a penalised fit's bootstrap
    percentile intervals of its coefficients.
    """

    target: str
    predictors: list[str]
    kind: TargetKind
    family: ModelFamily
    reason: str
    coefficients: list[Coefficient]
    measures: dict[str, float]
    nobs: int
    classes: list[str] = field(default_factory=list)
    dropped: list[tuple[str, str, float]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    poisson_dispersion: float | None = None
    cov_type: str = "nonrobust"
    bp_pvalue: float | None = None
    nominal: list[str] = field(default_factory=list)
    part: str = ""
    parts: list[ModelFit] = field(default_factory=list)
    ranked_by: dict[str, str] = field(default_factory=dict)
    max_parameters: int | None = None
    max_predictors: int | None = None
    limited: list[str] = field(default_factory=list)
    sds: dict[str, float] = field(default_factory=dict)
    intervals: list[Interval] = field(default_factory=list)


def parameter_budget(values: pd.Series, family: ModelFamily) -> int:
    """The most parameters (besides the constant) the default predictors of a model of
    `values` in `family` may use: one per `EVENTS_PER_PARAMETER` rows of the rarer class of a
    logit or multinomial logit (a two-part model: of target > 0 or not, and one per
    `ROWS_PER_PARAMETER` of its positive rows, whichever allows fewer), one per
    `ROWS_PER_PARAMETER` rows otherwise; at least `MIN_PARAMETERS`."""
    y = values.dropna().astype(float)
    if family == "two_part":
        positive = int((y > 0).sum())
        rarer = min(positive, len(y) - positive)
        allowed = min(rarer // EVENTS_PER_PARAMETER, positive // ROWS_PER_PARAMETER)
    elif family in ("logit", "mnlogit"):
        allowed = int(y.value_counts().min()) // EVENTS_PER_PARAMETER if len(y) else 0
    else:
        allowed = len(y) // ROWS_PER_PARAMETER
    return max(MIN_PARAMETERS, allowed)


def _bootstrap(y: pd.Series, x: pd.DataFrame, classes: list[float]) -> list[Interval]:
    """Percentile intervals of the penalised coefficients (`_classifiers.fit_penalised`'s
    estimator: L2, C = `PENALTY_C`, predictors standardised anew in each resample) over
    `BOOTSTRAP_RESAMPLES` resamples of the rows, drawn and skipped as `finding` says.

    Each refit uses scikit-learn's Newton–Cholesky solver: the same minimum as the reported
    fit's L-BFGS, reached in a few steps (200 L-BFGS fits take a minute on a busy machine).
    """
    from sklearn.linear_model import LogisticRegression  # lazily: sklearn imports slowly

    codes = np.searchsorted(np.asarray(classes), y.to_numpy())  # (N,)
    xs = x.drop(columns="const")
    data = xs.to_numpy()  # (N, P)
    rng = np.random.RandomState(BOOTSTRAP_SEED)
    draws = []
    for _ in range(BOOTSTRAP_RESAMPLES):
        rows = rng.randint(0, len(codes), len(codes))
        spread = data[rows].std(axis=0)
        if len(np.unique(codes[rows])) < len(classes) or np.any(spread == 0):
            continue  # no fit without every class and a spread in each predictor
        z = (data[rows] - data[rows].mean(axis=0)) / spread
        clf = LogisticRegression(C=PENALTY_C, tol=1e-10, max_iter=1_000,
                                 solver="newton-cholesky").fit(z, codes[rows])  # fmt: skip
        draws.append(np.column_stack([clf.intercept_, clf.coef_]))  # (K, 1 + P)
    if not draws:
        return []
    tail = 50.0 * (1.0 - BOOTSTRAP_LEVEL)
    low, high = np.percentile(np.stack(draws), [tail, 100.0 - tail], axis=0)
    levels = [""] if len(classes) == 2 else [level_name(c) for c in classes]
    return [
        Interval(term, level, float(low[j, i]), float(high[j, i]))
        for j, level in enumerate(levels)
        for i, term in enumerate(["const", *xs.columns])
    ]


def _coefs(res: object, names: list[str], level: str = "") -> list[Coefficient]:
    params, bse, pv = res.params, res.bse, res.pvalues  # type: ignore[attr-defined]
    return [Coefficient(n, float(params[n]), float(bse[n]), float(pv[n]), level) for n in names]


def _fit_ols(
    y: pd.Series, x: pd.DataFrame
) -> tuple[list[Coefficient], dict[str, float], str, float]:
    """OLS, with HC3 standard errors when Breusch–Pagan rejects constant variance; returns
    the coefficients, the fit measures, the covariance type and the Breusch–Pagan p-value."""
    res = sm.OLS(y, x).fit()
    measures = {"r2": res.rsquared, "adj_r2": res.rsquared_adj, "aic": res.aic, "llf": res.llf}
    bp_pvalue = float(het_breuschpagan(res.resid, x.to_numpy())[1]) if x.shape[1] > 1 else 1.0
    cov_type = "HC3" if bp_pvalue < ROBUST_ALPHA else "nonrobust"
    if cov_type == "HC3":
        res = sm.OLS(y, x).fit(cov_type="HC3")
    coefs = _coefs(res, list(x.columns))
    return coefs, {k: float(v) for k, v in measures.items()}, cov_type, bp_pvalue


def _fit_count(y: pd.Series, x: pd.DataFrame) -> tuple[ModelFamily, list, dict, float]:
    """Poisson, or NB2 when the Poisson fit is overdispersed and NB2 has an interior MLE."""
    pois = sm.GLM(y, x, family=sm.families.Poisson()).fit()
    dispersion = float(pois.pearson_chi2 / pois.df_resid)
    nb = _fit_negbin(y, x, np.asarray(pois.params)) if dispersion > OVERDISPERSED else None
    if nb is None:
        measures = {
            "aic": pois.aic, "llf": pois.llf,
            "pseudo_r2": pois.pseudo_rsquared(kind="mcf"), "dispersion": dispersion,
        }  # fmt: skip
        return "poisson", _coefs(pois, list(x.columns)), measures, dispersion
    names = list(x.columns)
    measures = {
        "aic": nb.aic, "llf": nb.llf, "pseudo_r2": nb.prsquared, "alpha": nb.params["alpha"],
    }  # fmt: skip
    return "negbin", _coefs(nb, names), {k: float(v) for k, v in measures.items()}, dispersion


def _fit_negbin(y: pd.Series, x: pd.DataFrame, start: np.ndarray) -> object | None:
    """NB2 by Newton from the Poisson coefficients; the best converged of a few start alphas
    (None: no interior maximum — alpha tends to 0, where NB2 reduces to the Poisson).

    Newton from statsmodels' default start diverges on badly scaled predictors (cpunish's
    INCOME ~ 3e4); starting from the Poisson fit it converges in a few steps.
    """
    model = sm.NegativeBinomial(y, x, loglike_method="nb2")
    best = None
    for alpha in (0.1, 1.0, 0.01):
        with warnings.catch_warnings():  # best effort: overflow noise of a diverging start
            warnings.simplefilter("ignore", RuntimeWarning)
            res = model.fit(start_params=np.r_[start, alpha], method="newton", maxiter=200,
                            disp=0, warn_convergence=False)  # fmt: skip
        ok = res.mle_retvals.get("converged", False) and np.all(np.isfinite(res.bse))
        ok = ok and res.params["alpha"] > MIN_ALPHA  # at the boundary NB2 is the Poisson
        if ok and math.isfinite(res.llf) and (best is None or res.llf > best.llf):
            best = res
    return best


def fit_model(
    df: pd.DataFrame,
    target: str,
    predictors: Sequence[str] | None = None,
    *,
    max_predictors: int | None = None,
    labels: Sequence[str] | None = None,
    exclude: Sequence[str] = (),
    kinds: Mapping[str, ColumnType] | None = None,
) -> ModelFit:
    """Fit the model `choose_family` picks for `target` on `predictors` with a constant;
    numerical warnings of the fit (statsmodels' `RuntimeWarning`s) become its `notes`
    (`warning_notes.noted_warnings`), not lines on stderr.

    Args and Raises: as `_fit_model`.
    """
    with noted_warnings(f"fitting the model of {target}") as noted:
        fit = _fit_model(df, target, predictors, max_predictors=max_predictors, labels=labels,
                         exclude=exclude, kinds=kinds or {})  # fmt: skip
    fit.notes.extend(noted)
    return fit


def _fit_model(
    df: pd.DataFrame,
    target: str,
    predictors: Sequence[str] | None = None,
    *,
    max_predictors: int | None = None,
    labels: Sequence[str] | None = None,
    exclude: Sequence[str] = (),
    kinds: Mapping[str, ColumnType],
) -> ModelFit:
    """Fit the model `choose_family` picks for `target` on `predictors` with a constant.

    Args:
        df: the table.
        target: the numeric dependent variable.
        predictors: numeric regressors; default `stats.select_predictors` within the
            data's `parameter_budget` (near-duplicates left out and listed in `dropped`,
            those beyond the budget in `limited`).
        max_predictors: the most predictors to choose by default, in place of the budget
            (None: as many as the budget allows).
        labels: the target's class names when the source designates it a class label.
        exclude: columns never chosen as default predictors (class codes of a label).
        kinds: the columns' types (`variables.column_types`): nominal predictors enter as
            dummies, ordinal ones as ordered scores (said in `notes`).

    Raises:
        AnalysisError: as `choose_family` and `stats.ols` (unknown / non-numeric columns,
            collinear predictors, too few complete rows).
    """
    stats.describe(df, [target])  # unknown / non-numeric target: a clear error
    choice = choose_family(df[target], labels=labels)
    nominal_all = [c for c, t in kinds.items() if t.kind == "nominal" and c != target]
    picked = stats.PredictorChoice(chosen=[], dropped=[])
    budget = None
    if predictors is None:
        nominal_target = target in kinds and kinds[target].kind == "nominal"
        budget = parameter_budget(df[target], choice.family) if max_predictors is None else None
        picked = stats.select_predictors(df, target, max_predictors, max_parameters=budget,
                                         exclude=exclude, nominal=nominal_all,
                                         nominal_target=nominal_target)  # fmt: skip
        chosen = picked.chosen
    else:
        chosen = stats.check_predictors(df, target, predictors)
    nominal = [c for c in chosen if c in nominal_all]
    if choice.family == "two_part":
        fit = _two_part(df, target, chosen, nominal, choice)
    else:
        fit = _fit_one(df, target, chosen, nominal, choice)
    fit.dropped.extend(picked.dropped)
    fit.ranked_by.update(picked.measures)
    fit.limited.extend(picked.limited)
    fit.notes[:0] = _type_notes(df, chosen, nominal, kinds)
    cap = max_predictors if predictors is None else None
    return replace(fit, max_parameters=budget, max_predictors=cap)


def _type_notes(
    df: pd.DataFrame, chosen: list[str], nominal: list[str], kinds: Mapping[str, ColumnType]
) -> list[str]:
    """How the categorical predictors enter: dummies against a reference, ordered scores."""
    notes = []
    for c in nominal:
        ref = stats.reference_level(df[[c, *chosen]].dropna()[c])  # over the complete rows
        dummies = df[c].dropna().nunique() - 1
        meaning = kinds[c].meanings.get(level_name(ref), "")
        said = f" ({meaning})" if meaning else ""
        notes.append(
            f"{c} is nominal ({kinds[c].reason}): it enters as {dummies} dummies ({c}=level), "
            f"each against the reference level {c}={level_name(ref)}{said}, its most "
            "frequent one"
        )
    ordinal = [c for c in chosen if c in kinds and kinds[c].kind == "ordinal"]
    if ordinal:
        shown = ", ".join(_scale(kinds[c]) for c in ordinal)
        notes.append(
            f"treated as ordered scores: {shown}; each enters as one number, so a step of its "
            "scale is assumed to have the same effect anywhere on it"
        )
    return notes


def _scale(typed: ColumnType) -> str:
    """An ordered column with the meanings of its ends, else the reason it is ordered."""
    levels = list(typed.meanings)
    lo, hi = (typed.meanings[levels[0]], typed.meanings[levels[-1]]) if levels else ("", "")
    if lo and hi:
        return f"{typed.column} ({levels[0]} = {lo} … {levels[-1]} = {hi})"
    return f"{typed.column} ({typed.reason})"


def _two_part(
    df: pd.DataFrame, target: str, chosen: list[str], nominal: list[str], choice: FamilyChoice
) -> ModelFit:
    """The logit of any (target > 0) over all rows, and OLS of the positive amounts."""
    any_reason = "logistic regression over all rows"
    any_fit = _fit_one(stats.part_frame(df, target, "any"), target, chosen, nominal,
                       FamilyChoice("binary", "logit", any_reason), part="any")  # fmt: skip
    positive = stats.part_frame(df, target, "positive")
    pos_reason = f"OLS of the amount over the {len(positive)} rows where {target} > 0"
    pos_fit = _fit_one(positive, target, chosen, nominal,
                       FamilyChoice("continuous", "ols", pos_reason), part="positive")  # fmt: skip
    return ModelFit(
        target=target, predictors=chosen, kind=choice.kind, family="two_part",
        reason=choice.reason, coefficients=[], measures={}, nobs=any_fit.nobs,
        nominal=nominal, parts=[any_fit, pos_fit],
    )  # fmt: skip


def _fit_one(
    df: pd.DataFrame,
    target: str,
    chosen: list[str],
    nominal: list[str],
    choice: FamilyChoice,
    *,
    part: str = "",
) -> ModelFit:
    """The model of one family (OLS, count, logit, multinomial logit) on a constant + chosen."""
    y, x = stats.design_matrix(df, target, chosen, nominal=nominal)
    classes = sorted(set(y.tolist()))
    family, notes, reason, dispersion = choice.family, [], choice.reason, None
    cov_type, bp_pvalue = "nonrobust", None
    if choice.kind == "continuous":
        coefs, measures, cov_type, bp_pvalue = _fit_ols(y, x)
        if cov_type == "HC3":
            shown = "p < 0.001" if bp_pvalue < 0.001 else f"p = {bp_pvalue:.2g}"
            reason += (
                f"; its residual variance is not constant (Breusch–Pagan {shown}, below "
                f"{ROBUST_ALPHA}), so the standard errors and p-values are HC3 robust ones"
            )
    elif choice.kind == "count":
        family, coefs, measures, dispersion = _fit_count(y, x)
        reason, notes = _count_reason(target, family, dispersion, reason)
    else:
        family, coefs, measures, notes = _fit_classifier(target, choice, y, x, classes)
    intervals = _bootstrap(y, x, classes) if family.endswith("_l2") else []
    return ModelFit(
        target=target,
        predictors=chosen,
        kind=choice.kind,
        family=family,
        reason=reason,
        coefficients=coefs,
        measures=measures,
        nobs=len(y),
        classes=[level_name(c) for c in classes]
        if choice.kind in ("binary", "categorical")
        else [],
        notes=notes,
        poisson_dispersion=dispersion,
        cov_type=cov_type,
        bp_pvalue=bp_pvalue,
        nominal=nominal,
        part=part,
        sds={str(c): float(x[c].std(ddof=1)) for c in x.columns[1:]},  # (1 + P) - the constant
        intervals=intervals,
    )


def _count_reason(
    target: str, family: str, dispersion: float | None, reason: str
) -> tuple[str, list[str]]:
    """The reason of a count model, extended by why it is (not) negative binomial."""
    notes = []
    if family == "negbin":
        reason += (
            f"; the Poisson fit is overdispersed (Pearson chi²/df = {dispersion:.3g} > "
            f"{OVERDISPERSED}), so negative binomial"
        )
    elif dispersion is not None and dispersion > OVERDISPERSED:
        reason += (
            f"; the Poisson fit's Pearson chi²/df is {dispersion:.3g} > {OVERDISPERSED}, "
            "but the negative binomial likelihood has no interior maximum (alpha -> 0, "
            "where it reduces to the Poisson), so Poisson"
        )
        notes.append(
            f"{target} looks overdispersed (Pearson chi²/df = {dispersion:.3g}) but the "
            "negative binomial fit collapses to the Poisson: the Poisson standard errors "
            "may be too small"
        )
    return reason, notes


def _fit_classifier(
    target: str, choice: FamilyChoice, y: pd.Series, x: pd.DataFrame, classes: list[float]
) -> tuple[ModelFamily, list[Coefficient], dict[str, float], list[str]]:
    """Logit / multinomial logit, penalised when separated, and cross-validated."""
    family: ModelFamily = choice.family
    notes = []
    fit = fit_logit if choice.kind == "binary" else fit_mnlogit
    try:
        coefs, measures = fit(y, x, classes)
    except Separated as exc:
        family = "logit_l2" if choice.kind == "binary" else "mnlogit_l2"
        notes.append(
            f"the maximum-likelihood {_NAMES[choice.family]} of {target} does not exist "
            f"({exc}: the coefficients diverge, as they do when the predictors perfectly "
            f"or almost perfectly separate the classes); refitted with an L2 penalty "
            f"(C = {PENALTY_C}) on standardised predictors, which has no standard errors "
            "or p-values"
        )
        coefs, measures = fit_penalised(y, x, classes)
    try:
        measures.update(cross_validated(y, x, classes, penalised=family.endswith("_l2")))
    except Separated as exc:
        what = "accuracy or AUC" if choice.kind == "binary" else "accuracy"
        notes.append(f"no cross-validated {what} of {target}: {exc} in a fold")
    return family, coefs, measures, notes
