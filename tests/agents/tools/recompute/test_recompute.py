"""Reported numbers against their independent recomputation from the raw table: every number
the analyst's statistics give verifies, every tampered one does not."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from kimmy_swarm.agents.tools import stats
from kimmy_swarm.agents.tools.datasets import load_dataset
from kimmy_swarm.agents.tools.finding import (
    GROUP_STATISTICS,
    INTEGER_STATISTICS,
    STATISTICS,
    NumericFinding,
)
from kimmy_swarm.agents.tools.recompute import recompute, verify
from tests.support.analyst_findings import findings_from_analysis

# One dataset per model family the target calls for (`agents.tools.families.choose_family`):
# OLS (longley, diabetes), logit (spector), penalised multinomial logit (iris: separated),
# negative binomial (cpunish with 5 predictors) and Poisson (cpunish with 6: NB collapses);
# fair's zero-heavy affairs: a two-part model, its OLS part with HC3 standard errors.
MODELLED = {
    "statsmodels:fair": {"max_predictors": 5},
    "statsmodels:longley": {},
    "sklearn:diabetes": {},
    "statsmodels:spector": {},
    "sklearn:iris": {},
    "statsmodels:cpunish": {"max_predictors": 5},
    "statsmodels:cpunish@6": {"max_predictors": 6},
}


def _analysed(spec: str) -> tuple[pd.DataFrame, list[NumericFinding]]:
    ds = load_dataset(spec.split("@")[0])
    target = stats.pick_target(ds.frame, None, ds.target)
    labels = list(ds.labels.get(target, {}).values()) or None
    options = MODELLED[spec]
    return ds.frame, findings_from_analysis(ds.frame, target=target, labels=labels, **options)


@pytest.fixture(scope="module", params=list(MODELLED))
def analysed(request: pytest.FixtureRequest) -> tuple[pd.DataFrame, list[NumericFinding]]:
    return _analysed(request.param)


def _tampered(f: NumericFinding) -> NumericFinding:
    if f.statistic in INTEGER_STATISTICS:
        return f.model_copy(update={"value": f.value + 1})
    return f.model_copy(update={"value": f.value * 1.05 + 0.01})


def test_every_statistic_is_reported_by_some_model() -> None:
    families, seen = set(), set()
    for spec in MODELLED:
        found = _analysed(spec)[1]
        families |= {f.model for f in found if f.predictors is not None}
        seen |= {f.statistic for f in found}
    # grouped comparisons: tests/agents/tools/test_groups.py
    assert seen == set(STATISTICS) - GROUP_STATISTICS
    assert families == {"ols", "logit", "mnlogit_l2", "negbin", "poisson"}


def test_stats_findings_all_verify(analysed: tuple[pd.DataFrame, list[NumericFinding]]) -> None:
    df, found = analysed
    verdicts = [verify(df, f) for f in found]
    failed = [(v.finding, v.recomputed) for v in verdicts if v.verdict != "verified"]
    assert not failed
    assert len(verdicts) >= 50


def test_tampered_findings_mismatch(analysed: tuple[pd.DataFrame, list[NumericFinding]]) -> None:
    df, found = analysed
    for f in found:
        v = verify(df, _tampered(f))
        assert v.verdict == "mismatch", (f, v)
        # statsmodels' IRLS / Newton stop at ~1e-8: a GLM p-value agrees to ~1e-5 relative
        assert v.recomputed == pytest.approx(f.value, rel=1e-4)
        assert "reported" in v.reason and "recomputed" in v.reason


def test_missing_column_is_unverifiable() -> None:
    df = load_dataset("statsmodels:longley").frame
    for finding in [
        NumericFinding(statistic="mean", columns=["GDP"], value=1.0),
        NumericFinding(statistic="corr", columns=["GNP", "GDP"], value=0.5),
        NumericFinding(statistic="r2", columns=["TOTEMP"], value=0.9, predictors=["GDP"]),
    ]:
        v = verify(df, finding)
        assert v.verdict == "unverifiable" and v.recomputed is None
        assert "unknown column 'GDP'" in v.reason


def test_model_statistic_without_predictors_is_unverifiable() -> None:
    df = load_dataset("statsmodels:longley").frame
    v = verify(df, NumericFinding(statistic="r2", columns=["TOTEMP"], value=0.98))
    assert v.verdict == "unverifiable" and "predictors" in v.reason


def test_slope_without_predictors_is_simple_regression() -> None:
    df = load_dataset("statsmodels:longley").frame
    fit = stats.ols(df, "TOTEMP", ["UNEMP"])
    slope = NumericFinding(statistic="slope", columns=["TOTEMP", "UNEMP"], value=fit.coef["UNEMP"])
    assert recompute(df, slope) == pytest.approx(fit.coef["UNEMP"], rel=1e-9)
    const_se = NumericFinding(
        statistic="se", columns=["TOTEMP", "const"], value=fit.se["const"], predictors=["UNEMP"]
    )
    assert verify(df, const_se).verdict == "verified"


def test_rounded_reports_verify_only_when_rounding_matches() -> None:
    df = pd.DataFrame({"x": [3.14159, 3.14159]})
    strict = {"rel_tol": 0.0, "abs_tol": 0.0}

    def verdict(value: float) -> str:
        finding = NumericFinding(statistic="mean", columns=["x"], value=value)
        return verify(df, finding, **strict).verdict

    assert verdict(3.14) == "verified"
    assert verdict(3.1) == "verified"
    assert verdict(3.1416) == "verified"
    assert verdict(3.15) == "mismatch"
    assert verdict(3.2) == "mismatch"
    assert verdict(3.1415) == "mismatch"  # 3.14159 rounds to 3.1416


def test_relative_tolerance_and_exact_counts() -> None:
    df = pd.DataFrame({"x": np.arange(1000.0)})
    mean = NumericFinding(statistic="mean", columns=["x"], value=499.5 * (1 + 5e-4))
    assert verify(df, mean).verdict == "verified"
    assert verify(df, mean, rel_tol=1e-4).verdict == "mismatch"
    count = NumericFinding(statistic="count", columns=["x"], value=999)
    assert verify(df, count, rel_tol=0.1).verdict == "mismatch"  # counts never use tolerance


def test_undefined_statistics() -> None:
    df = pd.DataFrame({"x": [2.0, np.nan], "c": [1.0, 1.0]})
    nan_std = NumericFinding(statistic="std", columns=["x"], value=math.nan)
    assert verify(df, nan_std).verdict == "verified"
    zero_std = verify(df, NumericFinding(statistic="std", columns=["x"], value=0.0))
    assert zero_std.verdict == "unverifiable" and "undefined" in zero_std.reason
    flat_corr = verify(df, NumericFinding(statistic="corr", columns=["x", "c"], value=0.0))
    assert flat_corr.verdict == "unverifiable" and flat_corr.recomputed is None
    nan_mean = NumericFinding(statistic="mean", columns=["x"], value=math.nan)
    assert verify(df, nan_mean).verdict == "mismatch"
    assert recompute(df, NumericFinding(statistic="missing", columns=["x"], value=1)) == 1


@pytest.mark.parametrize("method", ["pearson", "spearman", "kendall"])
def test_correlation_methods_agree_with_stats(method: str) -> None:
    df = load_dataset("sklearn:iris").frame
    for a, b, r in stats.correlations(df, top=4, method=method):
        finding = NumericFinding(statistic="corr", columns=[a, b], value=r, method=method)
        assert verify(df, finding, rel_tol=1e-9).verdict == "verified"
