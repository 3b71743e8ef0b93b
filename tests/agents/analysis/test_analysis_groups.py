"""Questions that ask for a grouped comparison, end to end offline: matched to columns,
answered with group statistics and tests the fact-checker recomputes, read in words; and
questions that do not apply to some datasets of a run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kimmy_swarm.agents.analysis import AnalysisConfig, AnalysisOutcome, run_analysis
from kimmy_swarm.agents.tools.datasets import load_dataset
from kimmy_swarm.agents.tools.finding import INTEGER_STATISTICS, NumericFinding
from kimmy_swarm.agents.tools.recompute import verify

SEPALS = "Which species has the longest sepals?"
BMI = "Does bmi differ by sex?"


def _records(outcome: AnalysisOutcome) -> list[dict[str, Any]]:
    return [json.loads(x) for x in outcome.paths["findings.jsonl"].read_text().splitlines()]


def _finding(r: dict[str, Any]) -> NumericFinding:
    keys = ("statistic", "columns", "value", "predictors", "method", "group", "note")
    return NumericFinding.model_validate({k: r[k] for k in keys})


@pytest.fixture(scope="module")
def iris(tmp_path_factory: pytest.TempPathFactory) -> AnalysisOutcome:
    out = tmp_path_factory.mktemp("iris")
    return run_analysis(AnalysisConfig(["sklearn:iris"], out=out, questions=[SEPALS]))


def test_iris_sepal_question_is_answered_with_the_species(iris: AnalysisOutcome) -> None:
    assert iris.status == "completed" and not iris.problems
    assert iris.verified == iris.findings and iris.mismatched == iris.unverifiable == 0
    groups = [r for r in _records(iris) if r["columns"] == ["sepal length (cm)", "target"]]
    means = {r["note"]: r["value"] for r in groups if r["statistic"] == "group_mean"}
    assert set(means) == {"setosa", "versicolor", "virginica"}
    assert max(means, key=means.__getitem__) == "virginica"
    stats = {r["statistic"] for r in groups}
    assert {"group_count", "group_median", "anova_f", "anova_pvalue", "kruskal_h"} <= stats
    assert "eta_squared" in stats and "welch_t" not in stats  # three groups: no t-test
    md = iris.paths["report.md"].read_text()
    assert "Answer: virginica has the highest mean sepal length (cm): 6.588 vs 5.936 " in md
    assert "| virginica (target = 2) | 50 ✔ | 6.588 ✔ | 6.5 ✔ |" in md
    assert "| one-way ANOVA | F = 119.265 ✔ |" in md
    assert "Question not answered" not in md
    html = iris.paths["report.html"].read_text()
    assert "virginica has the highest mean sepal length" in html


def test_group_findings_recompute_from_findings_jsonl(iris: AnalysisOutcome) -> None:
    df = load_dataset("sklearn:iris").frame
    grouped = [r for r in _records(iris) if r["statistic"].startswith(("group_", "anova", "kru"))]
    assert len(grouped) == 3 * 3 + 4
    for r in grouped:
        f = _finding(r)
        assert verify(df, f).verdict == r["verdict"] == "verified"
        wrong = f.value + 1 if f.statistic in INTEGER_STATISTICS else f.value * 1.1 + 1e-3
        assert verify(df, f.model_copy(update={"value": wrong})).verdict == "mismatch"


def test_the_grouped_comparison_is_read_in_words(iris: AnalysisOutcome) -> None:
    md = iris.paths["report.md"].read_text()
    section = md.split("### Grouped comparison")[1].split("\n### ")[0]
    [reading] = [x for x in section.splitlines() if x.startswith("Mean sepal length")]
    assert "highest for virginica (6.588)" in reading and "lowest for setosa" in reading
    assert "a significant difference at 5%" in reading and "62% of its variance" in reading
    html = iris.paths["report.html"].read_text()
    assert "Grouped comparison: Mean sepal length (cm) is highest for virginica" in html


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> AnalysisOutcome:
    out = tmp_path_factory.mktemp("mixed")
    config = AnalysisConfig(["sklearn:iris", "sklearn:diabetes"], out=out, questions=[SEPALS, BMI])
    return run_analysis(config)


def test_a_question_about_another_dataset_does_not_fail_the_run(mixed: AnalysisOutcome) -> None:
    assert mixed.analyses == 4
    assert mixed.status == "completed" and mixed.problems == []
    md = mixed.paths["report.md"].read_text()
    diabetes = md.split(f"## sklearn:diabetes — {SEPALS}")[1].split("\n## ")[0]
    assert "Not applicable: the question does not apply to sklearn:diabetes" in diabetes
    assert "but does of sklearn:iris" in diabetes
    iris = md.split(f"## sklearn:iris — {BMI}")[1].split("\n## ")[0]
    assert "Not applicable" in iris and "but does of sklearn:diabetes" in iris


def test_two_groups_get_a_welch_test(mixed: AnalysisOutcome) -> None:
    df = load_dataset("sklearn:diabetes").frame
    bmi = [
        r for r in _records(mixed) if r["dataset"] == "sklearn:diabetes" and r["question"] == BMI
    ]
    welch = [r for r in bmi if r["statistic"] in ("welch_t", "welch_pvalue")]
    assert len(welch) == 2 and all(verify(df, _finding(r)).verdict == "verified" for r in welch)
    md = mixed.paths["report.md"].read_text()
    section = md.split(f"## sklearn:diabetes — {BMI}")[1].split("\n## ")[0]
    assert "| Welch t-test (" in section and "Answer: " in section


def test_a_question_that_fits_no_dataset_is_still_unanswered(tmp_path: Path) -> None:
    question = "What is the effect of temperature?"
    outcome = run_analysis(
        AnalysisConfig(["sklearn:iris", "sklearn:wine"], out=tmp_path, questions=[question])
    )
    assert outcome.status == "partial" and len(outcome.problems) == 2
    assert all("names no numeric column" in p for p in outcome.problems)


def test_question_columns_tool_says_where_a_question_applies(tmp_path: Path) -> None:
    from kimmy_swarm.agents.analysis import AnalysisBoard, build_toolbox

    specs = ("sklearn:iris", "sklearn:wine")
    board = AnalysisBoard({s: load_dataset(s) for s in specs}, out_dir=tmp_path)
    tools = build_toolbox(board)
    on_wine = tools.get_tool("question_columns")(dataset="sklearn:wine", question=SEPALS)
    assert (on_wine["target"], on_wine["named_numeric"]) == (None, [])
    assert on_wine["applies_to"] == ["sklearn:iris"]
    on_iris = tools.get_tool("question_columns")(dataset="sklearn:iris", question=SEPALS)
    assert on_iris["target"] == "sepal length (cm)" and on_iris["group"] == "target"
    assert on_iris["comparison"] == "highest" and on_iris["applies_to"] == []
    cmp = tools.get_tool("compare_groups")(dataset="sklearn:wine", value="alcohol", group="target")
    assert [g["label"] for g in cmp["groups"]] == ["class_0", "class_1", "class_2"]
    assert cmp["highest"] == "0" and cmp["welch"] is None
