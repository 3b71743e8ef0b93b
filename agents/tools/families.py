"""Which regression model a target calls for: the family rule, and the reason it gives.

`choose_family` says which model a statistician would fit to a target, and why:

- two distinct values (GRADE 0/1): logistic regression (`Logit`; the larger value is the
  event, coded 1);
- a class label — the source names its classes (sklearn's iris/wine `target`): multinomial
  logit (`MNLogit`; the smallest class is the base, each other class gets its own
  coefficients);
- non-negative integers with at least three values, starting at 0 or 1, on a count's scale
  (median <= `COUNT_MEDIAN_MAX`; cpunish's EXECUTIONS, 1..37, median 1): a count model —
  Poisson, switched to negative binomial (NB2) when the Poisson fit is overdispersed
  (Pearson chi²/df > `agents.tools.models.OVERDISPERSED`) and NB2 has an interior maximum
  (else Poisson, with a note);
- anything else (non-integer values, or integers that start far from 0 like longley's
  TOTEMP and diabetes' progression score, or are large): OLS — unless it is non-negative
  and at least `TWO_PART` (half) of its values are 0 (fair's affairs: 68%): then a
  two-part model, a logit of "any" (target > 0) over all rows and OLS of the amount over
  the rows where it is positive, since one linear model cannot describe both whether and
  how much. With `ZERO_HEAVY` (30%) to half zeros OLS stays, its reason warning of them.

Integer class codes without names (0, 1, 2) read as counts: a class label is known only
from the source (`labels`, sklearn's `target_names`) or from having two values.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pandas as pd

from kimmy_swarm.agents.tools.conventions import AnalysisError, level_name

__all__ = [
    "COUNT_MEDIAN_MAX",
    "MAX_CLASSES",
    "TWO_PART",
    "ZERO_HEAVY",
    "FamilyChoice",
    "ModelFamily",
    "TargetKind",
    "choose_family",
]

ModelFamily = Literal[
    "ols", "logit", "mnlogit", "poisson", "negbin", "logit_l2", "mnlogit_l2", "two_part"
]
TargetKind = Literal["continuous", "binary", "categorical", "count"]
#: Most classes a categorical target may have.
MAX_CLASSES = 10
#: Largest median of a count target: integers on a larger scale are modelled as continuous.
COUNT_MEDIAN_MAX = 20
#: Share of zeros from which a continuous target's reason warns that OLS ignores them.
ZERO_HEAVY = 0.3
#: Share of zeros from which a non-negative continuous target gets a two-part model.
TWO_PART = 0.5


@dataclass(frozen=True)
class FamilyChoice:
    """The kind of a target, the model family it gets first, and why (one sentence)."""

    kind: TargetKind
    family: ModelFamily
    reason: str
    classes: list[str] = field(default_factory=list)


def _shown(values: Sequence[float]) -> str:
    return ", ".join(level_name(v) for v in values)


def choose_family(y: pd.Series, *, labels: Sequence[str] | None = None) -> FamilyChoice:
    """Choose the model family for a target column (the rule in the module docstring).

    Args:
        y: the target column (numeric; missing values ignored).
        labels: the class names when the source designates the target as a class label
            (sklearn's `target_names`), else None.

    Raises:
        AnalysisError: the target is not numeric, has fewer than two distinct values, or is
            labelled with more than `MAX_CLASSES` classes.
    """
    name = str(y.name)
    if not pd.api.types.is_numeric_dtype(y) or pd.api.types.is_bool_dtype(y):
        raise AnalysisError(f"target {name!r} must be numeric (class codes), got dtype {y.dtype}")
    values = y.dropna().astype(float)
    distinct = np.unique(values.to_numpy())  # sorted
    if distinct.size < 2:
        raise AnalysisError(f"target {name!r} has {distinct.size} distinct value(s); need 2")
    classes = [level_name(v) for v in distinct]
    if distinct.size == 2:
        reason = f"{name} has 2 values ({_shown(distinct)}): logistic regression"
        return FamilyChoice("binary", "logit", reason, classes)
    if labels:
        if distinct.size > MAX_CLASSES:
            raise AnalysisError(
                f"target {name!r} is a class label with {distinct.size} classes; "
                f"at most {MAX_CLASSES} are modelled"
            )
        shown = ", ".join(map(str, labels))
        reason = (
            f"{name} is a class label with {distinct.size} classes ({shown}): multinomial logit"
        )
        return FamilyChoice("categorical", "mnlogit", reason, classes)
    integer = bool(np.all(distinct == np.round(distinct)))
    lo, hi = float(distinct[0]), float(distinct[-1])
    median = float(values.median())
    if integer and 0 <= lo <= 1 and median <= COUNT_MEDIAN_MAX:
        reason = (
            f"{name} holds non-negative integers from {level_name(lo)} to {level_name(hi)} "
            f"({distinct.size} values, median {level_name(median)}): a count model (Poisson; "
            "negative binomial if overdispersed)"
        )
        return FamilyChoice("count", "poisson", reason)
    if integer and lo > 1:
        why = f"is integer-valued but starts at {level_name(lo)}, a measurement rather than a count"
    elif integer:
        why = (
            f"is integer-valued but large (median {level_name(median)} > {COUNT_MEDIAN_MAX}), "
            "where a count's variance structure hardly matters"
        )
    else:
        why = f"takes non-integer values ({distinct.size} distinct)"
    zeros = float((values == 0).mean())
    if lo == 0 and zeros >= TWO_PART:
        reason = (
            f"{name} {why}, but {zeros:.0%} of {name} are 0 (at least {TWO_PART:.0%}): "
            f"modelled in two parts, a logit of any {name} ({name} > 0) and OLS of the "
            f"amount where {name} > 0"
        )
        return FamilyChoice("continuous", "two_part", reason)
    reason = f"{name} {why}: continuous, OLS"
    if lo == 0 and zeros >= ZERO_HEAVY:
        reason += (
            f" (but {zeros:.0%} of its values are 0: a two-part or Tobit model would describe "
            "the zeros better)"
        )
    return FamilyChoice("continuous", "ols", reason)
