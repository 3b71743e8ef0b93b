"""The measures a nominal column gets in place of Pearson's r (the correlation ratio eta,
Cramér's V), and the prose's derived numbers (odds ratios, shares, distinct values): the
analyst's values (`agents.tools.stats`) against the fact-checker's numpy recomputation."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from kimmy_swarm.agents.tools import stats
from kimmy_swarm.agents.tools.datasets import load_dataset
from kimmy_swarm.agents.tools.finding import NumericFinding
from kimmy_swarm.agents.tools.recompute import recompute, verify


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    kind = rng.integers(1, 5, 400).astype(float)  # (N,) nominal codes 1..4
    other = np.where(rng.random(400) < 0.6, kind, rng.integers(1, 5, 400)).astype(float)
    y = np.array([0.0, 3.0, -1.0, 0.5])[kind.astype(int) - 1] + rng.normal(size=400)
    x = y + rng.normal(size=400)
    return pd.DataFrame({"y": y, "x": x, "kind": kind, "other": other})


def test_associations_use_eta_and_cramers_v_for_nominal_columns(frame: pd.DataFrame) -> None:
    pairs = stats.associations(frame, top=6, nominal=["kind", "other"])
    by = {(a, b): (v, m) for a, b, v, m in pairs}
    assert by[("y", "x")][1] == "pearson"
    assert by[("y", "kind")][1] == by[("x", "other")][1] == "eta"  # nominal second
    assert by[("kind", "other")][1] == "cramers_v"
    for (a, b), (v, m) in by.items():
        f = NumericFinding(statistic="corr", columns=[a, b], value=v, method=m)
        assert math.isclose(recompute(frame, f), v, rel_tol=1e-9), (a, b, m)
    # eta of y over kind's levels is no r of its codes: the codes' r is far weaker
    assert by[("y", "kind")][0] > 2 * abs(frame["y"].corr(frame["kind"]))


def test_a_class_label_target_ranks_predictors_by_their_eta() -> None:
    iris = load_dataset("sklearn:iris").frame
    choice = stats.select_predictors(iris, "target", 4, nominal_target=True)
    assert set(choice.measures.values()) == {"eta_target"}
    etas = [stats.eta(iris[c], iris["target"]) for c in choice.chosen]
    assert etas == sorted(etas, reverse=True)


def test_odds_ratio_share_and_distinct_are_recomputed() -> None:
    spector = load_dataset("statsmodels:spector").frame
    preds = ["GPA", "TUCE", "PSI"]
    odds = NumericFinding(statistic="odds_ratio", columns=["GRADE", "GPA"], value=16.87,
                          predictors=preds, model="logit")  # fmt: skip
    assert verify(spector, odds).verdict == "verified"
    wrong = odds.model_copy(update={"value": 2.83})  # the coefficient is no odds ratio
    assert verify(spector, wrong).verdict == "mismatch"
    share = NumericFinding(statistic="level_share", columns=["GRADE"], value=21 / 32, level="0")
    assert verify(spector, share).verdict == "verified"
    distinct = NumericFinding(
        statistic="distinct", columns=["TUCE"], value=spector["TUCE"].nunique()
    )
    assert verify(spector, distinct).verdict == "verified"
    with pytest.raises(ValueError, match="does not apply"):
        NumericFinding(statistic="odds_ratio", columns=["GRADE", "GPA"], value=1.0,
                       predictors=preds, model="ols")  # fmt: skip
