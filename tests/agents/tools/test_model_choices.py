"""What a statistician would fit beyond the family rule (`agents.tools.models`): a two-part
model of a zero-heavy target, HC3 standard errors when Breusch–Pagan rejects, nominal codes
as dummies, the cross-validated accuracy of every classifier and the AUC of a binary one —
each number recomputed independently (`agents.tools.recompute`)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from pydantic import ValidationError

from kimmy_swarm.agents.tools import stats
from kimmy_swarm.agents.tools.datasets import load_dataset
from kimmy_swarm.agents.tools.finding import NumericFinding
from kimmy_swarm.agents.tools.models import ModelFit, fit_model
from kimmy_swarm.agents.tools.recompute import verify

FAIR_DEFAULT = ["rate_marriage", "religious", "age", "yrs_married", "children"]


def _findings(fit: ModelFit) -> list[NumericFinding]:
    """Every coefficient and fit measure of a fit as the analyst reports it."""
    model = {"predictors": fit.predictors, "model": fit.family, "part": fit.part,
             "nominal": fit.nominal}  # fmt: skip
    robust = {"cov_type": fit.cov_type} if fit.family == "ols" else {}
    out = []
    for c in fit.coefficients:
        if c.term == "const":
            out.append(NumericFinding(statistic="intercept", columns=[fit.target], value=c.coef,
                                      **model))  # fmt: skip
        else:
            out.append(NumericFinding(statistic="slope", columns=[fit.target, c.term],
                                      value=c.coef, **model))  # fmt: skip
        for stat, value in (("se", c.se), ("pvalue", c.pvalue)):
            out.append(NumericFinding(statistic=stat, columns=[fit.target, c.term], value=value,
                                      **model, **robust))  # fmt: skip
    out += [NumericFinding(statistic=k, columns=[fit.target], value=v, **model)
            for k, v in fit.measures.items()]  # fmt: skip
    out.append(NumericFinding(statistic="nobs", columns=[fit.target], value=fit.nobs, **model))
    return out


def _all_verify(df: pd.DataFrame, fit: ModelFit) -> None:
    found = _findings(fit)
    bad = [(f, v.recomputed) for f in found if (v := verify(df, f)).verdict != "verified"]
    assert not bad
    tampered = [f.model_copy(update={"value": f.value * 1.05 + 0.01}) for f in found]
    assert all(verify(df, f).verdict == "mismatch" for f in tampered)


def test_a_zero_heavy_target_is_modelled_in_two_parts(fair: pd.DataFrame) -> None:
    fit = fit_model(fair, "affairs", max_predictors=5)
    assert fit.family == "two_part" and fit.coefficients == [] and fit.predictors == FAIR_DEFAULT
    assert "68% of affairs are 0" in fit.reason and "modelled in two parts" in fit.reason
    any_fit, amount = fit.parts
    assert (any_fit.part, any_fit.family, any_fit.nobs) == ("any", "logit", 6366)
    assert (amount.part, amount.family, amount.nobs) == ("positive", "ols", 2053)  # 6366 - 4313
    # the logit of "any affair" against statsmodels' own fit on the indicator
    x = sm.add_constant(fair[FAIR_DEFAULT])
    ref = sm.Logit((fair["affairs"] > 0).astype(float), x).fit(disp=0)
    coef = {c.term: c for c in any_fit.coefficients}
    assert {t: c.coef for t, c in coef.items()} == pytest.approx(dict(ref.params), rel=1e-6)
    assert coef["age"].pvalue < 1e-3 and coef["yrs_married"].pvalue < 1e-3  # OLS hid both
    for part in fit.parts:
        _all_verify(fair, part)


def test_ols_standard_errors_are_hc3_when_breusch_pagan_rejects(fair: pd.DataFrame) -> None:
    amount = fit_model(fair, "affairs", max_predictors=5).parts[1]
    assert amount.cov_type == "HC3"
    assert amount.bp_pvalue == pytest.approx(1.699841e-07, rel=1e-5)
    assert "HC3 robust" in amount.reason and "Breusch–Pagan p < 0.001" in amount.reason
    positive = fair[fair["affairs"] > 0]
    ref = sm.OLS(positive["affairs"], sm.add_constant(positive[FAIR_DEFAULT])).fit(cov_type="HC3")
    se = {c.term: c.se for c in amount.coefficients}
    assert se == pytest.approx(dict(ref.bse), rel=1e-9)
    # the fact-checker recomputes the sandwich; the classical se claimed as HC3 mismatches
    classical = sm.OLS(positive["affairs"], sm.add_constant(positive[FAIR_DEFAULT])).fit()
    claim = NumericFinding(statistic="se", columns=["affairs", "yrs_married"],
                           value=float(classical.bse["yrs_married"]), predictors=FAIR_DEFAULT,
                           part="positive", cov_type="HC3")  # fmt: skip
    assert verify(fair, claim).verdict == "mismatch"
    assert verify(fair, claim.model_copy(update={"cov_type": "nonrobust"})).verdict == "verified"


def test_constant_variance_keeps_the_classical_standard_errors() -> None:
    longley = load_dataset("statsmodels:longley").frame  # Breusch–Pagan p = 0.327
    fit = fit_model(longley, "TOTEMP")
    assert fit.family == "ols" and fit.cov_type == "nonrobust" and "HC3" not in fit.reason
    assert fit.bp_pvalue == pytest.approx(0.32652, abs=1e-5)


def test_a_binary_logit_is_cross_validated() -> None:
    spector = load_dataset("statsmodels:spector").frame
    fit = fit_model(spector, "GRADE", ["GPA", "TUCE", "PSI"])
    assert fit.measures["accuracy"] == 26 / 32
    assert fit.measures["cv_accuracy"] == 25 / 32  # 5 folds, seed 0: one row fewer
    assert fit.measures["cv_auc"] == pytest.approx(0.7402597, abs=1e-7)
    _all_verify(spector, fit)


def _cv_verifies(df: pd.DataFrame, fit: ModelFit) -> None:
    """The fit's cv_accuracy verifies by the fact-checker's own refits; a tampered one not."""
    found = NumericFinding(statistic="cv_accuracy", columns=[fit.target],
                           value=fit.measures["cv_accuracy"], predictors=fit.predictors,
                           model=fit.family)  # fmt: skip
    assert verify(df, found).verdict == "verified"
    for wrong in (found.value - 1 / fit.nobs, found.value + 1 / fit.nobs):  # one row off
        assert verify(df, found.model_copy(update={"value": wrong})).verdict == "mismatch"


def test_a_penalised_multinomial_logit_is_cross_validated_as_it_was_fitted() -> None:
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import KFold, cross_val_predict
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    iris = load_dataset("sklearn:iris")
    fit = fit_model(iris.frame, "target", labels=list(iris.labels["target"].values()))
    assert fit.family == "mnlogit_l2"  # separated classes: the L2 fit, refitted per fold
    # scikit-learn's own folds and refits: standardised on each training fold, C = 1
    x, y = iris.frame[fit.predictors].to_numpy(), iris.frame["target"].to_numpy()
    pipe = make_pipeline(StandardScaler(), LogisticRegression(C=1.0, tol=1e-10, max_iter=10_000))
    predicted = cross_val_predict(pipe, x, y, cv=KFold(5, shuffle=True, random_state=0))
    assert fit.measures["cv_accuracy"] == np.mean(predicted == y) == 145 / 150
    assert fit.measures["accuracy"] == 146 / 150  # in sample: one row more
    _cv_verifies(iris.frame, fit)


def test_a_maximum_likelihood_multinomial_logit_is_cross_validated() -> None:
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import KFold, cross_val_predict

    wine = load_dataset("sklearn:wine")
    fit = fit_model(wine.frame, "target", ["alcohol", "malic_acid", "ash"],
                    labels=list(wine.labels["target"].values()))  # fmt: skip
    assert fit.family == "mnlogit"  # these three do not separate the cultivars
    # the unpenalised multinomial likelihood maximised by scikit-learn (C = inf) per fold
    x, y = wine.frame[fit.predictors].to_numpy(), wine.frame["target"].to_numpy()
    mle = LogisticRegression(C=np.inf, tol=1e-12, max_iter=100_000)
    predicted = cross_val_predict(mle, (x - x.mean(0)) / x.std(0), y,
                                  cv=KFold(5, shuffle=True, random_state=0))  # fmt: skip
    assert fit.measures["cv_accuracy"] == np.mean(predicted == y) == 141 / 178
    assert "cv_auc" not in fit.measures  # an AUC is of two classes
    _cv_verifies(wine.frame, fit)


def test_nominal_codes_enter_as_dummies_against_the_most_frequent_level(
    fair: pd.DataFrame, fair_kinds: dict
) -> None:
    fit = fit_model(fair, "affairs", ["rate_marriage", "occupation"], kinds=fair_kinds)
    any_fit = fit.parts[0]
    assert any_fit.nominal == ["occupation"]
    terms = [c.term for c in any_fit.coefficients]
    assert terms == ["const", "rate_marriage", "occupation=1", "occupation=2", "occupation=4",
                     "occupation=5", "occupation=6"]  # fmt: skip
    assert any(
        "occupation is nominal" in n and "reference level occupation=3 (white-collar)" in n
        for n in fit.notes
    )  # 2783 white-collar rows: the most frequent level
    assert any("ordered scores: rate_marriage (1 = very poor … 5 = very good)" in n
               for n in fit.notes)  # fmt: skip
    dummies = pd.get_dummies(fair["occupation"].astype(int), prefix="occupation",
                             prefix_sep="=", dtype=float).drop(columns="occupation=3")  # fmt: skip
    x = sm.add_constant(pd.concat([fair[["rate_marriage"]], dummies], axis=1))
    ref = sm.Logit((fair["affairs"] > 0).astype(float), x).fit(disp=0)
    coef = {c.term: c.coef for c in any_fit.coefficients}
    assert coef == pytest.approx(dict(ref.params), rel=1e-6)
    for part in fit.parts:
        _all_verify(fair, part)


def test_a_nominal_column_ranks_by_its_correlation_ratio(
    fair: pd.DataFrame, fair_kinds: dict
) -> None:
    # occupation's codes correlate r = 0.0045 with affairs; its levels explain eta = 0.053
    plain = stats.select_predictors(fair, "affairs", 8)
    ranked = stats.select_predictors(fair, "affairs", 8, nominal=["occupation"])
    assert plain.chosen[-1] == "occupation"
    assert ranked.chosen.index("occupation") == plain.chosen.index("educ")
    group = fair.groupby("occupation")["affairs"]
    y = fair["affairs"]
    eta = math.sqrt((group.count() * (group.mean() - y.mean()) ** 2).sum()
                    / ((y - y.mean()) ** 2).sum())  # fmt: skip
    assert eta == pytest.approx(0.0528, abs=1e-4)
    assert np.isclose(eta, stats.eta(fair["affairs"], fair["occupation"]))


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"statistic": "level_count", "columns": ["occupation"]}, "needs the `level`"),
        ({"statistic": "se", "columns": ["GRADE", "GPA"], "predictors": ["GPA"],
          "model": "logit", "cov_type": "HC3"}, "OLS se and pvalue only"),
        ({"statistic": "r2", "columns": ["affairs"], "predictors": ["age"], "part": "any"},
         "part 'any'"),
        ({"statistic": "slope", "columns": ["affairs", "occupation=2"], "predictors": ["age"]},
         "not among the fit's predictors"),
        ({"statistic": "cv_auc", "columns": ["affairs"], "predictors": ["age"]},
         "does not apply to model 'ols'"),
        ({"statistic": "cv_auc", "columns": ["target"], "predictors": ["ash"],
          "model": "mnlogit"}, "does not apply to model 'mnlogit'"),
    ],
)  # fmt: skip
def test_findings_say_what_their_numbers_are(fields: dict, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        NumericFinding(value=1.0, **fields)
