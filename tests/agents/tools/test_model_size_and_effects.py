"""How large a default model may be, and the effect sizes it reports beyond the per-unit
coefficient (`agents.tools.models`): the parameter budget follows the data (events of the
rarer class, rows), a nominal predictor costs its levels - 1; each term's effect per SD; a
penalised fit's seeded bootstrap percentile intervals — each number recomputed by the
fact-checker (`agents.tools.recompute`)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from kimmy_swarm.agents.tools import stats
from kimmy_swarm.agents.tools.datasets import load_dataset
from kimmy_swarm.agents.tools.finding import NumericFinding
from kimmy_swarm.agents.tools.models import (
    MIN_PARAMETERS,
    ModelFit,
    fit_model,
    parameter_budget,
)
from kimmy_swarm.agents.tools.recompute import verify


def _checked(df: pd.DataFrame, found: NumericFinding) -> None:
    """The finding verifies by the fact-checker's recomputation; 5% off, it does not."""
    assert verify(df, found).verdict == "verified", found
    wrong = found.model_copy(update={"value": found.value * 1.05 + 0.01})
    assert verify(df, wrong).verdict == "mismatch", found


def test_the_parameter_budget_follows_the_rarer_class_or_the_rows(fair: pd.DataFrame) -> None:
    # fair: 2053 of 6366 rows have affairs: 205 parameters by the logit's events, 136 by
    # the 2053 rows of the OLS part, whichever allows fewer
    assert parameter_budget(fair["affairs"], "two_part") == 2053 // 15 == 136
    spector = load_dataset("statsmodels:spector").frame  # 11 of 32 pass: the floor
    assert parameter_budget(spector["GRADE"], "logit") == MIN_PARAMETERS == 5
    assert parameter_budget(load_dataset("sklearn:diabetes").frame["target"], "ols") == 442 // 15
    wine = load_dataset("sklearn:wine").frame  # the rarest cultivar has 48 rows: 4, the floor
    assert parameter_budget(wine["target"], "mnlogit") == 5
    events = pd.Series([1.0] * 300 + [0.0] * 700 + [np.nan] * 50)
    assert parameter_budget(events, "logit") == 30  # missing values count for nothing


def test_fair_takes_every_candidate_its_nominal_codes_as_dummies(
    fair: pd.DataFrame, fair_kinds: dict
) -> None:
    fit = fit_model(fair, "affairs", kinds=fair_kinds)
    assert set(fit.predictors) == set(fair.columns) - {"affairs"}
    assert fit.nominal == ["occupation", "occupation_husb"]
    assert (fit.max_parameters, fit.limited) == (136, [])
    terms = [c.term for c in fit.parts[0].coefficients]
    assert "occupation" not in terms and "occupation_husb" not in terms  # never as numbers
    assert len(terms) == 1 + 6 + 5 + 5  # six numeric, two nominal of 6 levels
    assert {"occupation=1", "occupation_husb=6"} <= set(terms)


def test_a_nominal_candidate_costs_its_levels_minus_one() -> None:
    rng = np.random.RandomState(0)
    n = 400
    df = pd.DataFrame({"g": rng.randint(0, 6, n).astype(float), "a": rng.normal(size=n),
                       "b": rng.normal(size=n), "c": rng.normal(size=n)})  # fmt: skip
    df["y"] = 4 * (df["g"] == 2) + 2 * df["a"] + df["b"] + 0.5 * df["c"] + rng.normal(size=n)
    assert stats.select_predictors(df, "y", None, nominal=["g"]).chosen == ["a", "g", "b", "c"]
    six = stats.select_predictors(df, "y", None, max_parameters=6, nominal=["g"])
    assert (six.chosen, six.limited) == (["a", "g"], ["b", "c"])  # 1 + 5 dummies
    three = stats.select_predictors(df, "y", None, max_parameters=3, nominal=["g"])
    assert (three.chosen, three.limited) == (["a", "b", "c"], ["g"])  # the cheaper ones go on
    capped = stats.select_predictors(df, "y", 2, nominal=["g"])
    assert (capped.chosen, capped.limited) == (["a", "g"], ["b", "c"])


