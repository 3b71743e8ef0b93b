"""Grouped-comparison statistics from the textbook formulas, against scipy's tests."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from kimmy_swarm.agents.tools.conventions import AnalysisError
from kimmy_swarm.agents.tools.recompute._groups import group_statistic

COLUMNS = ["y", "g"]


@pytest.fixture
def frame() -> pd.DataFrame:
    return pd.DataFrame({
        "y": [1.0, 2.0, 2.0, 4.0, 5.0, 7.0, np.nan, 3.0, 9.0, 8.0],
        "g": [0, 0, 0, 1, 1, 1, 1, 2.0, 2, None],
    })  # fmt: skip


def _parts(frame: pd.DataFrame) -> dict[str, np.ndarray]:
    kept = frame.dropna()
    return {str(int(k)): part["y"].to_numpy() for k, part in kept.groupby("g")}


def test_per_group_statistics_by_group_key(frame: pd.DataFrame) -> None:
    parts = _parts(frame)
    assert group_statistic(frame, "group_count", COLUMNS, "1") == 3.0  # the NaN row dropped
    assert group_statistic(frame, "group_mean", COLUMNS, "2") == pytest.approx(6.0)
    assert group_statistic(frame, "group_median", COLUMNS, "0") == 2.0
    rest = np.concatenate([parts["0"], parts["2"]])
    welch = sps.ttest_ind(parts["1"], rest, equal_var=False)
    assert group_statistic(frame, "welch_t", COLUMNS, "1") == pytest.approx(welch.statistic)
    assert group_statistic(frame, "welch_pvalue", COLUMNS, "1") == pytest.approx(welch.pvalue)


def test_tests_across_all_groups(frame: pd.DataFrame) -> None:
    samples = list(_parts(frame).values())
    anova, kruskal = sps.f_oneway(*samples), sps.kruskal(*samples)
    assert group_statistic(frame, "anova_f", COLUMNS, None) == pytest.approx(anova.statistic)
    assert group_statistic(frame, "anova_pvalue", COLUMNS, None) == pytest.approx(anova.pvalue)
    assert group_statistic(frame, "kruskal_h", COLUMNS, None) == pytest.approx(kruskal.statistic)
    p = group_statistic(frame, "kruskal_pvalue", COLUMNS, None)
    assert p == pytest.approx(kruskal.pvalue)
    eta = group_statistic(frame, "eta_squared", COLUMNS, None)
    assert 0.0 < eta < 1.0


def test_unknown_groups_are_analysis_errors(frame: pd.DataFrame) -> None:
    with pytest.raises(AnalysisError, match="no group '7' in column 'g'; groups: 0, 1, 2"):
        group_statistic(frame, "group_mean", COLUMNS, "7")
