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
        "statsmodels:fair": {"ols"},
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
            "bp", "bp_pvalue", "vif", "cond_number"} <= stats  # fmt: skip


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
    assert "Diagnostics: Breusch–Pagan p &lt; 0.001" in html


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
