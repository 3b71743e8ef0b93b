"""The batch analysis fits the model the target calls for, diagnoses it, reads it in words,
and the fact-checker verifies every new number — end to end on real bundled datasets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kimmy_swarm.agents.analysis import AnalysisConfig, AnalysisOutcome, run_analysis
from kimmy_swarm.agents.analysis.board import AnalysisBoard
from kimmy_swarm.agents.analysis.tools import build_toolbox
from kimmy_swarm.agents.tools.datasets import load_dataset
from kimmy_swarm.agents.tools.finding import NumericFinding

DATASETS = [
    "statsmodels:spector", "statsmodels:longley", "sklearn:iris", "statsmodels:cpunish",
    "statsmodels:fair",
]  # fmt: skip
SECTIONS = ("Profile", "Distributions", "Correlations", "Model", "Diagnostics")


@pytest.fixture(scope="module")
def batch(tmp_path_factory: pytest.TempPathFactory) -> AnalysisOutcome:
    out = tmp_path_factory.mktemp("models")
    return run_analysis(AnalysisConfig(DATASETS, out=out, runs_dir=out / "runs"))


def _section(md: str, dataset: str) -> str:
    return md.split(f"## {dataset} — profile and model the data")[1].split("\n## ")[0]


def _records(batch: AnalysisOutcome, dataset: str) -> list[dict[str, Any]]:
    lines = batch.paths["findings.jsonl"].read_text().splitlines()
    return [r for r in map(json.loads, lines) if r["dataset"] == dataset]


def test_each_target_gets_the_family_a_statistician_would_fit(batch: AnalysisOutcome) -> None:
    want = {
        "statsmodels:spector": {"logit"},
        "statsmodels:longley": {"ols"},
        "sklearn:iris": {"mnlogit_l2"},  # separated classes: penalised, and said so
        "statsmodels:cpunish": {"negbin", "poisson"},  # NB2, and the Poisson dispersion
        "statsmodels:fair": {"logit", "ols"},  # 68% zeros: a two-part model
    }
    for dataset, families in want.items():
        fitted = {r["model"] for r in _records(batch, dataset) if r["predictors"] is not None}
        assert fitted == families, dataset
    md = batch.paths["report.md"].read_text()
    assert "| statsmodels:spector | profile and model the data | 32 | GRADE | logistic" in md


def test_every_new_number_is_verified(batch: AnalysisOutcome) -> None:
    assert batch.verified == batch.findings and batch.mismatched == batch.unverifiable == 0
    stats = {r["statistic"] for d in DATASETS for r in _records(batch, d)}
    assert {"pseudo_r2", "accuracy", "aic", "llf", "alpha", "dispersion", "jb", "jb_pvalue",
            "bp", "bp_pvalue", "vif", "cond_number", "cv_accuracy", "cv_auc",
            "level_count", "influential", "cooks_max", "cooks_max_row"} <= stats  # fmt: skip


def test_each_section_has_a_reading_in_words(batch: AnalysisOutcome) -> None:
    md = batch.paths["report.md"].read_text()
    for dataset in DATASETS:
        part = _section(md, dataset)
        heads = [line[4:] for line in part.splitlines() if line.startswith("### ")]
        assert heads[: len(SECTIONS)] == list(SECTIONS), dataset
        for title in SECTIONS:  # the reading is the first paragraph under the heading
            reading = part.split(f"### {title}\n\n")[1].split("\n")[0]
            assert reading and not reading.startswith(("*", "|")), (dataset, title)
    spector = _section(md, "statsmodels:spector")
    assert "GRADE has 2 values (0, 1): logistic regression" in spector
    assert "McFadden pseudo-R² = 0.374" in spector and "PSI raises the odds" in spector
    fair = _section(md, "statsmodels:fair")
    assert "Breusch–Pagan p < 0.001: the residual variance is not constant" in fair
    html = batch.paths["report.html"].read_text()
    assert "Diagnostics: Whether affairs &gt; 0: 232 rows are influential" in html  # per part
    assert "The amount where affairs &gt; 0: Breusch–Pagan p &lt; 0.001" in html


def test_longleys_near_duplicate_predictors_are_reported(batch: AnalysisOutcome) -> None:
    part = _section(batch.paths["report.md"].read_text(), "statsmodels:longley")
    for dropped in ("YEAR", "GNPDEFL", "POP"):
        assert f"{dropped} was left out of the model of TOTEMP" in part
        assert f"{dropped} (duplicates GNP, r = 0.99" in part
        assert f"| {dropped} left out: r with GNP | 0.99" in part  # in the diagnostics table
    pairs = {tuple(r["columns"]) for r in _records(batch, "statsmodels:longley")
             if r["statistic"] == "corr"}  # fmt: skip
    assert {("YEAR", "GNP"), ("GNPDEFL", "GNP"), ("POP", "GNP")} <= pairs  # checked numbers


def test_separation_and_overdispersion_are_said(batch: AnalysisOutcome) -> None:
    md = batch.paths["report.md"].read_text()
    iris = _section(md, "sklearn:iris")
    assert "does not exist" in iris and "L2 penalty" in iris
    assert "| petal width (cm) | 2 (virginica) |" in iris  # classes named by the source
    cpunish = _section(md, "statsmodels:cpunish")
    assert "overdispersed (Pearson chi²/df = 3.78 > 1.5), so negative binomial" in cpunish
    assert "| Poisson dispersion (Pearson χ²/df) | 3.7814 ✔ |" in cpunish


def test_the_fact_checkers_tool_verifies_a_fit_measure_and_flags_a_tampered_one(
    tmp_path: Path,
) -> None:
    ds = load_dataset("statsmodels:spector")
    tools = build_toolbox(AnalysisBoard({"spector": ds}, out_dir=tmp_path))
    fit = tools.get_tool("fit_model")(dataset="spector", target="GRADE")
    finding = NumericFinding(statistic="pseudo_r2", columns=["GRADE"],
                             value=fit["measures"]["pseudo_r2"], predictors=fit["predictors"],
                             model=fit["family"])  # fmt: skip
    check = tools.get_tool("verify_finding")
    assert check(dataset="spector", finding=finding)["verdict"] == "verified"
    wrong = finding.model_copy(update={"value": 0.5})
    verdict = check(dataset="spector", finding=wrong)
    assert verdict["verdict"] == "mismatch"
    assert verdict["recomputed"] == pytest.approx(fit["measures"]["pseudo_r2"], rel=1e-9)


def test_class_codes_are_not_used_as_a_numeric_predictor(tmp_path: Path) -> None:
    ds = load_dataset("sklearn:iris")  # its target codes 0/1/2 are species, not a quantity
    tools = build_toolbox(AnalysisBoard({"iris": ds}, out_dir=tmp_path))
    fit = tools.get_tool("fit_model")(dataset="iris", target="sepal length (cm)")
    assert fit["family"] == "ols" and "target" not in fit["predictors"]
    assert len(fit["predictors"]) == 3  # every other numeric column


def test_fairs_coded_columns_are_counted_not_averaged(batch: AnalysisOutcome) -> None:
    recs = _records(batch, "statsmodels:fair")
    averaged = {r["columns"][0] for r in recs if r["statistic"] in ("mean", "skew")}
    assert averaged == {"affairs", "age", "yrs_married", "children"}
    counted = {(r["columns"][0], r["level"]): r["value"] for r in recs
               if r["statistic"] == "level_count"}  # fmt: skip
    assert counted[("rate_marriage", "1")] == 99 and counted[("occupation", "3")] == 2783
    assert counted[("affairs", "0")] == 4313  # the zeros of the zero-heavy target
    with_outliers = {r["columns"][0] for r in recs if r["statistic"] == "outliers"}
    assert with_outliers == {"age", "yrs_married", "children"}  # no 447 ratings, 1049 affairs
    part = _section(batch.paths["report.md"].read_text(), "statsmodels:fair")
    assert "| occupation | 3 | white-collar | 2783 ✔ |" in part
    assert "affairs is 0 in 4313 of 6366 rows (67.8%): zero-heavy" in part
    assert "rate_marriage (1 = very poor … 5 = very good)" in part
    assert "occupation, occupation_husb: nominal codes" in part


def test_fairs_zeros_get_two_parts_and_robust_errors(batch: AnalysisOutcome) -> None:
    recs = _records(batch, "statsmodels:fair")
    parts = {(r["part"], r["model"]) for r in recs if r["predictors"] is not None}
    assert parts == {("any", "logit"), ("positive", "ols")}
    robust = {r["cov_type"] for r in recs if r["statistic"] in ("se", "pvalue")}
    assert robust == {"nonrobust", "HC3"}  # the logit's Wald errors; the OLS part's HC3
    assert all(r["cov_type"] == "HC3" for r in recs
               if r["statistic"] == "se" and r["part"] == "positive")  # fmt: skip
    part = _section(batch.paths["report.md"].read_text(), "statsmodels:fair")
    assert "68% of affairs are 0 (at least 50%): modelled in two parts" in part
    assert "each unit of age lowers the odds of affairs > 0" in part
    assert "*The amount where affairs > 0 (OLS): affairs ~ const + " in part
    assert (
        "(HC3 robust standard errors: Breusch–Pagan rejects constant variance) (occupation, "
        "occupation_husb: dummies against the most frequent level)*"
    ) in part
    assert "so HC3 robust standard errors are reported" in part


def test_a_binary_logit_reports_its_cross_validation(batch: AnalysisOutcome) -> None:
    cv = {r["statistic"]: r["value"] for r in _records(batch, "statsmodels:spector")
          if r["statistic"].startswith("cv_")}  # fmt: skip
    assert cv["cv_accuracy"] == 25 / 32 and cv["cv_auc"] == pytest.approx(0.7402597)
    part = _section(batch.paths["report.md"].read_text(), "statsmodels:spector")
    assert "| accuracy (in-sample) | accuracy (5-fold CV) | AUC (5-fold CV) |" in part
    assert (
        "Fit (logistic regression) in sample, on the 32 rows it was fitted on: McFadden "
        "pseudo-R² = 0.374, 81.2% of the rows classified correctly, AIC = 33.8; out of sample, "
        "78.1% classified correctly (5-fold cross-validation; AUC 0.74)."
    ) in part


def test_a_multinomial_logit_reports_its_cross_validation(batch: AnalysisOutcome) -> None:
    recs = {r["statistic"]: r for r in _records(batch, "sklearn:iris")
            if r["statistic"] in ("accuracy", "cv_accuracy")}  # fmt: skip
    assert recs["cv_accuracy"]["model"] == "mnlogit_l2"  # refitted penalised, as reported
    assert recs["cv_accuracy"]["value"] == 145 / 150 and recs["accuracy"]["value"] == 146 / 150
    assert {r["verdict"] for r in recs.values()} == {"verified"}
    part = _section(batch.paths["report.md"].read_text(), "sklearn:iris")
    assert (
        "Fit (L2-penalised multinomial logit) in sample, on the 150 rows it was fitted on: "
        "McFadden pseudo-R² = 0.882, 97.3% of the rows classified correctly; out of sample, "
        "96.7% classified correctly (5-fold cross-validation)."
    ) in part
    assert "| McFadden pseudo-R² | accuracy (in-sample) | accuracy (5-fold CV) |" in part
    assert "| 0.882086 ✔ | 0.973333 ✔ | 0.966667 ✔ |" in part


def test_influential_rows_are_counted_named_and_checked(batch: AnalysisOutcome) -> None:
    influence = ("influential", "cooks_max", "cooks_max_row")
    longley = {r["statistic"]: r for r in _records(batch, "statsmodels:longley")
               if r["statistic"] in influence}  # fmt: skip
    # the values of statsmodels' get_influence(): tests/agents/tools/test_influence.py
    assert {k: r["value"] for k, r in longley.items()} == {
        "influential": 1, "cooks_max": pytest.approx(0.4402207, abs=1e-7), "cooks_max_row": 15,
    }  # fmt: skip
    assert {r["verdict"] for r in longley.values()} == {"verified"}
    md = batch.paths["report.md"].read_text()
    assert (
        "1 row is influential (Cook's distance > 4/n, n = 16): row 15 (rows counted from 0), "
        "D = 0.44; none has D > 1, so no single row dominates the fit and all are kept."
    ) in _section(md, "statsmodels:longley")
    assert "| largest Cook's distance | 0.440221 ✔ |  |" in md
    fair = [r for r in _records(batch, "statsmodels:fair") if r["statistic"] in influence]
    # both parts: the logit's (its GLM form) and the OLS amount's
    assert {(r["part"], r["model"], r["verdict"]) for r in fair} == {
        ("any", "logit", "verified"), ("positive", "ols", "verified"),
    }  # fmt: skip
    assert (
        "The amount where affairs > 0: Breusch–Pagan p < 0.001" in md
        and "62 rows are influential (Cook's distance > 4/n, n = 2053); the largest, row 960 "
        "(rows counted from 0), has D = 0.116"
        in _section(md, "statsmodels:fair")
    )


def test_a_dominant_row_is_dropped_in_a_second_fit(tmp_path: Path) -> None:
    out = run_analysis(AnalysisConfig(["statsmodels:statecrime"], out=tmp_path))
    assert out.verified == out.findings and out.mismatched == out.unverifiable == 0
    lines = (tmp_path / "findings.jsonl").read_text().splitlines()
    refit = [r for r in map(json.loads, lines) if r["without_row"] is not None]
    assert {r["without_row"] for r in refit} == {8}  # District of Columbia
    assert {r["statistic"] for r in refit} == {"intercept", "slope"}
    md = (tmp_path / "report.md").read_text()
    assert "the largest, row 8 (District of Columbia; rows counted from 0), has D = 3.94" in md
    assert "The fit was also run without that row: hs_grad's coefficient goes from 0.21 to" in md
    assert "(its sign flips)" in md and "the reported fit keeps the row" in md
    assert "| coefficient of hs_grad without row 8 | -0.017919 ✔ |  |" in md


def test_a_nominal_predictor_enters_as_levels_named_as_such(tmp_path: Path) -> None:
    question = "Do occupation and rate_marriage predict affairs?"
    out = run_analysis(AnalysisConfig(["statsmodels:fair"], out=tmp_path, questions=[question]))
    md = (tmp_path / "report.md").read_text()
    assert "Level occupation=6 (against its reference level) raises affairs by" in md
    assert "Occupation=" not in md  # a sentence's capital never lands on a column's name
    assert out.mismatched == 0
