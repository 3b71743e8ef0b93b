"""Fit the model a target calls for (statsmodels), with the fit measures of its family.

The family comes from `agents.tools.families.choose_family` (the rule, and why); a count
target's Poisson fit is switched to negative binomial (NB2) when it is overdispersed
(Pearson chi²/df > `OVERDISPERSED`) and NB2 has an interior maximum (else Poisson, with a
note).

Fit measures: OLS R², adjusted R², AIC, log-likelihood; logit / multinomial logit McFadden
pseudo-R², AIC, log-likelihood and in-sample accuracy; counts McFadden pseudo-R², AIC,
log-likelihood and the dispersion (Poisson) or alpha (NB2). When the classes are perfectly
separated (the maximum-likelihood coefficients are infinite) the logit is refitted with an
L2 penalty (scikit-learn, C = 1, predictors standardised) and that is said in `notes`; such
a fit has no standard errors or p-values. `agents.tools.recompute` recomputes every number
independently.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import statsmodels.api as sm
from statsmodels.tools.sm_exceptions import HessianInversionWarning, PerfectSeparationError

from kimmy_swarm.agents.tools import stats
from kimmy_swarm.agents.tools.conventions import level_name
from kimmy_swarm.agents.tools.families import ModelFamily, TargetKind, choose_family
from kimmy_swarm.agents.tools.warning_notes import noted_warnings

__all__ = [
    "MIN_ALPHA",
    "OVERDISPERSED",
    "PENALTY_C",
    "Coefficient",
    "ModelFit",
    "fit_model",
]

#: Poisson Pearson chi²/df above which a count model switches to negative binomial.
OVERDISPERSED = 1.5
#: NB2 alpha below which the negative binomial is taken to have collapsed to the Poisson.
MIN_ALPHA = 1e-4
#: The penalised fallback's inverse regularisation strength (scikit-learn's C).
PENALTY_C = 1.0


_NAMES = {"logit": "logistic regression", "mnlogit": "multinomial logit"}


@dataclass(frozen=True)
class Coefficient:
    """One coefficient; `level` is the class it belongs to in a multinomial model, else ""."""

    term: str
    coef: float
    se: float = math.nan
    pvalue: float = math.nan
    level: str = ""


@dataclass(frozen=True)
class ModelFit:
    """A fitted model of `target`; `measures` maps a statistic name to its value.

    measures: r2, adj_r2 (OLS); aic (not for penalised fits); llf; pseudo_r2 (McFadden, not
    OLS); accuracy (logit, mnlogit); dispersion (Poisson: Pearson chi²/df); alpha (negbin).
    `poisson_dispersion` is the Pearson chi²/df of the Poisson fit of a count target (the
    reason for switching to negative binomial when it exceeds `OVERDISPERSED`).
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


def _coefs(res: object, names: list[str], level: str = "") -> list[Coefficient]:
    params, bse, pv = res.params, res.bse, res.pvalues  # type: ignore[attr-defined]
    return [Coefficient(n, float(params[n]), float(bse[n]), float(pv[n]), level) for n in names]


def _fit_ols(y: pd.Series, x: pd.DataFrame) -> tuple[list[Coefficient], dict[str, float]]:
    res = sm.OLS(y, x).fit()
    measures = {"r2": res.rsquared, "adj_r2": res.rsquared_adj, "aic": res.aic, "llf": res.llf}
    return _coefs(res, list(x.columns)), {k: float(v) for k, v in measures.items()}


class _Separated(Exception):
    """The maximum-likelihood logit does not exist (perfect separation or no convergence)."""


