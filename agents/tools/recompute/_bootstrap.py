"""Bootstrap percentile intervals of a penalised fit's coefficients (numpy only).

The convention is the finding schema's (`finding.BOOTSTRAP_RESAMPLES`, `BOOTSTRAP_SEED`,
`BOOTSTRAP_LEVEL`): the complete rows are resampled with replacement by one
`numpy.random.RandomState(BOOTSTRAP_SEED)`, `randint(0, N, N)` per resample; a resample
lacking a class or holding a constant predictor is skipped; each other one is refitted by
`_refit.penalised` (its predictors standardised anew) and the bounds are percentiles of each
coefficient over the refits.
"""

from __future__ import annotations

import numpy as np

from kimmy_swarm.agents.tools.conventions import AnalysisError
from kimmy_swarm.agents.tools.finding import (
    BOOTSTRAP_LEVEL,
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
)
from kimmy_swarm.agents.tools.recompute._refit import Fit, fitted, penalised

__all__ = ["bootstrap_bound"]


def _resampled(y: np.ndarray, x: np.ndarray) -> Fit:
    """The percentile bounds (K, 1 + P) of the penalised coefficients over the resamples."""
    classes = np.unique(y)
    n = len(y)
    rng = np.random.RandomState(BOOTSTRAP_SEED)
    draws = []
    for _ in range(BOOTSTRAP_RESAMPLES):
        rows = rng.randint(0, n, n)
        if len(np.unique(y[rows])) < len(classes) or np.any(x[rows, 1:].std(axis=0) == 0):
            continue  # the penalised fit needs every class and a spread in each predictor
        draws.append(penalised(y[rows], x[rows])["coef"])
    if not draws:
        raise AnalysisError("no bootstrap resample holds every class and a varying predictor")
    tail = 50.0 * (1.0 - BOOTSTRAP_LEVEL)
    low, high = np.percentile(np.stack(draws), [tail, 100.0 - tail], axis=0)
    return {"ci_low": low, "ci_high": high,
            "levels": penalised(y, x)["levels"]}  # fmt: skip


def bootstrap_bound(statistic: str, y: np.ndarray, x: np.ndarray, k: int, level: str) -> float:
    """`ci_low` or `ci_high` of the penalised coefficient of design column `k` (class
    `level`; "" for a binary fit) of y (N,) on x (N, 1 + P).

    Raises:
        AnalysisError: `level` names no class of the fit, or no resample can be refitted.
    """
    bounds = fitted("penalised bootstrap", y, x, fitter=_resampled)
    levels = bounds["levels"]
    assert isinstance(levels, list)
    if level not in levels:
        raise AnalysisError(f"no coefficient for level {level!r}; levels {levels}")
    return float(bounds[statistic][levels.index(level), k])  # type: ignore[index]
