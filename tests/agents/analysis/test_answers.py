"""Analyses that answer the question (issue 37), offline on the real bundled datasets: each
opens with its predictors ranked with their effect sizes, every number of the answer a
verified finding; the columns the model left out are named with why; collinearity advice
never names the target; and the text of the answer is what `kimmy analyze` prints."""

from __future__ import annotations

import json
import math
import re
from typing import Any

import pytest

from kimmy_swarm.agents.analysis import AnalysisConfig, AnalysisOutcome, run_analysis
from kimmy_swarm.agents.analysis.answers import (
    answer_text,
    left_out,
    left_out_text,
    ranked_predictors,
)

OUTCOME = "What predicts the outcome?"
DATASETS = [
    "statsmodels:fair", "statsmodels:spector", "sklearn:iris", "statsmodels:longley",
    "statsmodels:grunfeld", "sklearn:diabetes",
]  # fmt: skip
LONGLEY_QUESTIONS = [
    "What drives employment?", "Which factors drive GNP?", "How does GNP relate to TOTEMP?",
]  # fmt: skip


@pytest.fixture(scope="module")
def outcome(tmp_path_factory: pytest.TempPathFactory) -> AnalysisOutcome:
    out = tmp_path_factory.mktemp("answers")
    config = AnalysisConfig(DATASETS, out=out, runs_dir=out / "runs", questions=[OUTCOME])
    return run_analysis(config)


@pytest.fixture(scope="module")
def longley(tmp_path_factory: pytest.TempPathFactory) -> AnalysisOutcome:
    out = tmp_path_factory.mktemp("longley")
    config = AnalysisConfig(
        ["statsmodels:longley"], out=out, runs_dir=out / "runs", questions=LONGLEY_QUESTIONS
    )
    return run_analysis(config)


def _answer(outcome: AnalysisOutcome, dataset: str, question: str = OUTCOME) -> str:
    [answer] = [a for d, q, a in outcome.answers if (d, q) == (dataset, question)]
    return answer


def _section(outcome: AnalysisOutcome, dataset: str, question: str = OUTCOME) -> str:
    md = outcome.paths["report.md"].read_text()
    return md.split(f"## {dataset} — {question}\n")[1].split("\n## ")[0]


def _records(outcome: AnalysisOutcome) -> list[dict[str, Any]]:
    lines = outcome.paths["findings.jsonl"].read_text().splitlines()
    return [json.loads(x) for x in lines]


def test_fair_ranks_each_part_by_the_effect_per_sd(outcome: AnalysisOutcome) -> None:
    answer = _answer(outcome, "statsmodels:fair")
    # religious (p = 0.0012) before rate_marriage (p = 0.0011): per SD it moves the amount more
    assert answer.startswith(
        "Whether affairs > 0: yrs_married predicts it most (+0.786 log-odds of affairs > 0 per "
        "SD, +0.108 per unit, p < 0.001), then rate_marriage (-0.683 per SD, -0.71 per unit, "
        "p < 0.001), then age (-0.42 per SD, -0.0613 per unit, p < 0.001), then religious "
        "(-0.33 per SD, -0.375 per unit, p < 0.001), and occupation (a smaller effect: see "
        "the model's table); "
        "occupation_husb (p = 0.22), children (p = 0.63) and educ (p = 0.92) are not "
        "significant at 0.05. The amount where affairs > 0: yrs_married predicts it most "
        "(-1.19 per SD, -0.166 per unit, p < 0.001), then religious (-0.25 per SD, -0.297 per "
        "unit, p = 0.0012), then rate_marriage (-0.23 per SD, -0.216 per unit, p = 0.0011), "
        "then children (-0.192 per SD, -0.136 per unit, p = 0.015); "
    ), answer
    assert (
        "are not significant at 0.05. The predictors are ranked by their effect per standard "
        "deviation (SD), which unlike the effect per unit does not depend on each predictor's "
        "scale. Two-part model of affairs on rate_marriage, religious, age, yrs_married, "
        "children, occupation, occupation_husb, educ (whether affairs > 0: "
    ) in answer
    assert "left out of the model" not in answer  # 6366 rows support all eight


