"""Regression diagnostics against published values, and their independent recomputation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from kimmy_swarm.agents.tools.conventions import AnalysisError
from kimmy_swarm.agents.tools.datasets import load_dataset
from kimmy_swarm.agents.tools.diagnostics import diagnose
from kimmy_swarm.agents.tools.finding import NumericFinding
from kimmy_swarm.agents.tools.recompute import verify

LONGLEY_ALL = ["GNPDEFL", "GNP", "UNEMP", "ARMED", "POP", "YEAR"]
# R: car::vif(lm(Employed ~ ., data = longley)) — the classic collinearity example.
LONGLEY_VIF = {
    "GNPDEFL": 135.53244, "GNP": 1788.51348, "UNEMP": 33.61889, "ARMED": 3.58893,
    "POP": 399.15102, "YEAR": 758.98060,
}  # fmt: skip


def test_longley_vifs_and_condition_number_match_the_published_values() -> None:
    dg = diagnose(load_dataset("statsmodels:longley").frame, "TOTEMP", LONGLEY_ALL)
    assert dg.vif == pytest.approx(LONGLEY_VIF, rel=1e-6)
    assert dg.cond_number == pytest.approx(4.86e9, rel=1e-3)  # statsmodels' summary: 4.86e+09
    assert dg.residual["bp_pvalue"] > 0.05 and dg.residual["jb_pvalue"] > 0.05


def test_fair_residuals_are_heteroscedastic_and_not_normal() -> None:
    df = load_dataset("statsmodels:fair").frame
    dg = diagnose(df, "affairs", ["rate_marriage", "religious"])
    assert dg.residual["bp_pvalue"] < 1e-6  # Breusch–Pagan: variance grows with the fit
    # Jarque–Bera by hand: n/6 (S² + (K - 3)²/4) with the biased moments of the residuals
    x = np.column_stack([np.ones(len(df)), df[["rate_marriage", "religious"]]])
    e = df["affairs"] - x @ np.linalg.lstsq(x, df["affairs"], rcond=None)[0]
    s, k = sps.skew(e), sps.kurtosis(e, fisher=False)
    assert dg.residual["jb"] == pytest.approx(len(e) / 6 * (s**2 + (k - 3) ** 2 / 4), rel=1e-9)


def test_glm_diagnostics_leave_out_the_ols_residual_checks() -> None:
    df = load_dataset("statsmodels:spector").frame
    dg = diagnose(df, "GRADE", ["GPA", "TUCE", "PSI"], ols=False)
    assert dg.residual == {} and set(dg.vif) == {"GPA", "TUCE", "PSI"}
    one = diagnose(df, "GRADE", ["GPA"], ols=False)
    assert one.vif == {}  # a single predictor has nothing to be collinear with


@pytest.mark.parametrize("ols", [True, False])
def test_every_diagnostic_verifies_and_a_tampered_one_does_not(ols: bool) -> None:
    df = load_dataset("statsmodels:longley").frame
    dg = diagnose(df, "TOTEMP", LONGLEY_ALL, ols=ols)
    model = {"predictors": LONGLEY_ALL, "model": "ols" if ols else "poisson"}
    found = [NumericFinding(statistic="cond_number", columns=["TOTEMP"], value=dg.cond_number,
                            **model)]  # fmt: skip
    found += [NumericFinding(statistic=k, columns=["TOTEMP"], value=v, **model)
              for k, v in dg.residual.items()]  # fmt: skip
    found += [NumericFinding(statistic="vif", columns=["TOTEMP", p], value=v, **model)
              for p, v in dg.vif.items()]  # fmt: skip
    assert len(found) == (11 if ols else 7)
    for f in found:
        assert verify(df, f).verdict == "verified", f
        assert verify(df, f.model_copy(update={"value": f.value * 1.05})).verdict == "mismatch"


def test_bad_columns_are_clear_errors() -> None:
    df = load_dataset("statsmodels:longley").frame
    with pytest.raises(AnalysisError, match="unknown column 'GDP'"):
        diagnose(df, "TOTEMP", ["GDP"])
    with pytest.raises(AnalysisError, match="is the target itself"):
        diagnose(df, "TOTEMP", ["TOTEMP"])
