"""OLS statistics by least squares and the textbook formulas, against statsmodels."""

from __future__ import annotations

import pytest
import statsmodels.api as sm

from kimmy_swarm.agents.tools.conventions import AnalysisError
from kimmy_swarm.agents.tools.datasets import load_dataset
from kimmy_swarm.agents.tools.recompute._ols import ols_statistic

PREDICTORS = ["GNP", "UNEMP", "ARMED"]


def test_ols_statistics_match_statsmodels() -> None:
    df = load_dataset("statsmodels:longley").frame
    fit = sm.OLS(df["TOTEMP"], sm.add_constant(df[PREDICTORS])).fit()

    def got(statistic: str, term: str = "const") -> float:
        return ols_statistic(df, statistic, "TOTEMP", PREDICTORS, term)

    assert got("r2") == pytest.approx(fit.rsquared, rel=1e-9)
    assert got("adj_r2") == pytest.approx(fit.rsquared_adj, rel=1e-9)
    assert got("nobs") == fit.nobs
    assert got("intercept") == pytest.approx(fit.params["const"], rel=1e-9)
    for term in ("const", *PREDICTORS):
        if term != "const":
            assert got("slope", term) == pytest.approx(fit.params[term], rel=1e-9)
        assert got("se", term) == pytest.approx(fit.bse[term], rel=1e-9)
        assert got("pvalue", term) == pytest.approx(fit.pvalues[term], rel=1e-6)


def test_without_predictors_a_slope_is_the_simple_regression() -> None:
    df = load_dataset("statsmodels:longley").frame
    fit = sm.OLS(df["TOTEMP"], sm.add_constant(df[["GNP"]])).fit()
    assert ols_statistic(df, "slope", "TOTEMP", None, "GNP") == pytest.approx(fit.params["GNP"])
    with pytest.raises(AnalysisError, match="'r2' needs the fit's predictor list"):
        ols_statistic(df, "r2", "TOTEMP", None)
    with pytest.raises(AnalysisError, match="an intercept statistic needs"):
        ols_statistic(df, "se", "TOTEMP", None, "const")


def test_collinear_predictors_and_too_few_rows_are_analysis_errors() -> None:
    df = load_dataset("statsmodels:longley").frame.assign(GNP2=lambda d: 2 * d["GNP"])
    with pytest.raises(AnalysisError, match="collinear"):
        ols_statistic(df, "r2", "TOTEMP", ["GNP", "GNP2"])
    with pytest.raises(AnalysisError, match="3 complete rows cannot fit 4 coefficients"):
        ols_statistic(df.head(3), "r2", "TOTEMP", PREDICTORS)
