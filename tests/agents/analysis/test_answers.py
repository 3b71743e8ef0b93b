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


def test_fair_answers_for_each_part_rate_marriage_first(outcome: AnalysisOutcome) -> None:
    answer = _answer(outcome, "statsmodels:fair")
    assert answer.startswith(
        "Whether affairs > 0: rate_marriage predicts it most (-0.711 log-odds of affairs > 0 "
        "per unit, p < 0.001), then religious (-0.373 per unit, p < 0.001), then yrs_married "
        "(+0.113 per unit, p < 0.001), then age (-0.0603 per unit, p < 0.001); children "
        "(p = 0.8) is not significant at 0.05. The amount where affairs > 0: yrs_married "
        "predicts it most (-0.168 per unit, "
    ), answer
    assert answer.endswith(
        "; left out of the model: educ, occupation and occupation_husb (the model takes at "
        "most 5 predictors, those most associated with affairs by |r|, or for the nominal "
        "occupation and occupation_husb by the correlation ratio eta). The question asks about "
        "the outcome in general terms: read as affairs, the dataset's designated target; 6366 "
        "rows, 9 columns."
    ), answer


def test_spector_names_its_predictors_ranked_with_effect_and_p(outcome: AnalysisOutcome) -> None:
    assert _answer(outcome, "statsmodels:spector") == (
        "GPA predicts GRADE most (+2.83 log-odds of GRADE = 1 per unit, p = 0.025), then PSI "
        "(+2.38 per unit, p = 0.025); TUCE (p = 0.5) is not significant at 0.05. Logistic "
        "regression of GRADE on GPA, PSI, TUCE: McFadden pseudo-R² = 0.374, accuracy 0.812 "
        "in sample and 0.781 in 5-fold cross-validation (n = 32). The question asks about the "
        "outcome in general terms: read as GRADE, the dataset's designated target; 32 rows, 4 "
        "columns."
    )


def test_iris_ranks_penalised_coefficients_naming_the_class(outcome: AnalysisOutcome) -> None:
    answer = _answer(outcome, "sklearn:iris")
    assert answer.startswith(
        "petal width (cm) predicts target most (+2.64 per standard deviation for class 2 "
        "(virginica)), then petal length (cm) (+2.29 per standard deviation for class 2 "
        "(virginica)), then sepal width (cm) (+1.16 per standard deviation for class 0 "
        "(setosa)), then sepal length (cm) (-1.07 per standard deviation for class 0 "
        "(setosa)); the coefficients are penalised and on standardised predictors: they rank "
        "the predictors but have no p-values. L2-penalised multinomial logit of target on "
    ), answer


def test_longley_answers_each_question_and_names_the_near_duplicates(
    outcome: AnalysisOutcome, longley: AnalysisOutcome
) -> None:
    ranked = (
        "GNP predicts TOTEMP most (+0.0408 per unit, p < 0.001), then UNEMP (-0.797 per unit, "
        "p = 0.0029); ARMED (p = 0.083) is not significant at 0.05. OLS of TOTEMP on GNP, "
        "UNEMP, ARMED: R² = 0.985 (n = 16); left out of the model: GNPDEFL, POP and YEAR "
        "(near-duplicates of GNP, r = 0.992, 0.991 and 0.995)."
    )
    assert _answer(outcome, "statsmodels:longley").startswith(ranked)
    assert _answer(longley, "statsmodels:longley", "What drives employment?") == (
        f"{ranked} 'employment' read as TOTEMP (Total Employment, from the dataset's "
        "description); 16 rows, 7 columns."
    )
    assert _answer(longley, "statsmodels:longley", "Which factors drive GNP?") == (
        "YEAR predicts GNP most (+3.15e+04 per unit, p < 0.001), then UNEMP (-28.2 per unit, "
        "p < 0.001), then ARMED (-12.8 per unit, p = 0.0044), then TOTEMP (-8.74 per unit, "
        "p = 0.033). OLS of GNP on YEAR, TOTEMP, UNEMP, ARMED: R² = 0.999 (n = 16); left out "
        "of the model: GNPDEFL and POP (near-duplicates of YEAR, r = 0.991 and 0.994). 16 rows, "
        "7 columns."
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
    diabetes = _answer(outcome, "sklearn:diabetes")
    why = "the model takes at most 5 predictors, those most associated with target by |r|"
    assert f"left out of the model: age, sex, s1, s2 and s6 ({why})." in diabetes
    assert f"- Note: left out of the model of target: age, sex, s1, s2 and s6 ({why})" in (
        _section(outcome, "sklearn:diabetes")
    )
    named = _answer(longley, "statsmodels:longley", "How does GNP relate to TOTEMP?")
    assert "left out of the model: GNPDEFL, UNEMP, ARMED, POP and YEAR (not named in the " \
        "question)." in named  # fmt: skip


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
