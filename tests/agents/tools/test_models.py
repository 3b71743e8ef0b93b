"""The model family chosen from the target, the fits against published values, and the
independent recomputation of every coefficient and fit measure (`agents.tools.recompute`)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

from kimmy_swarm.agents.tools.conventions import AnalysisError
from kimmy_swarm.agents.tools.datasets import load_dataset
from kimmy_swarm.agents.tools.families import MAX_CLASSES, choose_family
from kimmy_swarm.agents.tools.finding import NumericFinding
from kimmy_swarm.agents.tools.models import OVERDISPERSED, ModelFit, fit_model
from kimmy_swarm.agents.tools.recompute import verify

IRIS_LABELS = ["setosa", "versicolor", "virginica"]


def _frame(spec: str) -> pd.DataFrame:
    return load_dataset(spec).frame


@pytest.mark.parametrize(
    ("spec", "target", "labels", "kind", "family", "says"),
    [
        ("statsmodels:spector", "GRADE", None, "binary", "logit", "GRADE has 2 values (0, 1)"),
        ("sklearn:iris", "target", IRIS_LABELS, "categorical", "mnlogit", "3 classes (setosa"),
        ("statsmodels:cpunish", "EXECUTIONS", None, "count", "poisson", "from 1 to 37"),
        ("statsmodels:fair", "affairs", None, "continuous", "two_part", "68% of affairs are 0"),
        ("statsmodels:longley", "TOTEMP", None, "continuous", "ols", "starts at 60171"),
        ("sklearn:diabetes", "target", None, "continuous", "ols", "starts at 25"),
    ],
)
def test_family_follows_the_target(
    spec: str, target: str, labels: list[str] | None, kind: str, family: str, says: str
) -> None:
    choice = choose_family(_frame(spec)[target], labels=labels)
    assert (choice.kind, choice.family) == (kind, family)
    assert says in choice.reason


def test_the_designated_labels_make_integer_codes_a_class_label() -> None:
    codes = _frame("sklearn:iris")["target"]
    assert choose_family(codes).kind == "count"  # 0, 1, 2 alone read as counts
    assert choose_family(codes, labels=IRIS_LABELS).kind == "categorical"


@pytest.mark.parametrize(
    ("values", "labels", "message"),
    [
        (pd.Series(["a", "b", "a"], name="t"), None, "must be numeric"),
        (pd.Series([1.0, 1.0, np.nan], name="t"), None, "1 distinct value(s)"),
        (pd.Series(np.arange(12.0), name="t"), list("abcdefghijkl"), f"at most {MAX_CLASSES}"),
    ],
)  # fmt: skip
def test_unmodellable_targets_are_clear_errors(
    values: pd.Series, labels: list[str] | None, message: str
) -> None:
    with pytest.raises(AnalysisError, match=re_escape(message)):
        choose_family(values, labels=labels)


def re_escape(text: str) -> str:
    import re

    return re.escape(text)


def test_spector_logit_matches_the_published_estimates() -> None:
    # Spector & Mazzeo (1980), as reproduced in Greene's Econometric Analysis (Table 21.1).
    fit = fit_model(_frame("statsmodels:spector"), "GRADE", ["GPA", "TUCE", "PSI"])
    coef = {c.term: c.coef for c in fit.coefficients}
    assert fit.family == "logit"
    assert coef == pytest.approx(
        {"const": -13.0213, "GPA": 2.82611, "TUCE": 0.095158, "PSI": 2.37869}, rel=1e-4
    )
    assert fit.measures["llf"] == pytest.approx(-12.8896, rel=1e-4)
    assert fit.measures["pseudo_r2"] == pytest.approx(0.374038, rel=1e-4)
    assert fit.measures["accuracy"] == pytest.approx(26 / 32)


def _coefficient_findings(fit: ModelFit) -> list[NumericFinding]:
    model = {"predictors": fit.predictors, "model": fit.family}
    out = []
    for c in fit.coefficients:
        extra = {**model, **({"level": c.level} if c.level else {})}
        if c.term == "const":
            out.append(NumericFinding(statistic="intercept", columns=[fit.target], value=c.coef,
                                      **extra))  # fmt: skip
        else:
            out.append(NumericFinding(statistic="slope", columns=[fit.target, c.term],
                                      value=c.coef, **extra))  # fmt: skip
        for stat, value in (("se", c.se), ("pvalue", c.pvalue)):
            if math.isfinite(value):
                out.append(NumericFinding(statistic=stat, columns=[fit.target, c.term],
                                          value=value, **extra))  # fmt: skip
    out += [
        NumericFinding(statistic=k, columns=[fit.target], value=v, **model)
        for k, v in fit.measures.items()
    ]
    return out


def _all_verify(df: pd.DataFrame, fit: ModelFit) -> None:
    found = _coefficient_findings(fit)
    bad = [(v.finding, v.recomputed) for f in found if (v := verify(df, f)).verdict != "verified"]
    assert not bad
    tampered = [f.model_copy(update={"value": f.value * 1.05 + 0.01}) for f in found]
    assert all(verify(df, f).verdict == "mismatch" for f in tampered)


def test_multinomial_logit_without_separation_is_fitted_and_recomputed() -> None:
    df = _frame("sklearn:wine")  # alcohol and ash do not separate the three cultivars
    fit = fit_model(df, "target", ["alcohol", "ash"], labels=["a", "b", "c"])
    assert (fit.family, fit.notes, fit.classes) == ("mnlogit", [], ["0", "1", "2"])
    ref = sm.MNLogit(df["target"], sm.add_constant(df[fit.predictors])).fit(disp=0)
    slope = next(c for c in fit.coefficients if c.level == "2" and c.term == "ash")
    assert slope.coef == pytest.approx(ref.params.loc["ash", 1], rel=1e-6)
    assert {c.level for c in fit.coefficients} == {"1", "2"}  # the base class 0 has none
    _all_verify(df, fit)


def test_separated_classes_get_a_penalised_fit_with_a_note() -> None:
    df = _frame("sklearn:iris")
    fit = fit_model(df, "target", labels=IRIS_LABELS, max_predictors=4)
    assert fit.family == "mnlogit_l2"
    [note] = fit.notes
    assert "does not exist" in note and "L2 penalty" in note and "separate" in note
    assert all(math.isnan(c.se) for c in fit.coefficients)
    assert {c.level for c in fit.coefficients} == {"0", "1", "2"}
    assert fit.measures["accuracy"] > 0.95 and "aic" not in fit.measures
    _all_verify(df, fit)


def test_a_separated_binary_target_gets_a_penalised_logit() -> None:
    iris = _frame("sklearn:iris")
    df = iris[iris["target"] < 2].reset_index(drop=True)  # setosa vs versicolor: separable
    fit = fit_model(df, "target", ["petal length (cm)"])
    assert fit.family == "logit_l2" and fit.notes
    assert fit.measures["accuracy"] == 1.0
    _all_verify(df, fit)


def test_overdispersed_counts_switch_to_negative_binomial() -> None:
    df = _frame("statsmodels:cpunish")
    fit = fit_model(df, "EXECUTIONS", max_predictors=5)
    assert fit.family == "negbin" and fit.poisson_dispersion is not None
    assert fit.poisson_dispersion > OVERDISPERSED
    assert f"{fit.poisson_dispersion:.3g}" in fit.reason and "negative binomial" in fit.reason
    # the NB2 GLM at the fitted alpha has the same likelihood, and any other alpha a lower one
    design, alpha = sm.add_constant(df[fit.predictors]), fit.measures["alpha"]

    def profile(a: float) -> float:
        family = sm.families.NegativeBinomial(alpha=a)
        return float(sm.GLM(df["EXECUTIONS"], design, family=family).fit().llf)

    assert profile(alpha) == pytest.approx(fit.measures["llf"], rel=1e-6)
    assert profile(alpha * 1.2) < fit.measures["llf"] > profile(alpha / 1.2)
    _all_verify(df, fit)


def test_counts_stay_poisson_when_the_negative_binomial_collapses() -> None:
    df = _frame("statsmodels:cpunish")
    fit = fit_model(df, "EXECUTIONS", max_predictors=6)
    assert fit.family == "poisson"
    assert fit.measures["dispersion"] > OVERDISPERSED
    assert "no interior maximum" in fit.reason and "standard errors" in fit.notes[0]
    _all_verify(df, fit)


def test_near_duplicate_predictors_are_reported_not_silently_dropped() -> None:
    fit = fit_model(_frame("statsmodels:longley"), "TOTEMP")
    assert fit.predictors == ["GNP", "UNEMP", "ARMED"]
    assert [(c, k) for c, k, _ in fit.dropped] == [
        ("YEAR", "GNP"), ("GNPDEFL", "GNP"), ("POP", "GNP"),
    ]  # fmt: skip
    assert all(abs(r) > 0.98 for _, _, r in fit.dropped)
    assert fit.measures["r2"] == pytest.approx(0.985100, abs=1e-6)


def test_a_level_that_names_no_class_is_unverifiable() -> None:
    df = _frame("sklearn:wine")
    preds = ["alcohol", "ash"]
    finding = NumericFinding(statistic="slope", columns=["target", preds[0]], value=1.0,
                             predictors=preds, model="mnlogit", level="7")  # fmt: skip
    v = verify(df, finding)
    assert v.verdict == "unverifiable" and "'7'" in v.reason


def test_an_unpenalised_logit_claimed_on_separated_classes_is_unverifiable() -> None:
    iris = _frame("sklearn:iris")
    df = iris[iris["target"] < 2].reset_index(drop=True)
    claim = NumericFinding(statistic="slope", columns=["target", "petal length (cm)"],
                           value=50.0, predictors=["petal length (cm)"], model="logit")  # fmt: skip
    v = verify(df, claim)
    assert v.verdict == "unverifiable" and v.recomputed is None
    assert "converge" in v.reason or "separated" in v.reason
