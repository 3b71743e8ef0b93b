"""The batch report's numbers, read as a statistician reads them (benchmarks/quality/
analysis.md), offline on fair, spector and iris: every number in the prose is a finding the
fact-checker recomputed (or a threshold of the method, said as such); nominal codes and a
class label never get a Pearson r; collinearity advice matches what the model does."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from kimmy_swarm.agents.analysis import AnalysisConfig, AnalysisOutcome, run_analysis
from kimmy_swarm.agents.tools.datasets import load_dataset
from kimmy_swarm.agents.tools.variables import column_types

OUTCOME = "What predicts the outcome?"
DATASETS = ["statsmodels:fair", "statsmodels:spector", "sklearn:iris"]

#: The method's thresholds and conventions, and the labels of codes, stated in the prose:
#: no statistic of the data, so nothing to recompute.
_CONVENTIONS = re.compile(
    r"[<>≤≥] ?[\d.]+%?"  # bounds: p < 0.001, |r| > 0.9, VIFs ≤ 10, D > 1, at least 50%
    r"|\d+(?:\.\d+)? IQR|\d+-fold|4/n|at most \d+|at least \d+%|C = [\d.]+"
    r"|at 0\.05|below 0\.05|rows counted from 0|\d+ = [^,…;)]+"  # codes: 1 = very poor
    r"|class \d+|= \d+ (?=per|\()|\d+ values \([\d, .]+\)"  # GRADE = 1, 2 values (0, 1)
    r"|\d+ columns?\b|\d+ column\(s\)|\d+ rows? and|\d+ rows,"  # the table's shape
    r"|\d+% bootstrap|\d+ resamples"  # a penalised fit's bootstrap: its level, its draws
    r"|per \d+ rows|at least \d+ parameters|levels - 1"  # the model's size: its rule
)
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?%?")


@pytest.fixture(scope="module")
def outcome(tmp_path_factory: pytest.TempPathFactory) -> AnalysisOutcome:
    out = tmp_path_factory.mktemp("numbers")
    config = AnalysisConfig(DATASETS, out=out, runs_dir=out / "runs", questions=[OUTCOME])
    return run_analysis(config)


def _records(outcome: AnalysisOutcome) -> list[dict[str, Any]]:
    lines = outcome.paths["findings.jsonl"].read_text().splitlines()
    return [json.loads(x) for x in lines]


def _section(outcome: AnalysisOutcome, dataset: str) -> str:
    md = outcome.paths["report.md"].read_text()
    return md.split(f"## {dataset} — {OUTCOME}\n")[1].split("\n## ")[0]


def _prose(section: str) -> list[str]:
    """The section's sentences: no table, caption, figure or fact-check tally."""
    skip = ("|", "*", "![", "#", "Fact-check:", "---", "Legend:")
    return [line for line in section.splitlines() if line and not line.startswith(skip)]


def _shown(token: str, values: list[float]) -> bool:
    """Whether `token` is one of `values` as the report writes it: rounded to its decimals
    or to 1–6 significant digits, its magnitude (a coefficient "lowers y by 0.168"), or a
    share written as a percent."""
    x = float(token.rstrip("%").lstrip("+"))
    decimals = len(token.rstrip("%").split(".")[1]) if "." in token and "e" not in token else 0
    for v in values:
        for cand in (v, abs(v), 100 * v):
            if abs(x - cand) <= 0.5 * 10.0**-decimals * (1 + 1e-9):
                return True
            if any(float(f"{cand:.{k}g}") == x for k in range(1, 7)):
                return True
    return False


def test_every_number_in_the_prose_is_a_recomputed_finding(outcome: AnalysisOutcome) -> None:
    assert outcome.verified == outcome.findings
    records = _records(outcome)
    for dataset in DATASETS:
        values = [r["value"] for r in records if r["dataset"] == dataset]
        loose = []
        for line in _prose(_section(outcome, dataset)):
            stripped = _CONVENTIONS.sub(" ", line)
            loose += [t for t in _NUMBER.findall(stripped) if not _shown(t, values)]
        assert not loose, (dataset, loose)


