"""Influential rows of an OLS fit or a logit (`agents.tools.diagnostics`): how many have Cook's
distance above 4/n, the largest and its row, the OLS fit refitted without a row whose
distance exceeds 1 and the logit without all its influential rows — against statsmodels'
influence measures, and recomputed independently by the fact-checker
(`agents.tools.recompute`) from the QR leverages (of the weighted design, for a logit)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from pydantic import ValidationError

from kimmy_swarm.agents.tools import stats
from kimmy_swarm.agents.tools.conventions import AnalysisError
from kimmy_swarm.agents.tools.datasets import load_dataset
from kimmy_swarm.agents.tools.diagnostics import Diagnostics, diagnose
from kimmy_swarm.agents.tools.finding import NumericFinding
from kimmy_swarm.agents.tools.recompute import verify
from kimmy_swarm.agents.tools.recompute._design import design
from kimmy_swarm.agents.tools.recompute._influence import cooks_distances, logit_cooks_distances

FAIR = ["rate_marriage", "religious", "age", "yrs_married", "children"]
STATECRIME = ["poverty", "single"]


def _cooks(y: pd.Series, x: pd.DataFrame) -> np.ndarray:
    """statsmodels' Cook's distances of the OLS fit of y on [1, x]."""
    res = sm.OLS(y, sm.add_constant(x)).fit()
    return np.asarray(res.get_influence().cooks_distance[0])


def _findings(dg: Diagnostics, model_name: str = "ols") -> list[NumericFinding]:
    """The influence numbers of a diagnosis as the analyst reports them."""
    model = {"predictors": dg.predictors, "part": dg.part, "model": model_name,
             "nominal": dg.nominal}  # fmt: skip
    out = [NumericFinding(statistic=k, columns=[dg.target], value=v, **model)
           for k, v in dg.influence.items()]  # fmt: skip
    row = int(dg.influence["cooks_max_row"]) if dg.without_row else None
    for term, value in dg.without_row.items():
        stat, columns = ("intercept", [dg.target]) if term == "const" else (
            "slope", [dg.target, term])  # fmt: skip
        out.append(NumericFinding(statistic=stat, columns=columns, value=value,
                                  without_row=row, **model))  # fmt: skip
    for term, (coef, pvalue) in dg.without_influential.items():  # a logit's refit
        if term != "const":
            out += [NumericFinding(statistic=stat, columns=[dg.target, term], value=value,
                                   without_influential=True, **model)
                    for stat, value in (("slope", coef), ("pvalue", pvalue))]  # fmt: skip
    return out


def _all_verify(df: pd.DataFrame, dg: Diagnostics, model: str = "ols") -> None:
    found = _findings(dg, model)
    assert [verify(df, f).verdict for f in found] == ["verified"] * len(found)
    for f in found:  # a count or a row one off, a distance or a coefficient 5% off
        wrong = f.value + 1 if f.statistic in ("influential", "cooks_max_row") else (
            f.value * 1.05 + 0.01)  # fmt: skip
        assert verify(df, f.model_copy(update={"value": wrong})).verdict == "mismatch", f


def test_longley_has_one_influential_year_and_none_dominant() -> None:
    df = load_dataset("statsmodels:longley").frame
    dg = diagnose(df, "TOTEMP", ["GNP", "UNEMP", "ARMED"])
    cooks = _cooks(df["TOTEMP"], df[["GNP", "UNEMP", "ARMED"]])
    assert dg.influence == {"influential": 1.0, "cooks_max": pytest.approx(cooks.max(), rel=1e-12),
                            "cooks_max_row": 15.0}  # fmt: skip
    assert int(np.sum(cooks > 4 / 16)) == 1 and int(np.argmax(cooks)) == 15  # 1962
    assert dg.influence["cooks_max"] == pytest.approx(0.4402207, abs=1e-7)
    assert dg.cooks_max_label == "" and dg.without_row == {}  # D < 1: no refit
    _all_verify(df, dg)


def test_a_part_names_its_rows_by_their_place_in_the_whole_table() -> None:
    df = load_dataset("statsmodels:fair").frame
    dg = diagnose(df, "affairs", FAIR, part="positive")
    positive = df[df["affairs"] > 0]  # 2053 rows; statsmodels keeps their labels
    cooks = _cooks(positive["affairs"], positive[FAIR])
    assert dg.influence["influential"] == np.sum(cooks > 4 / 2053) == 49
    assert dg.influence["cooks_max"] == pytest.approx(cooks.max(), rel=1e-12)
    assert dg.influence["cooks_max_row"] == positive.index[np.argmax(cooks)] == 749
    _all_verify(df, dg)
    other = diagnose(df, "affairs", FAIR, ols=False, part="any")
    assert other.influence == {}  # neither OLS nor a logit (a count model, say): no D


def test_a_logits_influential_rows_match_statsmodels_glm_and_verify() -> None:
    df = load_dataset("statsmodels:fair").frame
    dg = diagnose(df, "affairs", FAIR, ols=False, logit=True, part="any")
    event = (df["affairs"] > 0).astype(float)
    glm = sm.GLM(event, sm.add_constant(df[FAIR]), family=sm.families.Binomial()).fit()
    cooks = np.asarray(glm.get_influence().cooks_distance[0])
    assert dg.influence == {"influential": float(np.sum(cooks > 4 / 6366)),
                            "cooks_max": pytest.approx(cooks.max(), rel=1e-9),
                            "cooks_max_row": float(np.argmax(cooks))}  # fmt: skip
    kept = ~(cooks > 4 / 6366)
    ref = sm.Logit(event[kept], sm.add_constant(df[FAIR])[kept]).fit(disp=0)
    assert {t: b for t, (b, _) in dg.without_influential.items()} == pytest.approx(
        dict(ref.params), rel=1e-6)  # fmt: skip
    assert {t: p for t, (_, p) in dg.without_influential.items()} == pytest.approx(
        dict(ref.pvalues), rel=1e-5)  # fmt: skip
    assert dg.refit_failed == "" and dg.without_row == {}
    _all_verify(df, dg, "logit")


def test_a_logit_refit_drops_the_rows_of_a_level_left_with_one_outcome() -> None:
    df = load_dataset("statsmodels:fair").frame
    chosen = ["rate_marriage", "occupation"]
    dg = diagnose(df, "affairs", chosen, ols=False, logit=True, nominal=["occupation"],
                  part="any")  # fmt: skip
    y, x = stats.design_matrix(stats.part_frame(df, "affairs", "any"), "affairs", chosen,
                               nominal=["occupation"])  # fmt: skip
    glm = sm.GLM(y, x, family=sm.families.Binomial()).fit()
    kept = np.asarray(glm.get_influence().cooks_distance[0]) <= 4 / len(y)
    assert dg.influence["influential"] == np.sum(~kept) == 181
    # the students left all share one outcome, so occupation=1 has no finite estimate
    assert y[kept & (x["occupation=1"] == 1).to_numpy()].nunique() == 1
    assert "occupation=1" not in dg.without_influential
    rows = kept & (x["occupation=1"] == 0).to_numpy()
    ref = sm.Logit(y[rows], x[rows].drop(columns="occupation=1")).fit(disp=0)
    assert {t: b for t, (b, _) in dg.without_influential.items()} == pytest.approx(
        dict(ref.params), rel=1e-6)  # fmt: skip
    _all_verify(df, dg, "logit")


def test_a_logit_that_rests_on_its_influential_rows_says_why_it_cannot_be_refitted() -> None:
    df = load_dataset("statsmodels:spector").frame
    dg = diagnose(df, "GRADE", ["GPA", "PSI", "TUCE"], ols=False, logit=True)
    assert dg.influence["influential"] == 5  # 32 rows: without 5, the rest separate
    assert dg.without_influential == {}
    assert "maximum-likelihood estimate does not exist" in dg.refit_failed
    _all_verify(df, dg, "logit")
    with pytest.raises(AnalysisError, match="OLS or a logit"):
        diagnose(df, "GRADE", ["GPA"], ols=True, logit=True)


def test_a_dominant_row_is_named_and_the_fit_run_again_without_it() -> None:
    df = load_dataset("statsmodels:statecrime").frame  # rows named by state
    dg = diagnose(df, "murder", STATECRIME)
    cooks = _cooks(df["murder"], df[STATECRIME])
    assert dg.influence["cooks_max"] == pytest.approx(cooks.max(), rel=1e-12)
    assert dg.influence["cooks_max"] == pytest.approx(4.448, abs=1e-3)  # D > 1
    assert dg.influence["cooks_max_row"] == 8 and dg.cooks_max_label == "District of Columbia"
    assert dg.influence["influential"] == np.sum(cooks > 4 / 51) == 4
    dropped = df.drop(index="District of Columbia")
    ref = sm.OLS(dropped["murder"], sm.add_constant(dropped[STATECRIME])).fit().params
    assert dg.without_row == pytest.approx(dict(ref), rel=1e-10)
    _all_verify(df, dg)


def test_the_fact_checkers_cooks_distances_match_statsmodels() -> None:
    df = load_dataset("statsmodels:fair").frame
    y, x, _ = design(df, "affairs", FAIR)
    assert cooks_distances(y, x) == pytest.approx(_cooks(df["affairs"], df[FAIR]), rel=1e-9)


def test_the_fact_checkers_logit_cooks_distances_match_statsmodels_glm() -> None:
    df = load_dataset("statsmodels:spector").frame
    preds = ["GPA", "PSI", "TUCE"]
    y, x, _ = design(df, "GRADE", preds)
    glm = sm.GLM(df["GRADE"], sm.add_constant(df[preds]), family=sm.families.Binomial()).fit()
    want = np.asarray(glm.get_influence().cooks_distance[0])
    assert logit_cooks_distances(y, x) == pytest.approx(want, rel=1e-7)


def test_rows_tied_for_the_largest_distance_are_named_by_the_first() -> None:
    # y = 2x + (x mod 3): rows 2 and 27 mirror each other, their distances equal but for
    # rounding, which statsmodels and the QR path round differently
    df = pd.DataFrame({"x": range(30), "y": [2.0 * i + (i % 3) for i in range(30)]})
    cooks = _cooks(df["y"], df[["x"]])
    assert cooks[2] == pytest.approx(cooks[27], rel=1e-12) and cooks[2] == pytest.approx(
        cooks.max(), rel=1e-12
    )
    dg = diagnose(df, "y", ["x"])
    assert dg.influence["cooks_max_row"] == 2
    _all_verify(df, dg)


@pytest.mark.parametrize(
    "fields",
    [
        {"statistic": "cooks_max", "columns": ["GRADE"], "model": "mnlogit"},
        {"statistic": "cooks_max", "columns": ["GRADE"], "model": "logit_l2"},
        {"statistic": "slope", "columns": ["GRADE", "GPA"], "without_influential": True},
        {"statistic": "vif", "columns": ["GRADE", "GPA"], "model": "logit",
         "without_influential": True},
        {"statistic": "slope", "columns": ["GRADE", "GPA"], "model": "logit", "without_row": 3},
        {"statistic": "se", "columns": ["GRADE", "GPA"], "without_row": 3},
        {"statistic": "slope", "columns": ["GRADE", "GPA"], "without_row": -1},
    ],
)
def test_influence_findings_belong_to_ols_fits_and_logits(fields: dict) -> None:
    with pytest.raises(ValidationError):
        NumericFinding(value=1.0, predictors=["GPA"], **fields)
