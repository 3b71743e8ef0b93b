"""Questions matched to columns (`agents.analysis.questions`): names, words, synonyms, groups."""

from __future__ import annotations

import pandas as pd
import pytest

from kimmy_swarm.agents.analysis.questions import match_question, named_columns, question_words
from kimmy_swarm.agents.tools.datasets import load_dataset


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
