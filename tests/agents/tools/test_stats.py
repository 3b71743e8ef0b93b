"""Descriptive statistics, correlations, OLS and target picking, against reference values."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from kimmy_swarm.agents.tools.conventions import AnalysisError
from kimmy_swarm.agents.tools.datasets import load_dataset
from kimmy_swarm.agents.tools.stats import (
    correlations,
    describe,
    missing,
    numeric_columns,
    ols,
    outliers,
    pick_target,
    profile,
    select_predictors,
)

# NIST StRD certified values for the Longley regression (y = TOTEMP on all six columns).
NIST_LONGLEY = {
    "const": (-3482258.63459582, 890420.383607373),
    "GNPDEFL": (15.0618722713733, 84.9149257747669),
    "GNP": (-0.358191792925910e-01, 0.334910077722432e-01),
    "UNEMP": (-2.02022980381683, 0.488399681651699),
    "ARMED": (-1.03322686717359, 0.214274163161675),
    "POP": (-0.511041056535807e-01, 0.226073200069370),
    "YEAR": (1829.15146461355, 455.478499142212),
}
NIST_LONGLEY_R2 = 0.995479004577296


@pytest.fixture
def mixed() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "a": [1.0, 2.0, 4.0, np.nan, 8.0, 9.5],
            "b": [3, 1, 4, 1, 5, 9],
            "flag": [True, False, True, True, False, False],
            "name": list("uvwxyz"),
        }
    )


def test_numeric_columns_excludes_bool_and_text(mixed: pd.DataFrame) -> None:
    assert numeric_columns(mixed) == ["a", "b"]


def test_profile_and_missing(mixed: pd.DataFrame) -> None:
    p = profile(mixed)
    assert (p["rows"], p["columns"]) == (6, 4)
    assert p["numeric_columns"] == ["a", "b"] and p["dtypes"]["name"] in ("object", "str")
    assert p["missing_cells"] == 1 and p["memory_bytes"] > 0
    assert missing(mixed) == {"a": 1, "b": 0, "flag": 0, "name": 0}


def test_describe_matches_textbook_formulas(mixed: pd.DataFrame) -> None:
    x = [1.0, 2.0, 4.0, 8.0, 9.5]  # column a without its missing value
    n = len(x)
    mean = sum(x) / n
    m2 = sum((v - mean) ** 2 for v in x) / n
    m3 = sum((v - mean) ** 3 for v in x) / n
    skew = math.sqrt(n * (n - 1)) / (n - 2) * m3 / m2**1.5  # adjusted Fisher-Pearson G1
    got = describe(mixed)["a"]
    assert got["count"] == n and got["median"] == 4.0
    assert got["min"] == 1.0 and got["max"] == 9.5
    assert got["mean"] == pytest.approx(mean)
    assert got["std"] == pytest.approx(math.sqrt(m2 * n / (n - 1)))
    assert got["skew"] == pytest.approx(skew)
    assert set(describe(mixed)) == {"a", "b"}


def test_describe_rejects_unknown_and_text_columns(mixed: pd.DataFrame) -> None:
    with pytest.raises(AnalysisError, match="unknown column 'zz'"):
        describe(mixed, ["zz"])
    with pytest.raises(AnalysisError, match="'name' is not numeric"):
        describe(mixed, ["name"])


def test_correlations_rank_by_abs_r_with_stable_ties() -> None:
    rng = np.random.default_rng(3)
    base = rng.normal(size=50)
    df = pd.DataFrame(
        {
            "p": base,
            "q": 2 * base,  # r = 1 with p
            "r": -3 * base + 1,  # r = -1 with p and q
            "noise": rng.normal(size=50),
            "const": np.ones(50),  # undefined r: left out
        }
    )
    top = correlations(df, top=3)
    assert [(a, b) for a, b, _ in top] == [("p", "q"), ("p", "r"), ("q", "r")]
    assert [round(r, 12) for *_, r in top] == [1.0, -1.0, -1.0]
    everything = correlations(df, top=100)
    assert len(everything) == 6  # 4 varying columns -> 6 pairs; const pairs dropped
    assert all("const" not in (a, b) for a, b, _ in everything)
    assert correlations(df, top=100) == everything
    spearman = correlations(df, top=1, method="spearman")
    assert spearman[0][:2] == ("p", "q") and spearman[0][2] == pytest.approx(1.0)


def test_correlations_reject_bad_arguments() -> None:
    df = pd.DataFrame({"x": [1.0, 2.0, 3.0], "y": [2.0, 1.0, 3.0]})
    with pytest.raises(AnalysisError, match=r"'cosine'.*pearson"):
        correlations(df, method="cosine")
    with pytest.raises(AnalysisError, match="top"):
        correlations(df, top=0)


def test_ols_matches_nist_certified_longley() -> None:
    df = load_dataset("statsmodels:longley").frame
    fit = ols(df, "TOTEMP", ["GNPDEFL", "GNP", "UNEMP", "ARMED", "POP", "YEAR"])
    assert list(fit.coef) == list(NIST_LONGLEY)
    for name, (coef, se) in NIST_LONGLEY.items():
        assert fit.coef[name] == pytest.approx(coef, rel=1e-6), name
        assert fit.se[name] == pytest.approx(se, rel=1e-6), name
    assert fit.r2 == pytest.approx(NIST_LONGLEY_R2, rel=1e-9)
    assert fit.nobs == 16 and 0 < fit.adj_r2 < fit.r2 and fit.f_pvalue < 1e-8


def test_ols_default_predictors_rank_by_r_and_skip_near_duplicates() -> None:
    rng = np.random.default_rng(11)
    n = 200
    x1, x2, x3 = rng.normal(size=(3, n))
    df = pd.DataFrame(
        {
            "x3": x3,
            "x1": x1,
            "x1_copy": x1 * 1.01 + rng.normal(scale=1e-3, size=n),  # |r| > 0.98 with x1
            "x2": x2,
            "text": ["t"] * n,
        }
    )
    df["y"] = 5 * x1 + 2 * x2 + 0.5 * x3 + rng.normal(scale=0.1, size=n)
    fit = ols(df, "y")
    assert fit.predictors == ["x1", "x2", "x3"]
    assert fit.coef["x1"] == pytest.approx(5, abs=0.05)
    assert ols(df, "y", max_predictors=1).predictors == ["x1"]


def test_ols_drops_rows_with_missing_values() -> None:
    rng = np.random.default_rng(5)
    df = pd.DataFrame({"x": rng.normal(size=30), "z": rng.normal(size=30)})
    df["y"] = 1 + 2 * df["x"]
    df.loc[[0, 1], "x"] = np.nan
    df.loc[2, "y"] = np.nan
    df.loc[3, "z"] = np.nan  # unused column: its missing value costs no row
    fit = ols(df, "y", ["x"])
    assert fit.nobs == 27
    assert fit.coef["const"] == pytest.approx(1) and fit.coef["x"] == pytest.approx(2)


def test_ols_errors_name_the_problem() -> None:
    df = pd.DataFrame({"y": [1.0, 2.0, 3.5, 4.0], "x": [1.0, 2.0, 3.0, 4.5], "s": list("abcd")})
    with pytest.raises(AnalysisError, match="unknown column 'nope'"):
        ols(df, "nope")
    with pytest.raises(AnalysisError, match="'s' is not numeric"):
        ols(df, "y", ["s"])
    with pytest.raises(AnalysisError, match="no numeric predictors"):
        ols(df[["y", "s"]], "y")
    with pytest.raises(AnalysisError, match="no numeric predictors"):
        ols(df, "y", [])
    with pytest.raises(AnalysisError, match="is the target"):
        ols(df, "y", ["y"])
    with pytest.raises(AnalysisError, match=r"too few complete rows \(3\)"):
        ols(df.assign(z=[1.0, 2.0, 0.5, np.nan]), "y", ["x", "z"])  # 3 rows, 3 coefficients
    with pytest.raises(AnalysisError, match="collinear"):
        ols(df.assign(x2=df["x"] * 2), "y", ["x", "x2"])


def test_outliers_counts_tukey_fences() -> None:
    values = [*range(1, 21), 100, -50, np.nan]
    df = pd.DataFrame({"v": values})
    q1, q3 = np.percentile([*range(1, 21), 100, -50], [25, 75])
    low, high = q1 - 1.5 * (q3 - q1), q3 + 1.5 * (q3 - q1)
    expected = sum(1 for v in values if not np.isnan(v) and (v < low or v > high))
    assert outliers(df, "v") == expected == 2
    assert outliers(df, "v", k=100) == 0
    with pytest.raises(AnalysisError, match="k must be"):
        outliers(df, "v", k=-1)


def test_pick_target_prefers_hint_then_designated_then_last_varying() -> None:
    df = pd.DataFrame(
        {
            "age": [30, 40, 50],
            "body_mass": [60.0, 70.0, 65.0],
            "income": [1.0, 2.0, 3.0],
            "flat": [1.0, 1.0, 1.0],
            "city": list("abc"),
        }
    )
    assert pick_target(df, "Does INCOME rise with age?", None) == "income"
    assert pick_target(df, "Does income rise with age?", "age") == "age"  # designated named
    assert pick_target(df, "what drives body mass?", "income") == "body_mass"
    assert pick_target(df, "the average city", "income") == "income"  # no whole-word column
    assert pick_target(df, None, None) == "income"  # 'flat' is constant
    assert pick_target(df, None, "city") == "income"  # a non-numeric designation is ignored
    assert pick_target(df[["city"]], "city?", "city") is None


def test_select_predictors_names_the_near_duplicates_it_leaves_out() -> None:
    df = load_dataset("statsmodels:longley").frame
    choice = select_predictors(df, "TOTEMP", 6)
    assert choice.chosen == ["GNP", "UNEMP", "ARMED"]
    assert [(c, k) for c, k, _ in choice.dropped] == [
        ("YEAR", "GNP"), ("GNPDEFL", "GNP"), ("POP", "GNP"),
    ]  # fmt: skip
    for c, k, r in choice.dropped:
        assert r == pytest.approx(df[c].corr(df[k])) and abs(r) > 0.98
    assert select_predictors(df, "TOTEMP", 1).dropped == []  # none skipped before the cap
    assert ols(df, "TOTEMP").predictors == choice.chosen


def test_select_predictors_leaves_out_excluded_columns() -> None:
    df = load_dataset("sklearn:iris").frame
    assert "target" in select_predictors(df, "sepal length (cm)").chosen
    chosen = select_predictors(df, "sepal length (cm)", exclude=["target"]).chosen
    assert chosen == ["petal length (cm)", "petal width (cm)", "sepal width (cm)"]
