"""Grouped comparisons (`agents.tools.groups`) against their independent recomputation."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError
from scipy import stats as sps

from kimmy_swarm.agents.tools.conventions import AnalysisError
from kimmy_swarm.agents.tools.datasets import load_dataset
from kimmy_swarm.agents.tools.finding import GROUP_STATISTICS, INTEGER_STATISTICS, NumericFinding
from kimmy_swarm.agents.tools.groups import MAX_GROUPS, compare_groups, groupable
from kimmy_swarm.agents.tools.recompute import verify

CASES = [
    ("sklearn:iris", "sepal length (cm)", "target"),
    ("sklearn:wine", "alcohol", "target"),
    ("sklearn:diabetes", "bmi", "sex"),  # two groups: the Welch t-test too
    ("statsmodels:fair", "affairs", "religious"),
]


def _findings(df: pd.DataFrame, value: str, group: str) -> list[NumericFinding]:
    """Every number of a comparison as the analyst reports it."""
    cmp = compare_groups(df, value, group)
    cols = [value, group]
    out = []
    for g in cmp.groups.values():
        for stat, v in (
            ("group_count", g.count),
            ("group_mean", g.mean),
            ("group_median", g.median),
        ):
            out.append(NumericFinding(statistic=stat, columns=cols, value=v, group=g.key))
    for stat in ("anova_f", "anova_pvalue", "kruskal_h", "kruskal_pvalue", "eta_squared"):
        out.append(NumericFinding(statistic=stat, columns=cols, value=getattr(cmp, stat)))
    if cmp.welch is not None:
        key, t, p = cmp.welch
        out.append(NumericFinding(statistic="welch_t", columns=cols, value=t, group=key))
        out.append(NumericFinding(statistic="welch_pvalue", columns=cols, value=p, group=key))
    return out


@pytest.mark.parametrize(("spec", "value", "group"), CASES)
def test_every_group_statistic_verifies_and_a_tampered_one_mismatches(
    spec: str, value: str, group: str
) -> None:
    df = load_dataset(spec).frame
    found = _findings(df, value, group)
    for f in found:
        assert verify(df, f).verdict == "verified", (f, verify(df, f))
        bumped = f.value + 1 if f.statistic in INTEGER_STATISTICS else f.value * 1.05 + 1e-3
        tampered = verify(df, f.model_copy(update={"value": bumped}))
        assert tampered.verdict == "mismatch", (f, tampered)
        assert tampered.recomputed == pytest.approx(f.value, rel=1e-6)


def test_every_group_statistic_is_exercised() -> None:
    df = load_dataset("sklearn:diabetes").frame
    assert {f.statistic for f in _findings(df, "bmi", "sex")} == GROUP_STATISTICS


def test_iris_sepal_length_by_species_matches_scipy_and_the_means() -> None:
    df = load_dataset("sklearn:iris").frame
    names = {"0": "setosa", "1": "versicolor", "2": "virginica"}
    cmp = compare_groups(df, "sepal length (cm)", "target", labels=names)
    assert (cmp.highest, cmp.lowest) == ("2", "0")
    assert [g.label for g in cmp.groups.values()] == ["setosa", "versicolor", "virginica"]
    parts = [df.loc[df["target"] == k, "sepal length (cm)"] for k in range(3)]
    assert [g.mean for g in cmp.groups.values()] == pytest.approx([p.mean() for p in parts])
    assert [g.count for g in cmp.groups.values()] == [50, 50, 50]
    anova = sps.f_oneway(*parts)
    assert cmp.anova_f == pytest.approx(anova.statistic) and cmp.anova_f > 100
    assert cmp.anova_pvalue == pytest.approx(anova.pvalue, rel=1e-6)
    assert 0.5 < cmp.eta_squared < 0.7 and cmp.welch is None


def test_missing_values_and_missing_groups_are_dropped() -> None:
    df = pd.DataFrame(
        {"y": [1.0, 2.0, np.nan, 4.0, 5.0, 6.0, 7.0], "g": ["a", "a", "a", "b", "b", None, "b"]}
    )
    cmp = compare_groups(df, "y", "g")
    assert {k: g.count for k, g in cmp.groups.items()} == {"a": 2, "b": 3}
    assert cmp.groups["b"].mean == pytest.approx(16 / 3)
    for f in _findings(df, "y", "g"):
        assert verify(df, f).verdict == "verified", f


@pytest.mark.parametrize(
    ("frame", "match"),
    [
        (pd.DataFrame({"y": [1.0, 2.0, 3.0], "g": ["a"] * 3}), "1 groups"),
        (pd.DataFrame({"y": range(60), "g": range(60)}), f"2 to {MAX_GROUPS}"),
        (pd.DataFrame({"y": [1.0, 2.0, 3.0], "g": ["a", "a", "b"]}), "fewer than two"),
        (pd.DataFrame({"y": ["x", "y"], "g": ["a", "b"]}), "not numeric"),
        (pd.DataFrame({"y": [1.0, 2.0], "g": ["a", "b"]}).drop(columns="g"), "unknown column"),
    ],
)
def test_bad_comparisons_raise_naming_the_problem(frame: pd.DataFrame, match: str) -> None:
    with pytest.raises(AnalysisError, match=match):
        compare_groups(frame, "y", "g")


def test_group_findings_check_their_shape_and_unknown_groups() -> None:
    df = load_dataset("sklearn:iris").frame
    cols = ["sepal length (cm)", "target"]
    with pytest.raises(ValidationError, match="group"):
        NumericFinding(statistic="group_mean", columns=cols, value=5.0)  # which group?
    with pytest.raises(ValidationError, match="group"):
        NumericFinding(statistic="anova_f", columns=cols, value=1.0, group="0")
    with pytest.raises(ValidationError, match="2 column"):
        NumericFinding(statistic="group_mean", columns=cols[:1], value=5.0, group="0")
    ghost = NumericFinding(statistic="group_mean", columns=cols, value=5.0, group="7")
    verdict = verify(df, ghost)
    assert verdict.verdict == "unverifiable" and "no group '7'" in verdict.reason
    assert groupable(df, "target") and not groupable(df, "sepal length (cm)")
    assert math.isnan(
        compare_groups(pd.DataFrame({"y": [1.0] * 4, "g": list("aabb")}), "y", "g").kruskal_h
    )


def test_one_constant_group_still_gets_its_tests() -> None:
    df = pd.DataFrame({"y": [1.0, 1.0, 1.0, 2.0, 4.0, 9.0], "g": list("aaabbb")})
    cmp = compare_groups(df, "y", "g")
    assert math.isfinite(cmp.anova_f) and cmp.welch is not None and math.isfinite(cmp.welch[1])
    for f in _findings(df, "y", "g"):
        assert verify(df, f).verdict == "verified", f
