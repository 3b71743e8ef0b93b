"""The classifiers of `agents.tools.models`: logit and multinomial logit by maximum
likelihood (statsmodels), their L2-penalised fallback when the classes are separated
(scikit-learn), their cross-validated accuracy, and the cross-validated AUC of a binary one.

Cross-validation follows `agents.tools.conventions` (`CV_FOLDS` shuffled folds,
scikit-learn's `KFold`, seed `CV_SEED`): each fold is predicted by the same estimator as the
reported fit (maximum-likelihood logit or multinomial logit, or the penalised one on
predictors standardised with the training folds' mean and population std), fitted on the
other folds; accuracy (the most probable class; binary: P(event) > 0.5) and, for a binary
one, AUC (scikit-learn's `roc_auc_score`) are taken over the pooled out-of-fold
probabilities.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
import statsmodels.api as sm
from statsmodels.tools.sm_exceptions import HessianInversionWarning, PerfectSeparationError

from kimmy_swarm.agents.tools.conventions import CV_FOLDS, CV_SEED, level_name

__all__ = [
    "PENALTY_C",
    "Coefficient",
    "Separated",
    "cross_validated",
    "fit_logit",
    "fit_mnlogit",
    "fit_penalised",
]

#: The penalised fallback's inverse regularisation strength (scikit-learn's C).
PENALTY_C = 1.0


@dataclass(frozen=True)
class Coefficient:
    """One coefficient; `level` is the class it belongs to in a multinomial model, else ""."""

    term: str
    coef: float
    se: float = math.nan
    pvalue: float = math.nan
    level: str = ""


class Separated(Exception):
    """The maximum-likelihood logit does not exist (perfect separation or no convergence)."""


def checked_fit(model: object) -> object:
    """Newton fit of a discrete model; `Separated` when the maximum likelihood does not exist.

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
            raise Separated(str(exc) or type(exc).__name__) from exc
    if not res.mle_retvals.get("converged", False):
        raise Separated("the likelihood maximisation did not converge")
    if not np.all(np.isfinite(np.asarray(res.bse))):
        raise Separated("the information matrix is singular")
    return res


def _accuracy(probs: np.ndarray, codes: np.ndarray) -> float:
    return float(np.mean(np.argmax(probs, axis=1) == codes))


def _coefs(res: object, names: list[str], level: str = "") -> list[Coefficient]:
    params, bse, pv = res.params, res.bse, res.pvalues  # type: ignore[attr-defined]
    return [Coefficient(n, float(params[n]), float(bse[n]), float(pv[n]), level) for n in names]


def fit_logit(y: pd.Series, x: pd.DataFrame, classes: list[float]) -> tuple[list, dict]:
    """Binary logit of y (the larger class the event) on the design x (with its constant)."""
    event = (y.to_numpy() == classes[-1]).astype(float)
    res = checked_fit(sm.Logit(event, x))
    p1 = np.asarray(res.predict(x))
    acc = _accuracy(np.column_stack([1 - p1, p1]), event.astype(int))
    measures = {"aic": res.aic, "llf": res.llf, "pseudo_r2": res.prsquared, "accuracy": acc}
    return _coefs(res, list(x.columns)), {k: float(v) for k, v in measures.items()}


def fit_mnlogit(y: pd.Series, x: pd.DataFrame, classes: list[float]) -> tuple[list, dict]:
    """Multinomial logit, the smallest class the base; coefficients per other class."""
    codes = np.searchsorted(np.asarray(classes), y.to_numpy())
    res = checked_fit(sm.MNLogit(codes, x))
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


def _penalised_classifier(x: pd.DataFrame, codes: np.ndarray) -> object:
    from sklearn.linear_model import LogisticRegression  # lazily: sklearn imports slowly

    return LogisticRegression(C=PENALTY_C, tol=1e-10, max_iter=10_000).fit(x.to_numpy(), codes)


