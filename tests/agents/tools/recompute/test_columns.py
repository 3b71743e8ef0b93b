"""Describe statistics, correlations and outlier counts recomputed from the raw arrays,
against pandas' values (the analyst's path)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from kimmy_swarm.agents.tools.conventions import AnalysisError
from kimmy_swarm.agents.tools.recompute._columns import (
    column_statistic,
    correlation,
    numeric_values,
    outlier_count,
)


@pytest.fixture
def frame() -> pd.DataFrame:
    return pd.DataFrame({
        "x": [1.0, 2.0, np.nan, 4.0, 100.0, 3.0],
        "y": [2.0, 4.1, 5.0, 8.3, 9.0, np.nan],
        "c": [1.0] * 6,
        "s": list("abcdef"),
    })  # fmt: skip


def test_column_statistics_match_pandas(frame: pd.DataFrame) -> None:
    x = frame["x"]
    expected = {"count": x.count(), "missing": 1, "mean": x.mean(), "median": x.median(),
                "std": x.std(), "min": x.min(), "max": x.max(), "skew": x.skew()}  # fmt: skip
    for stat, value in expected.items():
        assert column_statistic(stat, frame, "x") == pytest.approx(value, rel=1e-12), stat
    assert column_statistic("skew", frame, "c") == 0.0  # pandas' value for a constant column


def test_correlation_uses_pairwise_complete_rows(frame: pd.DataFrame) -> None:
    for method in ("pearson", "spearman", "kendall"):
        got = correlation(frame, "x", "y", method)
        assert got == pytest.approx(frame["x"].corr(frame["y"], method=method), rel=1e-12)
    assert math.isnan(correlation(frame, "x", "c", "pearson"))  # a constant column


def test_outliers_beyond_tukey_fences(frame: pd.DataFrame) -> None:
    assert outlier_count(numeric_values(frame, "x")) == 1.0  # 100 lies beyond Q3 + 1.5 IQR
    assert outlier_count(np.empty(0)) == 0.0


def test_unknown_and_text_columns_are_analysis_errors(frame: pd.DataFrame) -> None:
    with pytest.raises(AnalysisError, match="unknown column 'z'; columns: x, y, c, s"):
        column_statistic("mean", frame, "z")
    with pytest.raises(AnalysisError, match="'s' is not numeric"):
        numeric_values(frame, "s")
    assert column_statistic("missing", frame, "s") == 0.0  # counting needs no numbers
