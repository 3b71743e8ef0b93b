"""`run_analysis` end to end, offline: many datasets in parallel, and bad input."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from kimmy_swarm.agents import analysis
from kimmy_swarm.agents.analysis import (
    AnalysisConfig,
    AnalysisOutcome,
    DatasetLoadError,
    run_analysis,
)
from kimmy_swarm.agents.tools.datasets import bundled_datasets, load_dataset
from kimmy_swarm.agents.tools.finding import NumericFinding
from kimmy_swarm.agents.tools.recompute import recompute, verify
from kimmy_swarm.swarm.errors import ConfigError

DATASETS = [
    "statsmodels:longley", "statsmodels:stackloss", "statsmodels:grunfeld",
    "statsmodels:copper", "statsmodels:cpunish", "statsmodels:statecrime",
    "statsmodels:spector", "statsmodels:co2", "sklearn:diabetes", "sklearn:iris",
    "sklearn:wine", "sklearn:linnerud",
]  # fmt: skip


@pytest.fixture(scope="module")
def batch(tmp_path_factory: pytest.TempPathFactory) -> AnalysisOutcome:
    out = tmp_path_factory.mktemp("batch")
    return run_analysis(AnalysisConfig(DATASETS, out=out, runs_dir=out / "runs"))


def test_batch_writes_the_three_artifacts(batch: AnalysisOutcome) -> None:
    assert set(batch.paths) == {"report.md", "report.html", "findings.jsonl"}
    assert all(p.is_file() and p.parent == batch.out_dir for p in batch.paths.values())
    md = batch.paths["report.md"].read_text()
    html = batch.paths["report.html"].read_text()
    for spec in DATASETS:
        assert f"| {spec} | profile and model the data |" in md
        assert f"{spec} — profile and model the data" in html
    assert batch.analyses == len(DATASETS)


def test_batch_runs_analysts_in_parallel_and_every_number_checks_out(
    batch: AnalysisOutcome,
) -> None:
    assert batch.peak_analysts >= 10
    assert batch.findings > 40 * len(DATASETS)
    assert batch.verified == batch.findings and batch.pass_rate == 1.0
    assert batch.mismatched == batch.unverifiable == 0
    # co2 has one numeric column: no model, reported as a partial analysis
    assert batch.status == "partial"
    assert any("statsmodels:co2" in p and "no numeric predictors" in p for p in batch.problems)


def test_findings_jsonl_lines_parse_and_recompute(batch: AnalysisOutcome) -> None:
    lines = batch.paths["findings.jsonl"].read_text().splitlines()
    assert len(lines) == batch.findings
    frames = {spec: load_dataset(spec).frame for spec in DATASETS}
    stats = set()
    for line in lines:
        rec = json.loads(line)
        finding = NumericFinding(
            statistic=rec["statistic"], columns=rec["columns"], value=rec["value"],
            predictors=rec["predictors"], method=rec["method"], model=rec["model"],
            level=rec["level"], part=rec["part"], cov_type=rec["cov_type"],
            nominal=rec["nominal"], without_row=rec["without_row"],
        )  # fmt: skip
        ref = recompute(frames[rec["dataset"]], finding)
        assert math.isclose(ref, rec["recomputed"], rel_tol=1e-9, abs_tol=1e-12)
        assert verify(frames[rec["dataset"]], finding).verdict == rec["verdict"] == "verified"
        stats.add(rec["statistic"])
    assert {"mean", "std", "corr", "slope", "se", "pvalue", "r2", "nobs", "outliers"} <= stats
    # the model a statistician would fit, and its diagnostics, are checked numbers too
    assert {"pseudo_r2", "accuracy", "aic", "llf", "alpha", "vif", "bp_pvalue"} <= stats


@pytest.fixture(scope="module")
def bad(tmp_path_factory: pytest.TempPathFactory) -> AnalysisOutcome:
    root = tmp_path_factory.mktemp("root")
    out = tmp_path_factory.mktemp("bad")
    (root / "names.csv").write_text("city,country\nParis,France\nLima,Peru\nOslo,\n")
    config = AnalysisConfig(
        ["statsmodels:longley", "names.csv"],
        out=out,
        root=root,
        questions=["What is the effect of temperature?", "How does GNP relate to TOTEMP?"],
    )
    return run_analysis(config)


def test_unknown_dataset_is_bad_input_and_nothing_runs(tmp_path: Path) -> None:
    out = tmp_path / "out"
    config = AnalysisConfig(["statsmodels:longley", "statsmodels:longly"], out=out)
    with pytest.raises(DatasetLoadError) as caught:
        run_analysis(config)
    message = str(caught.value)
    assert "'statsmodels:longly'" in message and "did you mean statsmodels:longley" in message
    assert all(name in message for name in bundled_datasets())
    assert "\n" not in message and set(caught.value.errors) == {"statsmodels:longly"}
    assert not out.exists()  # no empty reports


def test_path_outside_root_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    outside = tmp_path / "outside.csv"
    outside.write_text("a,b\n1,2\n3,4\n5,7\n")
    config = AnalysisConfig([str(outside)], out=tmp_path / "out", root=root)
    with pytest.raises(DatasetLoadError, match="outside the allowed root"):
        run_analysis(config)
    assert not (tmp_path / "out").exists()


def test_no_numeric_columns_gives_a_partial_report(bad: AnalysisOutcome) -> None:
    records = [json.loads(x) for x in bad.paths["findings.jsonl"].read_text().splitlines()]
    names = [r for r in records if r["dataset"] == "names.csv"]
    assert {r["statistic"] for r in names} == {"missing"}
    assert {(r["columns"][0], r["value"]) for r in names} == {("city", 0.0), ("country", 1.0)}
    assert all(r["verdict"] == "verified" for r in names)
    assert any("no numeric columns (columns: city, country)" in p for p in bad.problems)
    assert "no numeric columns (columns: city, country)" in bad.paths["report.md"].read_text()


def test_unanswerable_question_is_reported_with_the_profile(bad: AnalysisOutcome) -> None:
    md = bad.paths["report.md"].read_text()
    section = md.split("## statsmodels:longley — What is the effect of temperature?")[1]
    section = section.split("\n## ")[0]
    assert "Question not answered: the question names no numeric column" in section
    assert "| TOTEMP |" in section and "OLS:" not in section  # profile, no model
    answered = md.split("## statsmodels:longley — How does GNP relate to TOTEMP?")[1]
    assert "OLS: TOTEMP ~ const + GNP" in answered.split("\n## ")[0]
    assert bad.status == "partial" and bad.pass_rate == 1.0


def test_config_needs_a_dataset(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="at least one dataset"):
        AnalysisConfig([], out=tmp_path)


def test_csv_inside_root_is_analysed(tmp_path: Path) -> None:
    frame = pd.DataFrame({"x": range(30), "y": [2.0 * i + (i % 3) for i in range(30)]})
    frame.to_csv(tmp_path / "line.csv", index=False)
    outcome = run_analysis(AnalysisConfig(["line.csv"], out=tmp_path / "out", root=tmp_path))
    assert outcome.status == "completed" and outcome.pass_rate == 1.0
    records = [json.loads(x) for x in outcome.paths["findings.jsonl"].read_text().splitlines()]
    [slope] = [r for r in records if r["statistic"] == "slope"]
    assert slope["columns"] == ["y", "x"] and slope["value"] == pytest.approx(2.0, abs=0.01)


def test_missing_and_unknown_datasets_are_named_in_one_line(tmp_path: Path) -> None:
    config = AnalysisConfig(["statsmodels:nile2", "data.xlsx", "nope.csv"], out=tmp_path / "o")
    with pytest.raises(DatasetLoadError) as caught:
        run_analysis(config)
    message = str(caught.value)
    assert message.startswith("3 datasets could not be loaded, nothing was analysed: ")
    assert "'statsmodels:nile2'" in message and "unsupported file type '.xlsx'" in message
    assert "nope.csv' does not exist" in message and ".csv, .tsv or .parquet" in message
    assert not (tmp_path / "o").exists()


def test_public_api_is_pinned() -> None:
    assert set(analysis.__all__) == {
        "GENERAL_QUESTION", "AnalysisBoard", "AnalysisConfig", "AnalysisDigest", "AnalysisEntry",
        "AnalysisGrader", "AnalysisOutcome", "AnalysisPlan", "AnalysisTask", "DatasetAnalysis",
        "DatasetLoadError", "FindingChecks", "ReportPage", "ReportText", "analysis_digest",
        "analysis_roles", "build_toolbox", "resume_analysis", "run_analysis",
    }  # fmt: skip