def fit_penalised(y: pd.Series, x: pd.DataFrame, classes: list[float]) -> tuple[list, dict]:
    """L2-penalised (multinomial) logistic regression on standardised predictors (sklearn)."""
    xs = x.drop(columns="const")
    z = (xs - xs.mean()) / xs.std(ddof=0)  # (N, P)
    codes = np.searchsorted(np.asarray(classes), y.to_numpy())
    clf = _penalised_classifier(z, codes)
    binary = len(classes) == 2
    levels = [""] if binary else [level_name(c) for c in classes]
    coefs = []
    for j, level in enumerate(levels):
        coefs.append(Coefficient("const", float(clf.intercept_[j]), level=level))  # type: ignore[attr-defined]
        coefs.extend(
            Coefficient(n, float(clf.coef_[j, i]), level=level)  # type: ignore[attr-defined]
            for i, n in enumerate(xs.columns)
        )
    probs = clf.predict_proba(z.to_numpy())  # type: ignore[attr-defined]  # (N, K)
    llf = float(np.log(probs[np.arange(len(codes)), codes]).sum())
    shares = np.bincount(codes) / len(codes)
    llnull = float((np.bincount(codes) * np.log(shares)).sum())
    measures = {"llf": llf, "pseudo_r2": 1.0 - llf / llnull, "accuracy": _accuracy(probs, codes)}
    return coefs, measures


def _fold_probabilities(
    codes: np.ndarray, x: pd.DataFrame, train: np.ndarray, test: np.ndarray, penalised: bool
) -> np.ndarray:
    """The class probabilities (T, K) of the `test` rows from the fit on the `train` rows
    (`Separated`: none); `codes` (N,) number the K classes from 0."""
    k = int(codes.max()) + 1
    if len(np.unique(codes[train])) < k:
        raise Separated(
            "a training fold holds one class only" if k == 2 else "a training fold lacks a class"
        )
    if not penalised:
        model = sm.Logit(codes[train].astype(float), x.iloc[train]) if k == 2 else (
            sm.MNLogit(codes[train], x.iloc[train])
        )  # fmt: skip
        probs = np.asarray(checked_fit(model).predict(x.iloc[test]))  # type: ignore[attr-defined]
        return np.column_stack([1 - probs, probs]) if k == 2 else probs
    xs = x.drop(columns="const")
    mean, std = xs.iloc[train].mean(), xs.iloc[train].std(ddof=0)
    if not np.all(std.to_numpy() > 0):
        raise Separated("a predictor is constant in a training fold")
    clf = _penalised_classifier((xs.iloc[train] - mean) / std, codes[train])
    return clf.predict_proba(((xs.iloc[test] - mean) / std).to_numpy())  # type: ignore[attr-defined]


def cross_validated(
    y: pd.Series, x: pd.DataFrame, classes: list[float], *, penalised: bool
) -> dict[str, float]:
    """Out-of-fold accuracy of a classifier (`cv_accuracy`), and the AUC of a binary one
    (`cv_auc`); each fold refitted with the estimator of the reported fit (`penalised`:
    the L2 one), a row's predicted class the most probable one (binary: P(event) > 0.5).

    Raises:
        Separated: a fold's maximum-likelihood fit does not exist, or a training fold lacks
            a class or has a constant predictor.
    """
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import KFold

    codes = np.searchsorted(np.asarray(classes), y.to_numpy())  # (N,)
    oof = np.empty((len(codes), len(classes)))  # (N, K) out-of-fold probabilities
    for train, test in KFold(CV_FOLDS, shuffle=True, random_state=CV_SEED).split(x):
        oof[test] = _fold_probabilities(codes, x, train, test, penalised)
    if len(classes) > 2:
        return {"cv_accuracy": _accuracy(oof, codes)}
    return {
        "cv_accuracy": float(np.mean((oof[:, 1] > 0.5) == (codes == 1))),
        "cv_auc": float(roc_auc_score(codes, oof[:, 1])),
    }
