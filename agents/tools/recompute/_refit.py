"""Independent recomputation of model coefficients, fit measures and diagnostics (numpy /
scipy only), for a model named by family, target and predictors.

The fact-checker's path for the statistics `agents.tools.models` and
`agents.tools.diagnostics` report through statsmodels / scikit-learn: every model is refitted
here from its likelihood by Newton's method (logit, multinomial logit, Poisson), a profile
likelihood (negative binomial NB2) or Newton on the penalised objective (L2 logit); the OLS
likelihood and the diagnostics come from `_diagnostics`. Shared conventions (`families`,
`models`): the design is [1, X] over complete rows; a binary target's larger value is the
event; the smallest class is the multinomial base; classes are named by
`agents.tools.conventions.level_name`; the penalised fit uses predictors standardised with
the population std (ddof=0), C = 1, and an unpenalised intercept."""

from __future__ import annotations

import hashlib
import math
import threading
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
from scipy import optimize, special
from scipy import stats as sps

from kimmy_swarm.agents.tools.conventions import AnalysisError, level_name
from kimmy_swarm.agents.tools.recompute._design import design, term_index
from kimmy_swarm.agents.tools.recompute._diagnostics import (
    cond_number,
    ols_likelihood,
    residual_tests,
    vif,
)

__all__ = ["fitted", "logit", "penalised", "refit_statistic"]

Fit = dict[str, object]
_TOL = 1e-11


def _newton(
    llf: Callable[[np.ndarray], float],
    grad: Callable[[np.ndarray], np.ndarray],
    hess: Callable[[np.ndarray], np.ndarray],
    theta: np.ndarray,
    *,
    solve: Callable[[np.ndarray, np.ndarray], np.ndarray] = np.linalg.solve,
) -> np.ndarray:
    """Maximise a concave log-likelihood by Newton steps with step halving."""
    current = llf(theta)
    for _ in range(200):
        step = solve(-hess(theta), grad(theta))
        t = 1.0
        while t > 1e-8:
            cand = theta + t * step
            value = llf(cand)
            if np.isfinite(value) and value >= current - 1e-12:
                break
            t /= 2
        else:
            raise AnalysisError("the likelihood maximisation did not converge")
        theta, current = cand, value
        # Only the step size decides: under separation the likelihood gains vanish while
        # the coefficients keep growing, and that must end as "did not converge".
        if np.max(np.abs(t * step)) < _TOL * (1.0 + np.max(np.abs(theta))):
            return theta
    raise AnalysisError("the likelihood maximisation did not converge")


