"""Cross-validated accuracy of a classifier, and AUC of a binary one, refitted fold by fold.

The convention shared with `agents.tools.models` (`conventions.CV_FOLDS`, `CV_SEED`): the
positions 0..N-1 of the complete rows are shuffled by `numpy.random.RandomState(CV_SEED)`
and cut in `CV_FOLDS` consecutive folds, the first N % `CV_FOLDS` one row larger. Each
fold's class scores come from the same model fitted on the other folds — the
maximum-likelihood logit (`_refit.logit`) or multinomial logit (`_refit.mnlogit`), or the
L2-penalised one (`_refit.penalised`, binary or softmax) on predictors standardised with the
training folds' mean and population std. A row is predicted the class of its largest linear
score (binary: probability > 0.5 is the event); the AUC is the Mann–Whitney statistic of the
pooled out-of-fold event probabilities (ties count one half).
"""

from __future__ import annotations

import numpy as np
from scipy import special
from scipy import stats as sps

from kimmy_swarm.agents.tools.conventions import CV_FOLDS, CV_SEED, AnalysisError
from kimmy_swarm.agents.tools.recompute._refit import Fit, fitted, logit, mnlogit, penalised

__all__ = ["cross_validated"]

_BINARY = ("logit", "logit_l2")
_MULTINOMIAL = ("mnlogit", "mnlogit_l2")


def _folds(n: int) -> list[np.ndarray]:
    order = np.arange(n)
    np.random.RandomState(CV_SEED).shuffle(order)
    return np.array_split(order, CV_FOLDS)


def _fold_probabilities(
    e: np.ndarray, x: np.ndarray, train: np.ndarray, test: np.ndarray, model: str
) -> np.ndarray:
    if len(np.unique(e[train])) < 2:
        raise AnalysisError("a training fold holds one class only")
    if model == "logit":
        b = logit(e[train], x[train])["coef"]
        return special.expit(x[test] @ b)  # type: ignore[operator]
    mean, std = x[train, 1:].mean(axis=0), x[train, 1:].std(axis=0)
    if not np.all(std > 0):
        raise AnalysisError("a predictor is constant in a training fold")
    w = penalised(e[train], x[train])["coef"][0]  # type: ignore[index]  # [intercept, coefs]
    z = (x[test, 1:] - mean) / std
    return special.expit(w[0] + z @ w[1:])


def _fold_classes(
    codes: np.ndarray, x: np.ndarray, train: np.ndarray, test: np.ndarray, model: str
) -> np.ndarray:
    """The predicted class codes of the `test` rows of a multinomial model fitted on `train`."""
    k = int(codes.max()) + 1
    if len(np.unique(codes[train])) < k:
        raise AnalysisError("a training fold lacks a class")
    if model == "mnlogit":
        theta = mnlogit(codes[train], x[train])["coef"]  # ((K-1) * P,), class-major
        scores = x[test] @ np.reshape(theta, (k - 1, x.shape[1])).T  # (T, K-1)
        scores = np.column_stack([np.zeros(len(test)), scores])  # the base class scores 0
    else:
        mean, std = x[train, 1:].mean(axis=0), x[train, 1:].std(axis=0)
        if not np.all(std > 0):
            raise AnalysisError("a predictor is constant in a training fold")
        w = penalised(codes[train], x[train])["coef"]  # (K, 1 + P): [intercept, coefs]
        z = (x[test, 1:] - mean) / std  # (T, P)
        scores = w[:, 0] + z @ w[:, 1:].T  # type: ignore[index]  # (T, K)
    return np.argmax(scores, axis=1)


def _auc(e: np.ndarray, p: np.ndarray) -> float:
    ranks = sps.rankdata(p)  # average ranks for ties
    n1 = int(e.sum())
    n0 = len(e) - n1
    return float((ranks[e == 1].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


def _cross_validate(model: str) -> object:
    def binary(y: np.ndarray, x: np.ndarray) -> Fit:
        e = (y == y.max()).astype(float)  # the larger value is the event
        oof = np.empty(len(e))
        for k, test in enumerate(folds := _folds(len(e))):
            train = np.concatenate([f for j, f in enumerate(folds) if j != k])
            oof[test] = _fold_probabilities(e, x, train, test, model)
        return {"cv_accuracy": float(np.mean((oof > 0.5) == (e == 1))), "cv_auc": _auc(e, oof)}

    def multinomial(y: np.ndarray, x: np.ndarray) -> Fit:
        codes = np.searchsorted(np.unique(y), y)  # (N,): the classes numbered from 0
        oof = np.empty(len(codes), dtype=int)
        for k, test in enumerate(folds := _folds(len(codes))):
            train = np.concatenate([f for j, f in enumerate(folds) if j != k])
            oof[test] = _fold_classes(codes, x, train, test, model)
        return {"cv_accuracy": float(np.mean(oof == codes))}

    return binary if model in _BINARY else multinomial


def cross_validated(statistic: str, model: str, y: np.ndarray, x: np.ndarray) -> float:
    """cv_accuracy of `model` ("logit", "logit_l2", "mnlogit", "mnlogit_l2") or cv_auc of a
    binary one, of y on the design x.

    Raises:
        AnalysisError: another model, a target with the wrong number of classes, cv_auc of
            a multinomial model, a fold whose fit fails or whose training rows lack a class.
    """
    if model not in _BINARY + _MULTINOMIAL:
        raise AnalysisError(f"{statistic} applies to logits and multinomial logits, not {model!r}")
    classes = len(np.unique(y))
    if model in _BINARY and classes != 2:
        raise AnalysisError(f"{statistic} of {model} needs a binary target, got {classes} values")
    if model in _MULTINOMIAL and (classes < 3 or statistic != "cv_accuracy"):
        raise AnalysisError(
            f"{statistic} of {model} is the cv_accuracy of 3 or more classes, got {classes}"
        )
    try:
        fit = fitted(f"cv:{model}", y, x, _cross_validate(model))  # type: ignore[arg-type]
    except np.linalg.LinAlgError as exc:
        raise AnalysisError(f"a fold's {model} cannot be fitted ({exc})") from exc
    return float(fit[statistic])  # type: ignore[arg-type]
