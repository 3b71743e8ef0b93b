"""Wide goals in words: the suite's ground truth against the raw records, the offline goal
reader on goals it has never seen, and its refusals (read from ../shared, never copied)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from kimmy_swarm.agents.widesearch import WIDE_SUITE, Paper, WideTask, load_papers
from kimmy_swarm.agents.widesearch.answer import normalize_cell
from kimmy_swarm.agents.widesearch.goal_reader import (
    GoalNotUnderstood,
    asks_for_table,
    read_wide_goal,
)
from kimmy_swarm.agents.widesearch.pipeline import plan_wide_goal, wide_task_of
from kimmy_swarm.agents.widesearch.task import FieldFilter
from kimmy_swarm.swarm.errors import ConfigError

SHARED = Path(__file__).resolve().parents[3].parent / "shared"
ICLR_JSON = SHARED / "data" / "papers" / "iclr2017_citations_in_2018.json"


@pytest.fixture(scope="module")
def raw() -> list[dict[str, Any]]:
    if not ICLR_JSON.exists():
        pytest.skip(f"the shared corpus is not at {ICLR_JSON}")
    records = json.loads(ICLR_JSON.read_text())
    return [r for r in records if r["title"] != "No Title"]


@pytest.fixture(scope="module")
def papers(raw: list[dict[str, Any]]) -> list[Paper]:
    return load_papers(ICLR_JSON)


# --- an independent reading of the raw records ----------------------------------------------


def _has_phrase(text: str, phrase: str) -> bool:
    words = re.findall(r"[a-z0-9]+", text.lower())
    want = re.findall(r"[a-z0-9]+", phrase.lower())
    return any(words[i : i + len(want)] == want for i in range(len(words) - len(want) + 1))


def _people(record: dict[str, Any]) -> list[str]:
    """The record's authors, one per person: a list item may name two ("Bowen Zhou and
    Mingbo Ma"), and the OpenReview marks (*) go."""
    return [p.strip() for item in record["authors"] for p in item.replace("*", "").split(" and ")]


def _value(record: dict[str, Any], fld: str) -> float:
    if fld == "n_authors":
        return float(len(_people(record)))
    return float(record[fld])


def _raw_matches(task: WideTask, r: dict[str, Any]) -> bool:
    texts = {"title": [r["title"]], "abstract": [r["abstract"]]}.get(
        task.where, [r["title"], r["abstract"]]
    )
    if task.phrases and not any(_has_phrase(t, p) for t in texts for p in task.phrases):
        return False
    if task.decision and not r["decision"].startswith(task.decision):
        return False
    ops = {">": float.__gt__, ">=": float.__ge__, "<": float.__lt__, "<=": float.__le__,
           "==": float.__eq__}  # fmt: skip
    if not all(ops[f.op](_value(r, f.field), f.value) for f in task.filters):
        return False
    if task.email_domains:
        return any(e == d or e.endswith("." + d) for e in r["emails"] for d in task.email_domains)
    return True


def test_the_suite_has_24_goals_or_more_each_with_rows(papers: list[Paper]) -> None:
    assert len(WIDE_SUITE) >= 24
    sizes = {name: len(g.task.ground_truth(papers)) for name, g in WIDE_SUITE.items()}
    assert all(n >= 1 for n in sizes.values()), sizes
    kinds = {
        "title": any(g.task.where == "title" for g in WIDE_SUITE.values()),
        "abstract": any(g.task.where == "abstract" for g in WIDE_SUITE.values()),
        "decision": any(g.task.decision for g in WIDE_SUITE.values()),
        "rating": any(f.field == "rating" for g in WIDE_SUITE.values() for f in g.task.filters),
        "authors": any(f.field == "n_authors" for g in WIDE_SUITE.values() for f in g.task.filters),
        "domains": any(g.task.email_domains for g in WIDE_SUITE.values()),
    }  # fmt: skip
    assert all(kinds.values()), kinds
    columns = {c for g in WIDE_SUITE.values() for c in g.task.columns}
    assert {"first_author", "authors", "n_authors", "decision", "citations", "rating", "rank",
            "emails", "url", "variance"} <= columns  # fmt: skip


def test_suite_truth_equals_an_independent_reading_of_the_raw_records(
    raw: list[dict[str, Any]], papers: list[Paper]
) -> None:
    for goal in WIDE_SUITE.values():
        task = goal.task
        truth = [r["title"] for r in task.ground_truth(papers)]
        expected = [" ".join(r["title"].split()) for r in raw if _raw_matches(task, r)]
        assert truth == expected, goal.name
        by_title = {" ".join(r["title"].split()): r for r in raw}
        for row in task.ground_truth(papers):
            record = by_title[str(row["title"])]
            for column in task.columns:
                want = {
                    "first_author": record["authors"][0].replace("*", "").strip(),
                    "authors": ", ".join(_people(record)),
                    "n_authors": len(_people(record)),
                    "emails": ", ".join(record["emails"]),
                    "rating": float(record["rating"]),
                }.get(column, record.get(column, row["title"]))
                assert normalize_cell(column, row[column]) == normalize_cell(column, want), (
                    goal.name, column, row[column], want,
                )  # fmt: skip


def test_the_reader_reads_every_suite_goal_as_its_task() -> None:
    for goal in WIDE_SUITE.values():
        read = read_wide_goal(goal.words, name=goal.name)
        assert read == goal.task, goal.name
        assert wide_task_of(goal.words) == goal.task


# --- goals the reader has never seen ---------------------------------------------------------


