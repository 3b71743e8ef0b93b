"""OLS likelihood and the regression diagnostics, from textbook formulas (numpy / scipy).

The fact-checker's path for what `agents.tools.diagnostics` and the OLS fit measures of
`agents.tools.models` report through statsmodels: the Gaussian log-likelihood and AIC at the
OLS fit, Jarque–Bera residual normality, Koenker's Breusch–Pagan test, the VIF of each
predictor and the condition number of the design [1, X]. Each takes the response y (N,) and
the design x (N, 1 + P) over the complete rows.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import linalg
from scipy import stats as sps

__all__ = ["cond_number", "ols_likelihood", "residual_tests", "vif"]


def ols_likelihood(y: np.ndarray, x: np.ndarray) -> dict[str, float]:
    """Gaussian log-likelihood at the OLS fit (sigma² = RSS/N) and AIC = -2 llf + 2P."""
    beta, *_ = np.linalg.lstsq(x, y, rcond=None)
    rss = float(np.sum((y - x @ beta) ** 2))
    n = len(y)
    ll = -0.5 * n * (math.log(2 * math.pi) + math.log(rss / n) + 1)
    return {"llf": ll, "aic": -2 * ll + 2 * x.shape[1]}


def residual_tests(y: np.ndarray, x: np.ndarray) -> dict[str, float]:
    """Jarque–Bera (scipy) and Koenker's Breusch–Pagan (N R² of e² on the design)."""
    beta, *_ = np.linalg.lstsq(x, y, rcond=None)
    e = y - x @ beta
    jb = sps.jarque_bera(e)
    e2 = e * e
    gamma, *_ = np.linalg.lstsq(x, e2, rcond=None)
    r2 = 1.0 - np.sum((e2 - x @ gamma) ** 2) / np.sum((e2 - e2.mean()) ** 2)
    lm = len(y) * float(r2)
    return {"jb": float(jb.statistic), "jb_pvalue": float(jb.pvalue), "bp": lm,
            "bp_pvalue": float(sps.chi2.sf(lm, x.shape[1] - 1))}  # fmt: skip


def vif(x: np.ndarray) -> np.ndarray:
    """VIF of each predictor column of the design (after the constant): diag(R⁻¹)."""
    corr = np.corrcoef(x[:, 1:], rowvar=False)  # (P, P)
    return np.diag(np.linalg.inv(corr))


def cond_number(x: np.ndarray) -> float:
    """The 2-norm condition number of the design: largest / smallest singular value."""
    s = linalg.svdvals(x)
    return float(s[0] / s[-1])