def test_a_callers_cap_replaces_the_budget() -> None:
    cpunish = load_dataset("statsmodels:cpunish").frame  # 17 rows: a budget of 5
    assert len(fit_model(cpunish, "EXECUTIONS").predictors) == 5
    fit = fit_model(cpunish, "EXECUTIONS", max_predictors=6)
    assert len(fit.predictors) == 6 and (fit.max_parameters, fit.max_predictors) == (None, 6)


def _per_sd(fit: ModelFit, term: str) -> NumericFinding:
    coef = next(c.coef for c in fit.coefficients if c.term == term)
    return NumericFinding(statistic="slope_per_sd", columns=[fit.target, term],
                          value=coef * fit.sds[term], predictors=fit.predictors,
                          model=fit.family, part=fit.part, nominal=fit.nominal)  # fmt: skip


def test_each_terms_effect_per_sd_is_its_coefficient_times_its_sd(
    fair: pd.DataFrame, fair_kinds: dict
) -> None:
    chosen = ["rate_marriage", "yrs_married", "occupation"]
    fit = fit_model(fair, "affairs", chosen, kinds=fair_kinds)
    for part in fit.parts:
        frame = stats.part_frame(fair, "affairs", part.part)
        _, x = stats.design_matrix(frame, "affairs", chosen, nominal=["occupation"])
        assert part.sds == pytest.approx(dict(x.drop(columns="const").std(ddof=1)), rel=1e-12)
        for term in part.sds:
            _checked(fair, _per_sd(part, term))
    # the amount's SDs are over its own 2053 rows, not the table's
    assert fit.parts[1].sds["yrs_married"] != pytest.approx(fair["yrs_married"].std(), rel=1e-3)
    assert fit.parts[0].sds["yrs_married"] == pytest.approx(fair["yrs_married"].std(), rel=1e-12)


def test_a_penalised_fit_has_seeded_bootstrap_percentile_intervals() -> None:
    iris = load_dataset("sklearn:iris")
    labels = list(iris.labels["target"].values())
    fit = fit_model(iris.frame, "target", labels=labels)
    assert fit.family == "mnlogit_l2"
    assert fit.intervals == fit_model(iris.frame, "target", labels=labels).intervals  # seeded
    assert len(fit.intervals) == 3 * 5  # every class's constant and four slopes
    coef = {(c.term, c.level): c.coef for c in fit.coefficients}
    for i in fit.intervals:
        if i.term == "const":
            continue
        assert i.low < coef[(i.term, i.level)] < i.high
        for stat, value in (("ci_low", i.low), ("ci_high", i.high)):
            _checked(iris.frame, NumericFinding(
                statistic=stat, columns=["target", i.term], value=value, level=i.level,
                predictors=fit.predictors, model="mnlogit_l2"))  # fmt: skip
    assert fit_model(iris.frame, "sepal length (cm)").intervals == []  # OLS: no bootstrap


def test_a_penalised_binary_logit_has_its_intervals_too() -> None:
    iris = load_dataset("sklearn:iris").frame
    df = iris[iris["target"] < 2].reset_index(drop=True)  # setosa vs versicolor: separable
    fit = fit_model(df, "target", ["petal length (cm)", "sepal width (cm)"])
    assert fit.family == "logit_l2"
    [interval] = [i for i in fit.intervals if i.term == "petal length (cm)"]
    [coef] = [c.coef for c in fit.coefficients if c.term == "petal length (cm)"]
    assert interval.level == "" and interval.low < coef < interval.high
    found = NumericFinding(statistic="ci_high", columns=["target", "petal length (cm)"],
                           value=interval.high, predictors=fit.predictors,
                           model="logit_l2")  # fmt: skip
    _checked(df, found)
