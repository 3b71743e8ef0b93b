"""The conventions the analyst's statistics and the fact-checker's recomputation share.

Two independent paths compute every reported number: the analyst's (`agents.tools.stats`,
`groups`, `models`, `diagnostics`, through pandas, statsmodels and scikit-learn) and the
fact-checker's (`agents.tools.recompute`, numpy and scipy only). They must agree on how a
value is *named* and on how a failure is *raised*, and on nothing else; those shared
conventions live here, so that the recomputation needs no import of the code it checks:

- `AnalysisError`: a statistic cannot be computed (unknown or non-numeric column, too few
  rows, a fit that does not converge); either side raises it and the fact-checker turns it
  into an "unverifiable" verdict;
- `group_key`: how a group of a grouped comparison is named in findings;
- `level_name`: how a class of a classification target is named in findings;
- `dummy_term`: how the dummy of one level of a nominal predictor is named; its reference
  level, which has none, is its most frequent level over the rows fitted (the smallest of
  those tied), so that each dummy is compared with a well-filled group;
- `CV_FOLDS`, `CV_SEED`: the cross-validation of a classifier — `CV_FOLDS` folds of the
  complete rows, taken in order after shuffling their positions with
  `numpy.random.RandomState(CV_SEED).shuffle` (scikit-learn's `KFold(shuffle=True)`: the
  first N % `CV_FOLDS` folds one row larger); each fold's rows are predicted by the model
  fitted on the others, and accuracy (the most probable class; binary: probability > 0.5
  is the event) and, for a binary one, AUC are taken over the pooled out-of-fold
  probabilities;
- `TIES_RTOL`: the row named as having the largest value of a per-row statistic (Cook's
  distance) is the first of those within this relative distance of the largest, so that
  rows tied but for rounding (a symmetric design) are named alike by both sides.
"""

from __future__ import annotations

import numpy as np

from kimmy_swarm.swarm.errors import UserError

__all__ = [
    "CV_FOLDS",
    "CV_SEED",
    "TIES_RTOL",
    "AnalysisError",
    "dummy_term",
    "group_key",
    "level_name",
]

#: Folds of the cross-validated accuracy (and AUC) of a classifier.
CV_FOLDS = 5
#: The seed of the fold assignment (`numpy.random.RandomState`).
CV_SEED = 0
#: Values within this relative distance of the largest are tied for it (the first named).
TIES_RTOL = 1e-9


class AnalysisError(UserError):
    """A statistic cannot be computed: unknown or non-numeric column, too few rows, etc."""


def group_key(value: object) -> str:
    """The name of a group in findings: "2" for 2 or 2.0, repr for other floats, else str."""
    if isinstance(value, bool | np.bool_):
        return str(bool(value))
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating):
        number = float(value)
        return str(int(number)) if number.is_integer() else repr(number)
    return str(value)


def level_name(value: float) -> str:
    """How a class value is named in findings ("2" for 2.0, "0.5" for 0.5)."""
    v = float(value)
    return str(int(v)) if v.is_integer() else repr(v)


def dummy_term(column: str, level: float) -> str:
    """The term of the dummy for one level of a nominal predictor: "occupation=2"."""
    return f"{column}={level_name(level)}"