def _f(fld: str, op: str, value: float) -> FieldFilter:
    return FieldFilter(field=fld, op=op, value=value)  # type: ignore[arg-type]


UNSEEN: list[tuple[str, dict[str, Any]]] = [
    (
        "List every ICLR 2017 submission whose title or abstract mentions dropout, with its "
        "title, first author and citation count.",
        {"phrases": ("dropout",), "columns": ("title", "first_author", "citations")},
    ),
    (
        "Show me all the poster papers whose abstract contains “batch normalization” together "
        "with the lead author's name and the OpenReview decision",
        {"phrases": ("batch normalization",), "where": "abstract",
         "decision": "Accept (Poster)", "columns": ("title", "first_author", "decision")},
    ),
    (
        "Which submissions with over 30 citations mention 'unsupervised'? I want title, "
        "citations and authors.",
        {"phrases": ("unsupervised",), "filters": (_f("citations", ">", 30),),
         "columns": ("title", "citations", "authors")},
    ),
    (
        "Find papers with an author whose e-mail domain is umontreal.ca or mila.quebec that "
        "mention 'generative', listing title and e-mail domains",
        {"phrases": ("generative",), "email_domains": ("umontreal.ca", "mila.quebec"),
         "columns": ("title", "emails")},
    ),
    (
        "Give the title, rank and the author count of every rejected paper with 4 or fewer "
        "authors whose title mentions 'deep'",
        {"phrases": ("deep",), "where": "title", "decision": "Reject",
         "filters": (_f("n_authors", "<=", 4),), "columns": ("title", "rank", "n_authors")},
    ),
    (
        "Table of every paper scoring at most 5 whose abstract refers to 'generative "
        "adversarial networks', with title and score, ordered by score from highest to lowest",
        {"phrases": ("generative adversarial networks",), "where": "abstract",
         "filters": (_f("rating", "<=", 5),), "columns": ("title", "rating"),
         "sort_by": "rating", "descending": True},
    ),
]  # fmt: skip


@pytest.mark.parametrize(("words", "expected"), UNSEEN, ids=[str(i) for i in range(len(UNSEEN))])
def test_the_reader_reads_goals_it_has_never_seen(
    words: str, expected: dict[str, Any], papers: list[Paper], raw: list[dict[str, Any]]
) -> None:
    task = read_wide_goal(words)
    assert task == WideTask(name=task.name, **expected)
    titles = [r["title"] for r in task.ground_truth(papers)]
    assert titles == [" ".join(r["title"].split()) for r in raw if _raw_matches(task, r)]
    assert asks_for_table(words)


REFUSED: list[tuple[str, str]] = [
    ("Which papers from Google have the most citations?", "'google', 'most'"),
    ("List the 10 most cited papers that mention 'GAN'.", "'10', 'most', 'cited'"),
    ("List every paper that does not mention dropout, with its title.", "'not'"),
    ("Find all papers whose title mentions 'graph' and whose abstract mentions 'kernel'.",
     "one condition on the text"),
    ("Which accepted or rejected papers mention 'memory'?", "one decision"),
    ("List every paper with its title and authors.", "no condition"),
    ("List papers about dropout with their titles", "'about', 'dropout'"),
]  # fmt: skip


@pytest.mark.parametrize(("words", "named"), REFUSED, ids=[str(i) for i in range(len(REFUSED))])
def test_the_reader_refuses_what_it_does_not_understand_and_names_it(
    words: str, named: str
) -> None:
    with pytest.raises(GoalNotUnderstood) as caught:
        read_wide_goal(words)
    assert named in str(caught.value)
    assert wide_task_of(words) is None
    with pytest.raises(ConfigError, match="needs a model to plan it: it asks for a table, but"):
        plan_wide_goal(words)


def test_goals_that_ask_for_no_table_are_not_wide_goals() -> None:
    for words in ("Review linear attention", "Write a poem", "Summarize the papers on GANs",
                  "Give an overview of the literature on dropout"):  # fmt: skip
        assert not asks_for_table(words)
        assert plan_wide_goal(words) is None
    assert asks_for_table("List every paper whose title mentions 'survey', with its title")


def test_new_columns_compare_as_their_kind() -> None:
    listed = normalize_cell("authors", ["a. one", "B Two"])
    assert normalize_cell("authors", "A. One; b two") == listed
    assert normalize_cell("authors", "A, B") != normalize_cell("authors", "B, A")  # in order
    assert normalize_cell("emails", "mit.edu, google.com") == normalize_cell(
        "emails", ["google.com", "mit.edu"]
    )  # a set
    assert normalize_cell("n_authors", "3") == 3 and normalize_cell("rank", "12.0") == 12
    assert normalize_cell("variance", "0.4712") == 0.47
    assert normalize_cell("url", "https://openreview.net/forum?id=X/") == normalize_cell(
        "url", "https://OpenReview.net/forum?id=X"
    )


def test_a_task_needs_a_condition_and_sorts_by_one_of_its_columns() -> None:
    with pytest.raises(ValueError, match="needs a condition"):
        WideTask(name="t", columns=("title",))
    with pytest.raises(ValueError, match="sort_by"):
        WideTask(name="t", phrases=("x",), columns=("title",), sort_by="citations")
    task = WideTask(name="t", phrases=("x",), columns=("title", "citations"),
                    sort_by="citations", descending=True)  # fmt: skip
    rows = [{"title": "a", "citations": 1}, {"title": "b", "citations": 9},
            {"title": "c", "citations": ""}]  # fmt: skip
    assert [r["title"] for r in task.ordered(rows)] == ["b", "a", "c"]
