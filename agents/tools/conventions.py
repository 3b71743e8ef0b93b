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
- `level_name`: how a class of a classification target is named in findings.
"""

from __future__ import annotations

import numpy as np

from kimmy_swarm.swarm.errors import UserError

__all__ = ["AnalysisError", "group_key", "level_name"]


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