def test_spector_names_its_predictors_ranked_with_effect_and_p(outcome: AnalysisOutcome) -> None:
    assert _answer(outcome, "statsmodels:spector") == (
        "GPA predicts GRADE most (+1.32 log-odds of GRADE = 1 per SD, +2.83 per unit, "
        "p = 0.025), then PSI (+1.2 per SD, +2.38 per unit, p = 0.025); TUCE (p = 0.5) is not "
        "significant at 0.05. The predictors are ranked by their effect per standard "
        "deviation (SD), which unlike the effect per unit does not depend on each predictor's "
        "scale. Logistic regression of GRADE on GPA, PSI, TUCE: McFadden pseudo-R² = 0.374, "
        "accuracy 0.812 in sample and 0.781 in 5-fold cross-validation (n = 32). The question "
        "asks about the outcome in general terms: read as GRADE, the dataset's designated "
        "target; 32 rows, 4 columns."
    )


def test_iris_ranks_penalised_coefficients_with_bootstrap_intervals(
    outcome: AnalysisOutcome,
) -> None:
    answer = _answer(outcome, "sklearn:iris")
    assert answer.startswith(
        "petal width (cm) predicts target most (+2.64 per standard deviation for class 2 "
        "(virginica), bootstrap interval 2.38 to 2.87), then petal length (cm) (+2.29 per "
        "standard deviation for class 2 (virginica), bootstrap interval 1.91 to 2.59), then "
        "sepal width (cm) (+1.16 per standard deviation for class 0 (setosa), bootstrap "
        "interval 0.918 to 1.43), then sepal length (cm) (-1.07 per standard deviation for "
        "class 0 (setosa), bootstrap interval -1.23 to -0.926); the coefficients are "
        "penalised and on standardised predictors: they rank the predictors but have no "
        "p-values; the intervals are 95% bootstrap percentile intervals over 200 resamples of "
        "the rows (seeded, so a run reproduces them). L2-penalised multinomial logit of "
        "target on "
    ), answer
    bounds = {
        (r["statistic"], r["columns"][1], r["level"]) for r in _records(outcome)
        if r["dataset"] == "sklearn:iris" and r["statistic"] in ("ci_low", "ci_high")
    }  # fmt: skip
    assert ("ci_low", "petal width (cm)", "2") in bounds and len(bounds) == 2 * 12


def test_longley_answers_each_question_and_names_the_near_duplicates(
    outcome: AnalysisOutcome, longley: AnalysisOutcome
) -> None:
    ranked = (
        "GNP predicts TOTEMP most (+4.05e+03 per SD, +0.0408 per unit, p < 0.001), then UNEMP "
        "(-745 per SD, -0.797 per unit, p = 0.0029); ARMED (p = 0.083) is not significant at "
        "0.05. The predictors are ranked by their effect per standard deviation (SD), which "
        "unlike the effect per unit does not depend on each predictor's scale. OLS of TOTEMP "
        "on GNP, UNEMP, ARMED: R² = 0.985 (n = 16); left out of the model: GNPDEFL, POP and "
        "YEAR (near-duplicates of GNP, r = 0.992, 0.991 and 0.995)."
    )
    assert _answer(outcome, "statsmodels:longley").startswith(ranked)
    assert _answer(longley, "statsmodels:longley", "What drives employment?") == (
        f"{ranked} 'employment' read as TOTEMP (Total Employment, from the dataset's "
        "description); 16 rows, 7 columns."
    )
    # TOTEMP (p = 0.033) before UNEMP (p < 0.001): one SD of it moves GNP more
    assert _answer(longley, "statsmodels:longley", "Which factors drive GNP?") == (
        "YEAR predicts GNP most (+1.5e+05 per SD, +3.15e+04 per unit, p < 0.001), then TOTEMP "
        "(-3.07e+04 per SD, -8.74 per unit, p = 0.033), then UNEMP (-2.64e+04 per SD, -28.2 per "
        "unit, p < 0.001), then ARMED (-8.89e+03 per SD, -12.8 per unit, p = 0.0044). The "
        "predictors are ranked by their effect per standard deviation (SD), which unlike the "
        "effect per unit does not depend on each predictor's scale. OLS of GNP on YEAR, TOTEMP, "
        "UNEMP, ARMED: R² = 0.999 (n = 16); left out of the model: GNPDEFL and POP "
        "(near-duplicates of YEAR, r = 0.991 and 0.994). 16 rows, 7 columns."
    )


