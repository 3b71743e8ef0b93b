"""The OLS likelihood and the regression diagnostics from textbook formulas, against
statsmodels."""

from __future__ import annotations

import numpy as np
import pytest
import statsmodels.api as sm
from statsmodels.stats.diagnostic import het_breuschpagan
from statsmodels.stats.outliers_influence import variance_inflation_factor
from statsmodels.stats.stattools import jarque_bera

from kimmy_swarm.agents.tools.datasets import load_dataset
from kimmy_swarm.agents.tools.recompute._diagnostics import (
    cond_number,
    ols_likelihood,
    residual_tests,
    vif,
)

PREDICTORS = ["GNP", "UNEMP", "ARMED"]


@pytest.fixture(scope="module")
def design() -> tuple[np.ndarray, np.ndarray]:
    df = load_dataset("statsmodels:longley").frame
    return df["TOTEMP"].to_numpy(float), sm.add_constant(df[PREDICTORS]).to_numpy(float)


def test_likelihood_and_residual_tests_match_statsmodels(
    design: tuple[np.ndarray, np.ndarray],
) -> None:
    y, x = design
    fit = sm.OLS(y, x).fit()
    assert ols_likelihood(y, x) == pytest.approx({"llf": fit.llf, "aic": fit.aic}, rel=1e-9)
    jb, jb_p, _, _ = jarque_bera(fit.resid)
    bp, bp_p, _, _ = het_breuschpagan(fit.resid, x)
    got = residual_tests(y, x)
    assert got == pytest.approx({"jb": jb, "jb_pvalue": jb_p, "bp": bp, "bp_pvalue": bp_p},
                                rel=1e-7)  # fmt: skip


def test_collinearity_measures_match_statsmodels(design: tuple[np.ndarray, np.ndarray]) -> None:
    _, x = design
    expected = [variance_inflation_factor(x, i) for i in range(1, x.shape[1])]
    assert vif(x) == pytest.approx(expected, rel=1e-9)
    assert cond_number(x) == pytest.approx(np.linalg.cond(x), rel=1e-9)
