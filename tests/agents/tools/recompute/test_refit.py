"""Models refitted from their likelihood (numpy / scipy), named by target, predictors, term
and level rather than by a finding, against statsmodels."""

from __future__ import annotations

import pytest
import statsmodels.api as sm
from statsmodels.stats.outliers_influence import variance_inflation_factor

from kimmy_swarm.agents.tools.conventions import AnalysisError
from kimmy_swarm.agents.tools.datasets import load_dataset
from kimmy_swarm.agents.tools.recompute._refit import refit_statistic

PREDICTORS = ["GPA", "TUCE", "PSI"]


def test_logit_coefficients_and_measures_match_statsmodels() -> None:
    df = load_dataset("statsmodels:spector").frame
    fit = sm.Logit(df["GRADE"], sm.add_constant(df[PREDICTORS])).fit(disp=0)

    def got(statistic: str, **named: str) -> float:
        return refit_statistic(df, "logit", statistic, "GRADE", PREDICTORS, **named)

    assert got("intercept") == pytest.approx(fit.params["const"], rel=1e-6)
    assert got("slope", term="GPA") == pytest.approx(fit.params["GPA"], rel=1e-6)
    assert got("se", term="const") == pytest.approx(fit.bse["const"], rel=1e-6)
    assert got("llf") == pytest.approx(fit.llf, rel=1e-9)
    assert got("pseudo_r2") == pytest.approx(fit.prsquared, rel=1e-9)
    assert got("aic") == pytest.approx(fit.aic, rel=1e-9)


def test_a_vif_is_of_the_predictor_named_as_term() -> None:
    df = load_dataset("statsmodels:spector").frame
    design = sm.add_constant(df[PREDICTORS]).to_numpy()
    for i, p in enumerate(PREDICTORS, start=1):
        got = refit_statistic(df, "ols", "vif", "GRADE", PREDICTORS, term=p)
        assert got == pytest.approx(variance_inflation_factor(design, i), rel=1e-9)


def test_missing_predictors_and_unknown_levels_are_analysis_errors() -> None:
    df = load_dataset("sklearn:iris").frame
    with pytest.raises(AnalysisError, match="'aic' needs the fit's predictor list"):
        refit_statistic(df, "logit", "aic", "target", None)
    predictors = ["sepal width (cm)"]
    with pytest.raises(AnalysisError, match="level '7' is not a non-base class of 'target'"):
        refit_statistic(df, "mnlogit", "slope", "target", predictors,
                        term="sepal width (cm)", level="7")  # fmt: skip
