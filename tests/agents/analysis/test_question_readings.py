"""Questions read through the dataset's own column descriptions, end to end offline:
"What drives employment?" on longley models TOTEMP ("Total Employment") and says so; a
question about nothing in the data is still unanswered; "the outcome" is the target."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from kimmy_swarm.agents.analysis import (
    AnalysisBoard,
    AnalysisConfig,
    AnalysisOutcome,
    build_toolbox,
    run_analysis,
)
from kimmy_swarm.agents.tools.datasets import load_dataset

EMPLOYMENT = "What drives employment?"
RAINFALL = "What drives rainfall?"
READING = "'employment' read as TOTEMP (Total Employment, from the dataset's description)"


@pytest.fixture(scope="module")
def longley(tmp_path_factory: pytest.TempPathFactory) -> AnalysisOutcome:
    out = tmp_path_factory.mktemp("longley")
    config = AnalysisConfig(["statsmodels:longley"], out=out, questions=[EMPLOYMENT, RAINFALL])
    return run_analysis(config)


def _section(outcome: AnalysisOutcome, question: str) -> str:
    md = outcome.paths["report.md"].read_text()
    return md.split(f"## statsmodels:longley — {question}")[1].split("\n## ")[0]


def test_a_question_in_the_words_of_a_description_models_that_column(
    longley: AnalysisOutcome,
) -> None:
    section = _section(longley, EMPLOYMENT)
    assert READING in section and "OLS: TOTEMP ~ const" in section
    assert "Question not answered" not in section
    assert longley.pass_rate == 1.0


def test_a_question_about_nothing_in_the_data_is_still_unanswered(
    longley: AnalysisOutcome,
) -> None:
    section = _section(longley, RAINFALL)
    assert "Question not answered: the question names no numeric column" in section
    assert "OLS:" not in section
    assert len(longley.problems) == 1 and "names no numeric column" in longley.problems[0]


def test_question_columns_tool_says_how_it_read_the_question(tmp_path: Path) -> None:
    frame = pd.DataFrame({"x": [1.0, 2.0, 3.0, 5.0], "y": [2.0, 1.0, 4.0, 3.0]})
    frame.to_csv(tmp_path / "t.csv", index=False)
    specs = ("statsmodels:longley", str(tmp_path / "t.csv"))
    board = AnalysisBoard({s: load_dataset(s) for s in specs}, out_dir=tmp_path)
    ask = build_toolbox(board).get_tool("question_columns")
    asked = ask(dataset="statsmodels:longley", question=EMPLOYMENT)
    assert (asked["target"], asked["readings"], asked["outcome"]) == ("TOTEMP", [READING], False)
    outcome = ask(dataset="statsmodels:longley", question="What drives the outcome?")
    assert outcome["target"] == "TOTEMP" and outcome["outcome"] is True
    # a table with no designated target: "the outcome" names nothing, and longley's
    # target is no reason to call the question one about longley
    on_file = ask(dataset=specs[1], question="What drives the outcome?")
    assert (on_file["target"], on_file["outcome"], on_file["applies_to"]) == (None, True, [])