def test_the_answer_drops_the_strongest_correlation_the_body_keeps_it(
    outcome: AnalysisOutcome,
) -> None:
    for dataset in DATASETS:
        assert "strongest correlation" not in _answer(outcome, dataset), dataset
        assert "The strongest correlation is" in _section(outcome, dataset), dataset


#: A number the answer states: a signed effect, or after "p = ", "r = ", "R² = ", "n = " …
_STATED = re.compile(
    r"(?:(?<=[( ])[+-]|p = |r = |R² = |accuracy |n = |, |and )(\d[\d.]*(?:e[+-]\d+)?)"
)


def _stated(answer: str) -> list[tuple[float, float]]:
    """Each stated number with the relative rounding it may carry: p-values are given to 2
    significant digits, the rest to 3 (R² and the like to 3 decimals)."""
    out = []
    for m in _STATED.finditer(answer):
        sign = -1.0 if answer[m.start()] == "-" else 1.0
        rounding = 5e-2 if answer.startswith("p = ", m.start()) else 5e-3
        out.append((sign * float(m.group(1)), rounding))
    return out


@pytest.mark.parametrize("which", ["outcome", "longley"])
def test_every_number_of_an_answer_is_a_verified_finding(
    which: str, request: pytest.FixtureRequest
) -> None:
    run: AnalysisOutcome = request.getfixturevalue(which)
    assert run.mismatched == run.unverifiable == 0 and run.verified == run.findings
    records = _records(run)
    for dataset, question, answer in run.answers:
        values = [
            r["value"] for r in records if (r["dataset"], r["question"]) == (dataset, question)
        ]
        stated = _stated(answer.split(" rows, ")[0])  # the shape's counts are no findings
        assert stated, answer
        for x, rel in stated:
            assert any(math.isclose(x, v, rel_tol=rel, abs_tol=5e-4) for v in values), (x, answer)


def test_left_out_columns_are_named_with_why(
    outcome: AnalysisOutcome, longley: AnalysisOutcome
) -> None:
    assert "; left out of the model: firm (not numeric). The question" in _answer(
        outcome, "statsmodels:grunfeld"
    )
    diabetes = _answer(outcome, "sklearn:diabetes")  # 442 rows support all ten
    assert "left out of the model" not in diabetes and "on bmi, s5, bp, s4, s3, s6, s1, age, " \
        "s2, sex: " in diabetes  # fmt: skip
    named = _answer(longley, "statsmodels:longley", "How does GNP relate to TOTEMP?")
    assert "left out of the model: GNPDEFL, UNEMP, ARMED, POP and YEAR (not named in the " \
        "question)." in named  # fmt: skip


