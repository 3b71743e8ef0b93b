"""Which columns are categorical (`agents.tools.variables`), read from the datasets' own
descriptions of their codes, and how the analysis tools describe them: level counts, not
mean, skew and outliers."""

from __future__ import annotations

from pathlib import Path

import pytest

from kimmy_swarm.agents.analysis.board import AnalysisBoard
from kimmy_swarm.agents.analysis.tools import build_toolbox
from kimmy_swarm.agents.tools.datasets import Dataset, load_dataset
from kimmy_swarm.agents.tools.variables import column_types, level_counts


def _types(ds: Dataset, target: str | None = None) -> dict[str, str]:
    kinds = column_types(ds.frame, codes=ds.codes, labels=ds.labels,
                         descriptions=ds.descriptions, target=target or ds.target)  # fmt: skip
    return {c: t.kind for c, t in kinds.items() if t.kind != "numeric"}


def test_fairs_codes_are_read_from_its_note() -> None:
    codes = load_dataset("statsmodels:fair").codes
    assert codes["rate_marriage"] == {
        "1": "very poor", "2": "poor", "3": "fair", "4": "good", "5": "very good",
    }  # fmt: skip
    assert codes["religious"] == {"1": "not", "2": "mildly", "3": "fairly", "4": "strongly"}
    assert list(codes["educ"]) == ["9", "12", "14", "16", "17", "20"]
    assert codes["occupation"]["1"] == "student"
    assert codes["occupation"]["6"] == "professional with advanced degree"
    assert codes["occupation_husb"] == codes["occupation"]  # "Same as occupation."
    assert {"affairs", "age", "yrs_married", "children"}.isdisjoint(codes)


def test_codes_one_a_line_and_dashes_inside_a_meaning() -> None:
    codes = load_dataset("statsmodels:anes96").codes
    assert codes["PID"]["0"] == "Strong Democrat" and len(codes["PID"]) == 7
    assert codes["educ"]["1"] == "1-8 grades"  # "1-8" is part of the meaning, no code
    assert codes["income"]["2"] == "$3,000-$4,999" and len(codes["income"]) == 24


@pytest.mark.parametrize(
    ("spec", "categorical"),
    [
        ("statsmodels:fair", {"rate_marriage": "ordinal", "religious": "ordinal",
                              "educ": "ordinal", "occupation": "nominal",
                              "occupation_husb": "nominal"}),
        ("sklearn:iris", {"target": "nominal"}),  # the source names its classes
        ("statsmodels:spector", {"GRADE": "binary", "PSI": "binary"}),
        ("statsmodels:longley", {}),
        ("statsmodels:china_smoking", {}),  # 8 counts in 8 rows are no levels
        # 24 income brackets read as a score; undescribed 0-7 and 1-7 integers as ordered
        ("statsmodels:anes96", {"TVnews": "ordinal", "selfLR": "ordinal", "ClinLR": "ordinal",
                                "DoleLR": "ordinal", "PID": "ordinal", "educ": "ordinal",
                                "vote": "binary"}),
    ],
)  # fmt: skip
def test_which_columns_are_categorical(spec: str, categorical: dict[str, str]) -> None:
    assert _types(load_dataset(spec)) == categorical


def test_fairs_kinds_say_why() -> None:
    ds = load_dataset("statsmodels:fair")
    kinds = column_types(ds.frame, codes=ds.codes, descriptions=ds.descriptions)
    assert kinds["occupation"].reason == "codes 1–6 described in the source, not graded: categories"
    assert kinds["rate_marriage"].reason == "codes 1–5 described in the source, graded"
    assert kinds["educ"].reason == "codes 9–20 described in the source, graded"  # "Level of"
    assert kinds["affairs"].kind == "numeric" and not kinds["affairs"].categorical


def test_a_count_target_keeps_its_numbers() -> None:
    anes = load_dataset("statsmodels:anes96")
    assert _types(anes)["TVnews"] == "ordinal"
    assert "TVnews" not in _types(anes, target="TVnews")  # a Poisson target: a count


def test_level_counts() -> None:
    fair = load_dataset("statsmodels:fair").frame
    assert level_counts(fair["rate_marriage"]) == {"1": 99, "2": 348, "3": 993, "4": 2242,
                                                   "5": 2684}  # fmt: skip
    assert sum(level_counts(fair["occupation"]).values()) == 6366


def test_the_tools_count_levels_not_means_and_skip_their_outliers(tmp_path: Path) -> None:
    tools = build_toolbox(AnalysisBoard({"fair": load_dataset("statsmodels:fair")},
                                        out_dir=tmp_path))  # fmt: skip
    cols = ["affairs", "rate_marriage", "occupation", "children"]
    described = tools.get_tool("describe_columns")(dataset="fair", columns=cols)
    occupation = described["occupation"]
    assert occupation["kind"] == "nominal" and occupation["count"] == 6366
    assert [occupation[k] for k in ("mean", "std", "skew", "median", "min", "max")] == [None] * 6
    assert occupation["levels"]["3"] == 2783 and occupation["meanings"]["3"] == "white-collar"
    rating = described["rate_marriage"]
    assert (rating["kind"], rating["mean"], rating["skew"], rating["median"]) == (
        "ordinal", None, None, 4.0,
    )  # fmt: skip
    # affairs is numeric but 68% zeros: its zeros are counted, its Tukey "outliers" are not
    assert described["affairs"]["zeros"] == 4313 and described["affairs"]["mean"] is not None
    outliers = tools.get_tool("count_outliers")(dataset="fair", columns=cols)
    assert outliers == {"children": 203}  # was 1049 in affairs, 447 in rate_marriage