def test_odds_ratios_shares_and_distinct_values_are_findings(outcome: AnalysisOutcome) -> None:
    stats = {(r["dataset"], r["statistic"]) for r in _records(outcome)}
    assert ("statsmodels:spector", "odds_ratio") in stats
    assert {("statsmodels:fair", "level_share"), ("statsmodels:fair", "distinct")} <= stats
    assert "4/n = " not in _section(outcome, "statsmodels:fair")


def test_nominal_columns_get_eta_or_cramers_v_never_pearson(outcome: AnalysisOutcome) -> None:
    for dataset in DATASETS:
        ds = load_dataset(dataset)
        kinds = column_types(ds.frame, codes=ds.codes, labels=ds.labels,
                             descriptions=ds.descriptions, target=ds.target)  # fmt: skip
        nominal = {c for c, t in kinds.items() if t.kind == "nominal"}
        for r in _records(outcome):
            if r["dataset"] != dataset or r["statistic"] != "corr":
                continue
            named = set(r["columns"]) & nominal
            want = {0: {"pearson"}, 1: {"eta"}, 2: {"cramers_v"}}[len(named)]
            assert r["method"] in want, r
            if r["method"] == "eta":
                assert r["columns"][1] in nominal  # the value over the nominal's levels
    iris = _section(outcome, "sklearn:iris")
    assert "target | pearson" not in iris and "correlation ratio eta" in iris
    assert "occupation | pearson" not in _section(outcome, "statsmodels:fair")


def test_fair_models_every_column_its_nominal_codes_as_dummies(outcome: AnalysisOutcome) -> None:
    fair = _section(outcome, "statsmodels:fair")
    assert "left out of the model" not in fair  # 2053 rows with affairs support all eight
    for nominal in ("occupation", "occupation_husb"):
        assert f"- Note: {nominal} is nominal (" in fair
        assert f"it enters as 5 dummies ({nominal}=level)" in fair
    assert "| occupation=1 | -0.702679 ✔ |" in fair
    terms = {r["columns"][1] for r in _records(outcome)
             if r["dataset"] == "statsmodels:fair" and r["statistic"] == "slope"}  # fmt: skip
    assert "occupation=6" in terms and not terms & {"occupation", "occupation_husb"}


def test_a_logits_influential_rows_are_counted_and_acted_on(outcome: AnalysisOutcome) -> None:
    fair = _section(outcome, "statsmodels:fair")
    assert (
        "Whether affairs > 0: 232 rows are influential (Cook's distance > 4/n, n = 6366); the "
        "largest, row 621 (rows counted from 0), has D = 0.00991; none has D > 1, so no single "
        "row dominates the fit. Refitted without those 232 rows (and without the rows of "
        "occupation=1, left with one outcome: no finite estimate): every predictor significant "
        "at 0.05 keeps its sign and significance; among the others, occupation=6's "
        "coefficient changes sign (from 0.405 to -0.399); "
    ) in fair
    assert "| coefficient of rate_marriage without the influential rows | -0.890089 ✔ |" in fair
    spector = _section(outcome, "statsmodels:spector")
    assert (
        "5 rows are influential (Cook's distance > 4/n, n = 32); the largest, row 31 (rows "
        "counted from 0), has D = 0.343; none has D > 1, so no single row dominates the fit. A "
        "refit without those 5 rows fails: its maximum-likelihood estimate does not exist"
    ) in spector
    logit = {(r["dataset"], r["statistic"]) for r in _records(outcome) if r["model"] == "logit"}
    assert {("statsmodels:spector", "cooks_max"), ("statsmodels:fair", "influential")} <= logit


def test_the_penalised_coefficients_have_bootstrap_intervals(outcome: AnalysisOutcome) -> None:
    iris = _section(outcome, "sklearn:iris")
    assert "| petal width (cm) | 2 (virginica) | 2.63783 ✔ | 2.37768 ✔ | 2.87087 ✔ |" in iris
    assert (
        "the largest is petal width (cm) for class 2 (virginica) (2.64 per standard deviation, "
        "95% bootstrap interval 2.38 to 2.87)"
    ) in iris
    assert "95% bootstrap percentile intervals over 200 resamples of the rows (seeded" in iris


def test_collinearity_advice_matches_the_penalised_model(outcome: AnalysisOutcome) -> None:
    iris = _section(outcome, "sklearn:iris")
    assert "should not both enter one model" not in iris
    assert "its L2 penalty is what handles the collinearity" in iris