def _fit(family: str, coefficients: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    """A `fit_model` answer of `family` on x1, x2 (what the reading needs of it)."""
    return {"target": "y", "family": family, "predictors": ["x1", "x2"], "classes": ["0", "1"],
            "class_labels": [], "part": "", "coefficients": coefficients, **fields}  # fmt: skip


def _coef(term: str, coef: float, pvalue: float, per_sd: float) -> dict[str, Any]:
    return {"term": term, "level": "", "coef": coef, "se": 0.1, "pvalue": pvalue,
            "per_sd": per_sd}  # fmt: skip


def test_predictors_rank_by_their_effect_per_sd_not_their_evidence() -> None:
    # x1: the smaller p, a small effect per SD; x2: a larger p, the larger effect per SD
    fit = _fit("logit", [_coef("x1", 0.05, 1e-9, 0.4), _coef("x2", 3.0, 0.01, 0.9)])
    assert [r.predictor for r in ranked_predictors(fit)] == ["x2", "x1"]
    assert answer_text(fit) == (
        "x2 predicts y most (+0.9 log-odds of y = 1 per SD, +3 per unit, p = 0.01), then x1 "
        "(+0.4 per SD, +0.05 per unit, p < 0.001). The predictors are ranked by their effect "
        "per standard deviation (SD), which unlike the effect per unit does not depend on each "
        "predictor's scale"
    )
    weak = _fit("ols", [_coef("x1", 0.05, 0.5, 0.4), _coef("x2", 3.0, 0.01, 0.1)])
    assert [r.predictor for r in ranked_predictors(weak)] == ["x2", "x1"]  # significant first
    assert "ranked by" not in answer_text(weak)  # one significant predictor: no ranking


@pytest.mark.parametrize(
    ("family", "fields", "why"),
    [
        ("mnlogit_l2", {}, "the model's size follows the data: one parameter per 10 rows of the "
         "rarest class of y, at least 5 parameters, a nominal predictor costing its levels - 1; "
         "it takes those most associated with y by |r| first"),
        ("two_part", {}, "one parameter per 10 rows of the rarer of y > 0 and y = 0, and per 15 "
         "rows where y > 0, at least 5 parameters"),
        ("ols", {}, "one parameter per 15 rows, at least 5"),
        ("ols", {"max_predictors": 2}, "the model takes at most 2 predictors, those most "
         "associated with y by |r|"),
    ],
)  # fmt: skip
def test_left_out_for_the_models_size_says_the_rule(
    family: str, fields: dict[str, Any], why: str
) -> None:
    fit = _fit(family, [], limited=["x3", "x4"], **fields)
    prof = {"column_names": ["y", "x1", "x2", "x3", "x4"],
            "numeric_columns": ["y", "x1", "x2", "x3", "x4"]}  # fmt: skip
    described = {c: {"count": 100, "std": 1.0} for c in ("x3", "x4")}
    out = left_out(prof, fit, described, named=[])
    assert [x.column for x in out] == ["x3", "x4"]
    text = left_out_text(out)
    assert text.startswith("x3 and x4 (") and why in text, text


def test_collinearity_advice_never_names_the_target(
    outcome: AnalysisOutcome, longley: AnalysisOutcome
) -> None:
    iris = _section(outcome, "sklearn:iris")
    assert (
        "nearly collinear (|r| > 0.9): petal length (cm) ~ petal width (cm) (r = 0.963), so "
        "those columns carry nearly the same information: a model with both cannot tell their "
        "separate effects apart"
    ) in iris  # petal width (cm) ~ target (eta 0.964, a class label) is no collinearity
    fitted = {
        (r["dataset"], r["question"], r["columns"][0])
        for run in (outcome, longley) for r in _records(run) if r["statistic"] == "nobs"
    }  # fmt: skip
    assert {"sklearn:iris", "statsmodels:longley"} <= {d for d, _, _ in fitted}
    for dataset, question, target in fitted:
        run = longley if question in LONGLEY_QUESTIONS else outcome
        named = (f"{target} ~", f"~ {target} (", f": {target} (", f", {target} (",
                 f"duplicates {target},")  # fmt: skip
        advice = re.findall(
            r"(?:nearly collinear|VIF above|near-duplicates).*?(?=\.\s|\.$|$)",
            _section(run, dataset, question), flags=re.M,
        )  # fmt: skip
        assert not [a for a in advice if any(n in a for n in named)], (dataset, question)