def _wald(theta: np.ndarray, cov: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    se = np.sqrt(np.diag(cov))
    return se, 2.0 * sps.norm.sf(np.abs(theta / se))


def logit(y: np.ndarray, x: np.ndarray) -> Fit:
    """Binary logit of y (the larger value is the event) on the design x: (N,), (N, P)."""
    e = (y == y.max()).astype(float)

    def llf(b: np.ndarray) -> float:
        eta = x @ b
        return float(np.sum(e * eta - np.logaddexp(0.0, eta)))

    def grad(b: np.ndarray) -> np.ndarray:
        return x.T @ (e - special.expit(x @ b))

    def hess(b: np.ndarray) -> np.ndarray:
        p = special.expit(x @ b)
        return -(x.T * (p * (1 - p))) @ x

    b = _newton(llf, grad, hess, np.zeros(x.shape[1]))
    se, pv = _wald(b, np.linalg.inv(-hess(b)))
    p1 = special.expit(x @ b)
    share = e.mean()
    llnull = len(e) * (share * math.log(share) + (1 - share) * math.log(1 - share))
    acc = float(np.mean((p1 > 0.5) == (e == 1)))
    return _measures(b, se, pv, llf(b), llnull, len(b), {"accuracy": acc})


def _measures(
    b: np.ndarray, se: np.ndarray, pv: np.ndarray, ll: float, llnull: float, k: int,
    extra: dict[str, float],
) -> Fit:  # fmt: skip
    return {"coef": b, "se": se, "pvalue": pv, "llf": ll, "aic": -2 * ll + 2 * k,
            "pseudo_r2": 1.0 - ll / llnull, **extra}  # fmt: skip


def _codes(y: np.ndarray) -> tuple[np.ndarray, list[str]]:
    classes = np.unique(y)
    return np.searchsorted(classes, y), [level_name(c) for c in classes]


def mnlogit(y: np.ndarray, x: np.ndarray) -> Fit:
    """Multinomial logit, the smallest class the base: coef (P, K-1) columns = other classes."""
    codes, levels = _codes(y)
    n, p = x.shape
    k = len(levels)
    onehot = np.eye(k)[codes][:, 1:]  # (N, K-1)

    def probs(theta: np.ndarray) -> np.ndarray:
        eta = np.column_stack([np.zeros(n), x @ theta.reshape(k - 1, p).T])  # (N, K)
        return special.softmax(eta, axis=1)

    def llf(theta: np.ndarray) -> float:
        eta = np.column_stack([np.zeros(n), x @ theta.reshape(k - 1, p).T])
        return float(np.sum(eta[np.arange(n), codes] - special.logsumexp(eta, axis=1)))

    def grad(theta: np.ndarray) -> np.ndarray:
        return ((onehot - probs(theta)[:, 1:]).T @ x).ravel()  # (K-1)*P, class-major

    def hess(theta: np.ndarray) -> np.ndarray:
        pr = probs(theta)[:, 1:]
        h = np.zeros(((k - 1) * p, (k - 1) * p))
        for j in range(k - 1):
            for m in range(k - 1):
                w = pr[:, j] * ((j == m) - pr[:, m])
                h[j * p : (j + 1) * p, m * p : (m + 1) * p] = -(x.T * w) @ x
        return h

    theta = _newton(llf, grad, hess, np.zeros((k - 1) * p))
    se, pv = _wald(theta, np.linalg.inv(-hess(theta)))
    counts = np.bincount(codes, minlength=k)
    llnull = float(np.sum(counts * np.log(counts / n)))
    full = np.column_stack([np.zeros(n), x @ theta.reshape(k - 1, p).T])
    acc = float(np.mean(np.argmax(full, axis=1) == codes))
    fit = _measures(theta, se, pv, llf(theta), llnull, theta.size, {"accuracy": acc})
    fit["levels"] = levels[1:]
    fit["per_level"] = p
    return fit


def poisson(y: np.ndarray, x: np.ndarray) -> Fit:
    """Poisson regression (log link); also the Pearson chi²/df dispersion."""
    const = special.gammaln(y + 1).sum()

    def llf(b: np.ndarray) -> float:
        eta = x @ b
        return float(np.sum(y * eta - np.exp(eta)) - const)

    def grad(b: np.ndarray) -> np.ndarray:
        return x.T @ (y - np.exp(x @ b))

    def hess(b: np.ndarray) -> np.ndarray:
        return -(x.T * np.exp(x @ b)) @ x

    start = np.zeros(x.shape[1])
    start[0] = math.log(y.mean())
    b = _newton(llf, grad, hess, start)
    se, pv = _wald(b, np.linalg.inv(-hess(b)))
    mu = np.exp(x @ b)
    dispersion = float(np.sum((y - mu) ** 2 / mu) / (len(y) - len(b)))
    ybar = y.mean()
    llnull = float(np.sum(y * math.log(ybar) - ybar) - const)
    return _measures(b, se, pv, llf(b), llnull, len(b), {"dispersion": dispersion})


def _nb_llf(y: np.ndarray, mu: np.ndarray, a: float) -> float:
    r = 1.0 / a
    log_mu = np.log(a * mu)
    terms = special.gammaln(y + r) - special.gammaln(r) - special.gammaln(y + 1)
    return float(np.sum(terms - (r + y) * np.log1p(a * mu) + y * log_mu))


def _nb_dalpha(y: np.ndarray, mu: np.ndarray, a: float) -> float:
    r = 1.0 / a
    terms = (r * r * (np.log1p(a * mu) - special.digamma(y + r) + special.digamma(r))
             - r * mu / (1 + a * mu) + y / a - y * mu / (1 + a * mu))  # fmt: skip
    return float(np.sum(terms))


def _nb_beta(y: np.ndarray, x: np.ndarray, a: float, start: np.ndarray) -> np.ndarray:
    def llf(b: np.ndarray) -> float:
        return _nb_llf(y, np.exp(x @ b), a)

    def grad(b: np.ndarray) -> np.ndarray:
        mu = np.exp(x @ b)
        return x.T @ ((y - mu) / (1 + a * mu))

    def hess(b: np.ndarray) -> np.ndarray:
        mu = np.exp(x @ b)
        return -(x.T * (mu * (1 + a * y) / (1 + a * mu) ** 2)) @ x

    return _newton(llf, grad, hess, start)


def _nb_profile(y: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, float]:
    start = poisson(y, x)["coef"]
    assert isinstance(start, np.ndarray)

    def neg(log_a: float) -> float:
        a = math.exp(log_a)
        return -_nb_llf(y, np.exp(x @ _nb_beta(y, x, a, start)), a)

    best = optimize.minimize_scalar(neg, bounds=(-12.0, 5.0), method="bounded",
                                    options={"xatol": 1e-10})  # fmt: skip
    a = math.exp(best.x)
    return _nb_beta(y, x, a, start), a


def negbin(y: np.ndarray, x: np.ndarray) -> Fit:
    """NB2 negative binomial by profile likelihood in alpha; Wald tests from the observed
    Hessian of (beta, alpha), its alpha row by central differences of the analytic score."""
    b, a = _nb_profile(y, x)
    mu = np.exp(x @ b)
    p = len(b)
    h = np.zeros((p + 1, p + 1))
    h[:p, :p] = -(x.T * (mu * (1 + a * y) / (1 + a * mu) ** 2)) @ x
    h[:p, p] = h[p, :p] = x.T @ (-(y - mu) * mu / (1 + a * mu) ** 2)
    step = 1e-5 * a
    h[p, p] = (_nb_dalpha(y, mu, a + step) - _nb_dalpha(y, mu, a - step)) / (2 * step)
    se, pv = _wald(np.r_[b, a], np.linalg.inv(-h))
    ones = np.ones((len(y), 1))
    b0, a0 = _nb_profile(y, ones)
    llnull = _nb_llf(y, np.exp(ones @ b0), a0)
    return _measures(b, se[:p], pv[:p], _nb_llf(y, mu, a), llnull, p + 1, {"alpha": a})


def _lstsq(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The minimum-norm solution of a x = b: a Newton step that leaves a flat direction of
    the objective (the sum of a softmax's intercepts) where it is."""
    return np.linalg.lstsq(a, b, rcond=None)[0]


def _penalised_weights(zc: np.ndarray, target: np.ndarray, c: float) -> np.ndarray:
    """Newton's minimum of C * sum(-log p_i) + ||W||² / 2 (intercepts unpenalised) over the
    standardised design zc (N, Q) and one-hot (or, binary, event) targets (N, K): W (K, Q)."""
    k, q = target.shape[1], zc.shape[1]
    pen = np.tile(np.r_[0.0, np.ones(q - 1)], k)  # (K * Q,): the intercepts are free

    def eta(theta: np.ndarray) -> np.ndarray:
        return zc @ theta.reshape(k, q).T  # (N, K)

    def probs(theta: np.ndarray) -> np.ndarray:
        e = eta(theta)
        return special.expit(e) if k == 1 else special.softmax(e, axis=1)

    def llf(theta: np.ndarray) -> float:  # the objective, negated
        e = eta(theta)
        nll = (np.sum(np.logaddexp(0.0, e) - target * e) if k == 1
               else np.sum(special.logsumexp(e, axis=1) - np.sum(target * e, axis=1)))  # fmt: skip
        return float(-(c * nll + 0.5 * np.sum(pen * theta * theta)))

    def grad(theta: np.ndarray) -> np.ndarray:
        return -(c * ((probs(theta) - target).T @ zc).ravel() + pen * theta)

    def hess(theta: np.ndarray) -> np.ndarray:
        pr = probs(theta)
        h = np.zeros((k * q, k * q))
        for j in range(k):
            for m in range(k):
                w = pr[:, j] * ((j == m) - pr[:, m])  # binary: p (1 - p)
                h[j * q : (j + 1) * q, m * q : (m + 1) * q] = (zc.T * w) @ zc
        return -(c * h + np.diag(pen))

    return _newton(llf, grad, hess, np.zeros(k * q), solve=_lstsq).reshape(k, q)


def penalised(y: np.ndarray, x: np.ndarray, c: float = 1.0) -> Fit:
    """L2 logistic regression (binary) or multinomial softmax (3+ classes) on standardised
    predictors: minimise C * sum(-log p_i) + ||W||² / 2 (the intercept unpenalised)."""
    codes, levels = _codes(y)
    z = x[:, 1:]
    z = (z - z.mean(axis=0)) / z.std(axis=0)  # (N, P)
    n = len(z)
    k = 1 if len(levels) == 2 else len(levels)
    zc = np.column_stack([np.ones(n), z])  # (N, 1 + P)
    target = (codes == 1).astype(float)[:, None] if k == 1 else np.eye(k)[codes]
    w = _penalised_weights(zc, target, c)  # (K, 1 + P): row j, class j's [intercept, coefs]
    eta = zc @ w.T
    prob = (np.column_stack([1 - special.expit(eta[:, 0]), special.expit(eta[:, 0])])
            if k == 1 else special.softmax(eta, axis=1))  # fmt: skip
    ll = float(np.sum(np.log(prob[np.arange(n), codes])))
    counts = np.bincount(codes)
    llnull = float(np.sum(counts * np.log(counts / n)))
    acc = float(np.mean(np.argmax(prob, axis=1) == codes))
    return {"coef": w, "levels": [""] if k == 1 else levels, "llf": ll,
            "pseudo_r2": 1.0 - ll / llnull, "accuracy": acc}  # fmt: skip


_FITTERS: dict[str, Callable[[np.ndarray, np.ndarray], Fit]] = {
    "logit": logit, "mnlogit": mnlogit, "poisson": poisson, "negbin": negbin,
    "logit_l2": penalised, "mnlogit_l2": penalised,
}  # fmt: skip


def _coefficient(
    fit: Fit, model: str, statistic: str, target: str, names: list[str], term: str,
    level: str,
) -> float:  # fmt: skip
    term = "const" if statistic == "intercept" else term
    k = term_index(names, term)
    if model.endswith("_l2"):
        levels = fit["levels"]
        assert isinstance(levels, list)
        if statistic not in ("slope", "intercept") or level not in levels:
            raise AnalysisError(f"no {statistic} for level {level!r}; levels {levels}")
        return float(fit["coef"][levels.index(level), k])  # type: ignore[index]
    if model == "mnlogit":
        levels = fit["levels"]
        assert isinstance(levels, list)
        if level not in levels:
            raise AnalysisError(
                f"level {level!r} is not a non-base class of {target!r}; classes: {levels}"
            )
        k += levels.index(level) * int(fit["per_level"])  # type: ignore[call-overload]
    key = "coef" if statistic in ("slope", "intercept") else statistic
    return float(fit[key][k])  # type: ignore[index]


_CACHE: dict[tuple[str, str], Fit] = {}
_CACHE_LOCK = threading.Lock()
_CACHE_SIZE = 128


def fitted(
    model: str, y: np.ndarray, x: np.ndarray,
    fitter: Callable[[np.ndarray, np.ndarray], Fit] | None = None,
) -> Fit:  # fmt: skip
    """The refit of `model` on (y, x) (by `fitter`, default the family's), kept by a digest
    of the data: an analysis reports dozens of numbers of one fit, and the fact-checker
    verifies them one by one."""
    key = (model, hashlib.sha256(y.tobytes() + x.tobytes() + str(x.shape).encode()).hexdigest())
    with _CACHE_LOCK:
        found = _CACHE.get(key)
    if found is None:
        found = (fitter or _FITTERS[model])(y, x)
        with _CACHE_LOCK:
            if len(_CACHE) >= _CACHE_SIZE:
                _CACHE.pop(next(iter(_CACHE)))  # the oldest
            _CACHE[key] = found
    return found


def refit_statistic(
    df: pd.DataFrame,
    model: str,
    statistic: str,
    target: str,
    predictors: Sequence[str] | None,
    *,
    term: str = "const",
    level: str = "",
    nominal: Sequence[str] = (),
) -> float:
    """Recompute a fit measure, a diagnostic or a coefficient of a non-OLS model.

    Args:
        df: the table.
        model: the model family ("ols" for its likelihood and diagnostics).
        statistic: the statistic.
        target: the dependent variable.
        predictors: the fit's predictors (None: none given, an error).
        term: the predictor a coefficient or a VIF is of ("const": the intercept).
        level: the class a multinomial coefficient is of.
        nominal: the predictors entered as dummies (a term of one: "occupation=2").

    Raises:
        AnalysisError: the fit's predictors are missing, a column is missing or not numeric,
            the model cannot be fitted, or the level names no class of the target.
    """
    if predictors is None:
        raise AnalysisError(f"{statistic!r} needs the fit's predictor list (`predictors`)")
    predictors = list(predictors)
    y, x, names = design(df, target, predictors, nominal)
    if statistic == "nobs":
        return float(len(y))
    if len(y) <= x.shape[1] or np.linalg.matrix_rank(x) < x.shape[1]:
        raise AnalysisError(f"{len(y)} complete rows cannot fit {predictors} with a constant")
    if statistic == "vif":
        return float(vif(x)[term_index(names, term) - 1])
    if statistic == "cond_number":
        return cond_number(x)
    if statistic in ("jb", "jb_pvalue", "bp", "bp_pvalue"):
        return residual_tests(y, x)[statistic]
    if model == "ols":
        return ols_likelihood(y, x)[statistic]
    try:
        fit = fitted(model, y, x)
    except np.linalg.LinAlgError as exc:  # a singular information matrix: separation
        raise AnalysisError(
            f"the {model} of {target!r} cannot be fitted ({exc}); "
            "perfectly separated classes have no maximum-likelihood estimate"
        ) from exc
    if statistic in ("slope", "intercept", "se", "pvalue"):
        return _coefficient(fit, model, statistic, target, names, term, level)
    return float(fit[statistic])  # type: ignore[arg-type]