def _checked_fit(model: object) -> object:
    """Newton fit of a discrete model; `_Separated` when the maximum likelihood does not exist.

    Separation is detected through statsmodels' own flag and result checks rather than a
    warnings filter, which is process-global and would race between analysis threads.
    """
    model.raise_on_perfect_prediction = True  # type: ignore[attr-defined]
    with warnings.catch_warnings():  # best effort: overflow noise of a diverging fit
        warnings.simplefilter("ignore", HessianInversionWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            res = model.fit(  # type: ignore[attr-defined]
                method="newton", maxiter=100, disp=0, warn_convergence=False
            )
        except (PerfectSeparationError, np.linalg.LinAlgError) as exc:
            raise _Separated(str(exc) or type(exc).__name__) from exc
    if not res.mle_retvals.get("converged", False):
        raise _Separated("the likelihood maximisation did not converge")
    if not np.all(np.isfinite(np.asarray(res.bse))):
        raise _Separated("the information matrix is singular")
    return res


def _accuracy(probs: np.ndarray, codes: np.ndarray) -> float:
    return float(np.mean(np.argmax(probs, axis=1) == codes))


def _fit_logit(y: pd.Series, x: pd.DataFrame, classes: list[float]) -> tuple[list, dict]:
    event = (y.to_numpy() == classes[-1]).astype(float)
    res = _checked_fit(sm.Logit(event, x))
    p1 = np.asarray(res.predict(x))
    acc = _accuracy(np.column_stack([1 - p1, p1]), event.astype(int))
    measures = {"aic": res.aic, "llf": res.llf, "pseudo_r2": res.prsquared, "accuracy": acc}
    return _coefs(res, list(x.columns)), {k: float(v) for k, v in measures.items()}


def _fit_mnlogit(y: pd.Series, x: pd.DataFrame, classes: list[float]) -> tuple[list, dict]:
    codes = np.searchsorted(np.asarray(classes), y.to_numpy())
    res = _checked_fit(sm.MNLogit(codes, x))
    coefs = []
    for j, cls in enumerate(classes[1:]):  # params columns: classes after the base
        level = level_name(cls)
        for n in x.columns:
            coefs.append(
                Coefficient(
                    n,
                    float(res.params.loc[n, j]),
                    float(res.bse.loc[n, j]),
                    float(res.pvalues.loc[n, j]),
                    level,
                )
            )
    acc = _accuracy(np.asarray(res.predict(x)), codes)
    measures = {"aic": res.aic, "llf": res.llf, "pseudo_r2": res.prsquared, "accuracy": acc}
    return coefs, {k: float(v) for k, v in measures.items()}


def _fit_penalised(y: pd.Series, x: pd.DataFrame, classes: list[float]) -> tuple[list, dict]:
    """L2-penalised (multinomial) logistic regression on standardised predictors (sklearn)."""
    from sklearn.linear_model import LogisticRegression  # lazily: sklearn imports slowly

    xs = x.drop(columns="const")
    z = (xs - xs.mean()) / xs.std(ddof=0)  # (N, P)
    codes = np.searchsorted(np.asarray(classes), y.to_numpy())
    clf = LogisticRegression(C=PENALTY_C, tol=1e-10, max_iter=10_000).fit(z.to_numpy(), codes)
    binary = len(classes) == 2
    levels = [""] if binary else [level_name(c) for c in classes]
    coefs = []
    for j, level in enumerate(levels):
        coefs.append(Coefficient("const", float(clf.intercept_[j]), level=level))
        coefs.extend(
            Coefficient(n, float(clf.coef_[j, i]), level=level) for i, n in enumerate(xs.columns)
        )
    probs = clf.predict_proba(z.to_numpy())  # (N, K)
    llf = float(np.log(probs[np.arange(len(codes)), codes]).sum())
    shares = np.bincount(codes) / len(codes)
    llnull = float((np.bincount(codes) * np.log(shares)).sum())
    measures = {"llf": llf, "pseudo_r2": 1.0 - llf / llnull, "accuracy": _accuracy(probs, codes)}
    return coefs, measures


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
    max_predictors: int = 6,
    labels: Sequence[str] | None = None,
    exclude: Sequence[str] = (),
) -> ModelFit:
    """Fit the model `choose_family` picks for `target` on `predictors` with a constant;
    numerical warnings of the fit (statsmodels' `RuntimeWarning`s) become its `notes`
    (`warning_notes.noted_warnings`), not lines on stderr.

    Args and Raises: as `_fit_model`.
    """
    with noted_warnings(f"fitting the model of {target}") as noted:
        fit = _fit_model(df, target, predictors, max_predictors=max_predictors, labels=labels,
                         exclude=exclude)  # fmt: skip
    fit.notes.extend(noted)
    return fit


def _fit_model(
    df: pd.DataFrame,
    target: str,
    predictors: Sequence[str] | None = None,
    *,
    max_predictors: int = 6,
    labels: Sequence[str] | None = None,
    exclude: Sequence[str] = (),
) -> ModelFit:
    """Fit the model `choose_family` picks for `target` on `predictors` with a constant.

    Args:
        df: the table.
        target: the numeric dependent variable.
        predictors: numeric regressors; default `stats.select_predictors` (near-duplicates
            left out and listed in `dropped`).
        max_predictors: the most predictors to choose by default.
        labels: the target's class names when the source designates it a class label.
        exclude: columns never chosen as default predictors (class codes of a label).

    Raises:
        AnalysisError: as `choose_family` and `stats.ols` (unknown / non-numeric columns,
            collinear predictors, too few complete rows).
    """
    stats.describe(df, [target])  # unknown / non-numeric target: a clear error
    choice = choose_family(df[target], labels=labels)
    dropped: list[tuple[str, str, float]] = []
    if predictors is None:
        picked = stats.select_predictors(df, target, max_predictors, exclude=exclude)
        chosen, dropped = picked.chosen, picked.dropped
    else:
        chosen = stats.check_predictors(df, target, predictors)
    y, x = stats.design_matrix(df, target, chosen)
    classes = sorted(set(y.tolist()))
    family, notes, reason, dispersion = choice.family, [], choice.reason, None
    if choice.kind == "continuous":
        coefs, measures = _fit_ols(y, x)
    elif choice.kind == "count":
        family, coefs, measures, dispersion = _fit_count(y, x)
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
    else:
        fit = _fit_logit if choice.kind == "binary" else _fit_mnlogit
        try:
            coefs, measures = fit(y, x, classes)
        except _Separated as exc:
            family = "logit_l2" if choice.kind == "binary" else "mnlogit_l2"
            notes.append(
                f"the maximum-likelihood {_NAMES[choice.family]} of {target} does not exist "
                f"({exc}: the coefficients diverge, as they do when the predictors perfectly "
                f"or almost perfectly separate the classes); refitted with an L2 penalty "
                f"(C = {PENALTY_C}) on standardised predictors, which has no standard errors "
                "or p-values"
            )
            coefs, measures = _fit_penalised(y, x, classes)
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
        dropped=dropped,
        notes=notes,
        poisson_dispersion=dispersion,
    )
