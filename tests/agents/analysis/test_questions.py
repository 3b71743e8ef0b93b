"""Questions matched to columns (`agents.analysis.questions`): names, words, synonyms, groups."""

from __future__ import annotations

import pandas as pd
import pytest

from kimmy_swarm.agents.analysis.questions import (
    QuestionColumns,
    asks_for_outcome,
    match_question,
    named_columns,
    question_words,
    stem,
)
from kimmy_swarm.agents.tools.datasets import Dataset, load_dataset


@pytest.fixture(scope="module")
def frames() -> dict[str, tuple[pd.DataFrame, str | None]]:
    specs = ("sklearn:iris", "sklearn:wine", "sklearn:diabetes", "statsmodels:longley")
    return {s: (ds.frame, ds.target) for s in specs for ds in [load_dataset(s)]}


@pytest.mark.parametrize(
    ("spec", "question", "values", "group", "comparison"),
    [
        # the example: "sepals" is a word of two columns, "longest" picks the length
        ("sklearn:iris", "Which species has the longest sepals?",
         ["sepal length (cm)"], "target", "highest"),
        ("sklearn:iris", "Do sepals differ by species?",
         ["sepal length (cm)", "sepal width (cm)"], "target", "differ"),
        ("sklearn:iris", "Which class has the narrowest petals?",
         ["petal width (cm)"], "target", "lowest"),
        ("sklearn:wine", "Which class has the most proline?", ["proline"], "target", "highest"),
        ("sklearn:wine", "Compare alcohol across the cultivars", ["alcohol"], "target", "differ"),
        ("sklearn:diabetes", "Does bmi differ by sex?", ["bmi"], "sex", "differ"),
        ("sklearn:iris", "How does petal width relate to petal length?",
         ["petal length (cm)", "petal width (cm)"], None, None),
        ("statsmodels:longley", "How does GNP relate to TOTEMP?", ["GNP", "TOTEMP"], None, None),
    ],
)  # fmt: skip
def test_questions_match_columns(
    frames: dict[str, tuple[pd.DataFrame, str | None]],
    spec: str,
    question: str,
    values: list[str],
    group: str | None,
    comparison: str | None,
) -> None:
    frame, target = frames[spec]
    asked = match_question(question, frame, target)
    assert sorted(asked.values) == sorted(values)
    assert (asked.group, asked.comparison) == (group, comparison)
    assert set(values) <= set(asked.named)


def test_a_dimension_alone_names_no_column(
    frames: dict[str, tuple[pd.DataFrame, str | None]],
) -> None:
    frame, target = frames["sklearn:iris"]
    asked = match_question("Which species has the longest sepals?", frame, target)
    assert "petal length (cm)" not in asked.named  # "longest" is no mention of petals


def test_a_question_about_other_columns_names_nothing(
    frames: dict[str, tuple[pd.DataFrame, str | None]],
) -> None:
    frame, target = frames["sklearn:diabetes"]
    asked = match_question("Which species has the longest sepals?", frame, target)
    assert (asked.named, asked.values, asked.group) == ([], [], None)
    # on wine "species" means its classes, but there are no sepals to compare
    frame, target = frames["sklearn:wine"]
    asked = match_question("Which species has the longest sepals?", frame, target)
    assert asked.values == [] and asked.group == "target"


def test_words_fold_plurals_and_whole_names_still_match() -> None:
    assert question_words("Sepals, classes, species & flavanoids") == [
        "sepal", "class", "species", "flavanoid",
    ]  # fmt: skip
    assert named_columns("is total phenols high?", ["total_phenols", "phenols_x"]) == [
        "total_phenols"
    ]
    text = pd.DataFrame({"city": ["a", "b", "a"], "rent": [1.0, 2.0, 3.0]})
    asked = match_question("Which city has the highest rent?", text, None)
    assert (asked.values, asked.group, asked.comparison) == (["rent"], "city", "highest")


def test_a_class_name_or_a_group_word_picks_the_labelled_target() -> None:
    ds = load_dataset("sklearn:breast_cancer")
    asked = match_question("Is the mean area larger for malignant tumours?", ds.frame, ds.target)
    assert (asked.values, asked.group) == (["mean area"], None)  # no class names known
    asked = match_question(
        "Is the mean area larger for malignant tumours?", ds.frame, ds.target, ds.labels
    )
    assert (asked.values, asked.group, asked.comparison) == (["mean area"], "target", "highest")
    # "mean" is no word of a column: only "mean radius" is named by "radius"
    asked = match_question("Which diagnosis has the largest mean radius?", ds.frame, ds.target)
    assert asked.values == ["mean radius"] and "mean texture" not in asked.named
    assert asked.group == "target"


@pytest.fixture(scope="module")
def longley() -> Dataset:
    return load_dataset("statsmodels:longley")


def _ask(question: str, ds: Dataset) -> QuestionColumns:
    return match_question(question, ds.frame, ds.target, ds.labels, ds.descriptions)


def test_a_word_of_a_column_description_names_the_column(longley: Dataset) -> None:
    asked = _ask("What drives employment?", longley)
    assert (asked.named, asked.values, asked.group) == (["TOTEMP"], ["TOTEMP"], None)
    assert asked.readings == [
        "'employment' read as TOTEMP (Total Employment, from the dataset's description)"
    ]
    # simple stems: "employed" is employment, "unemployment" is "Number of unemployed"
    assert _ask("How many people were employed?", longley).values == ["TOTEMP"]
    assert _ask("What drives unemployment?", longley).values == ["UNEMP"]
    assert [stem(w) for w in ("employment", "employed", "employees", "unemployment")] == [
        "employ", "employ", "employ", "unemploy",
    ]  # fmt: skip


def test_a_column_named_outright_wins_over_a_description(longley: Dataset) -> None:
    asked = _ask("How does UNEMP relate to employment?", longley)
    assert asked.values == ["UNEMP"] and asked.named == ["UNEMP", "TOTEMP"]
    assert asked.readings == []  # UNEMP was named, not read
    frame = pd.DataFrame({"jobs": [1.0, 2.0, 4.0], "employment": [3.0, 1.0, 2.0]})
    described = {"jobs": "Total employment", "employment": "Share of adults at work"}
    asked = match_question("What drives employment?", frame, None, None, described)
    assert (asked.named, asked.values) == (["employment"], ["employment"])


def test_a_question_about_nothing_in_the_descriptions_names_nothing(longley: Dataset) -> None:
    asked = _ask("What drives rainfall?", longley)
    assert (asked.named, asked.values, asked.readings, asked.outcome) == ([], [], [], False)
    assert not asks_for_outcome("What drives rainfall?")


def test_a_question_about_the_outcome_is_about_the_designated_target(longley: Dataset) -> None:
    for question in ("What drives the outcome?", "What predicts the target?"):
        asked = _ask(question, longley)
        assert (asked.values, asked.outcome) == (["TOTEMP"], True)
        assert asked.readings == [
            "the question asks about the outcome in general terms: read as TOTEMP, "
            "the dataset's designated target"
        ]
    # no designated target: nothing to read it as
    asked = match_question("What drives the outcome?", longley.frame, None)
    assert (asked.values, asked.outcome) == ([], True)
