"""The wide task over the real ICLR 2017 corpus (read from ../shared, never copied): its
ground truth, the answer parser, the grader's figures, and the extractor's procedure."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from kimmy_swarm.agents import install
from kimmy_swarm.agents import widesearch as ws
from kimmy_swarm.agents.orchestrator import ORCHESTRATOR_ID
from kimmy_swarm.agents.tools.corpus import Corpus, load_corpus
from kimmy_swarm.agents.widesearch import (
    WIDE_TASKS,
    Paper,
    WideGrader,
    WideTask,
    extractor_role,
    grade_answer,
    load_papers,
    parse_answer,
    serial_rows,
    wide_toolbox,
)
from kimmy_swarm.agents.widesearch.answer import normalize_cell
from kimmy_swarm.rewards.graders import Grader, PipelineGrader
from kimmy_swarm.rewards.trajectory import Trajectory
from kimmy_swarm.swarm import Swarm
from kimmy_swarm.swarm.schema import SubtaskStatus

SHARED = Path(__file__).resolve().parents[3].parent / "shared"
ICLR_JSON = SHARED / "data" / "papers" / "iclr2017_citations_in_2018.json"
RL = WIDE_TASKS["rl_papers"]


@pytest.fixture(scope="module")
def raw() -> list[dict[str, Any]]:
    if not ICLR_JSON.exists():
        pytest.skip(f"the shared corpus is not at {ICLR_JSON}")
    return json.loads(ICLR_JSON.read_text())


@pytest.fixture(scope="module")
def corpus(raw: list[dict[str, Any]]) -> Corpus:
    return load_corpus(ICLR_JSON, defaults=ws.ICLR_DEFAULTS)


@pytest.fixture(scope="module")
def papers(corpus: Corpus) -> list[Paper]:
    return [Paper.from_document(d) for d in corpus]


def _tokens(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def _mentions(text: str, phrase: str) -> bool:
    """Word n-gram containment: an independent way to say "mentions the phrase"."""
    words, want = _tokens(text), _tokens(phrase)
    return any(words[i : i + len(want)] == want for i in range(len(words)))


def _independent(raw: list[dict[str, Any]], task: WideTask) -> list[dict[str, Any]]:
    out = []
    for r in raw:
        if r["title"] == "No Title":
            continue
        if task.decision and not r["decision"].startswith(task.decision):
            continue
        if any(_mentions(r["title"], p) or _mentions(r["abstract"], p) for p in task.phrases):
            out.append(r)
    return out


def test_public_api_is_pinned() -> None:
    assert set(ws.__all__) == {
        "ICLR_DEFAULTS", "WIDE_TASKS", "WIDE_SUITE", "Column", "ExtractedRows", "FieldFilter",
        "GoalNotUnderstood", "SuiteGoal", "asks_for_table", "read_wide_goal", "suite_goal_of",
        "Paper",
        "Row", "WideGrader", "WideScore", "WideTask", "extract_rows", "extractor_role",
        "final_answer", "grade_answer", "load_papers", "normalize_cell", "parse_answer",
        "rows_markdown", "score_rows", "serial_rows", "title_key", "wide_toolbox",
    }  # fmt: skip
    assert all(hasattr(ws, name) for name in ws.__all__)


@pytest.mark.parametrize("name", sorted(WIDE_TASKS))
def test_ground_truth_matches_an_independent_count(
    name: str, raw: list[dict[str, Any]], papers: list[Paper]
) -> None:
    task = WIDE_TASKS[name]
    truth = task.ground_truth(papers)
    expected = _independent(raw, task)
    assert [r["title"] for r in truth] == [" ".join(r["title"].split()) for r in expected]
    by_title = {" ".join(r["title"].split()): r for r in expected}
    for row in truth:
        record = by_title[row["title"]]
        assert list(row) == list(task.columns)
        if "citations" in row:
            assert row["citations"] == record["citations"]
        if "decision" in row:
            assert row["decision"] == record["decision"]
        if "first_author" in row:
            assert row["first_author"] == record["authors"][0].replace("*", "").strip()
        if "rating" in row:
            assert row["rating"] == round(float(record["rating"]), 2)


def test_presets_have_the_documented_sizes(papers: list[Paper]) -> None:
    sizes = {name: len(t.ground_truth(papers)) for name, t in WIDE_TASKS.items()}
    assert sizes == {
        "rl_papers": 55,
        "attention_papers": 35,
        "accepted_gan_papers": 17,
        "memory_papers": 55,
    }


def test_papers_use_the_corpus_ids_and_drop_the_placeholder(
    raw: list[dict[str, Any]], corpus: Corpus
) -> None:
    papers = load_papers(ICLR_JSON)
    forum_ids = [r["url"].split("id=")[1] for r in raw if r["title"] != "No Title"]
    assert [p.id for p in papers] == corpus.ids == forum_ids
    assert len(papers) == 489


def test_matching_is_whole_word_and_case_insensitive() -> None:
    task = WideTask(name="t", phrases=("agent", "reinforcement learning"))
    assert task.mentions("A multi-Agent system", "")
    assert task.mentions("", "deep Reinforcement\nlearning works")
    assert task.mentions("", "reinforcement-learning agents")
    assert not task.mentions("Agents and agency", "reinforcement learners")
    assert "'agent' or 'reinforcement learning'" in task.goal()


def test_task_validation_names_the_bad_value() -> None:
    with pytest.raises(ValidationError, match="title"):
        WideTask(name="t", phrases=("x",), columns=("first_author",))
    with pytest.raises(ValidationError, match="non-blank"):
        WideTask(name="t", phrases=(" ",))
    task = WideTask.model_validate(RL.model_dump(mode="json"))  # JSON round trip
    assert task == RL and task.goal() == RL.goal()


# --- parsing -------------------------------------------------------------------------------


def test_parse_markdown_table_with_aliases_and_escapes() -> None:
    text = (
        "Here are the papers:\n\n"
        "| Paper | First author | Decision | Citation count |\n"
        "|:---|---|---|--:|\n"
        "| **A \\| B: nets** | Ann  Lee* | Accept (Poster) | 1,204 |\n"
        "| C | Bo | Reject | 3 |\n\nThat is all."
    )
    rows = parse_answer(text)
    assert rows == [
        {"title": "A | B: nets", "first_author": "Ann Lee", "decision": "Accept (Poster)",
         "citations": "1,204"},
        {"title": "C", "first_author": "Bo", "decision": "Reject", "citations": "3"},
    ]  # fmt: skip
    assert normalize_cell("citations", rows[0]["citations"]) == 1204
    assert normalize_cell("first_author", " ANN   lee ") == "ann lee"
    assert normalize_cell("rating", "8.944") == 8.94
    assert normalize_cell("citations", "many") is None
    # the goal's own words "OpenReview link" as a header (graded as a missing column before)
    linked = parse_answer("| Title | OpenReview link |\n|---|---|\n| C | https://x |")
    assert linked == [{"title": "C", "url": "https://x"}]


def test_parse_json_rows_bare_fenced_and_wrapped() -> None:
    rows = [{"Title": "A", "first_author": "B", "citations": 4}]
    expected = [{"title": "A", "first_author": "B", "citations": 4}]
    assert parse_answer(json.dumps(rows)) == expected
    assert parse_answer("Answer:\n```json\n" + json.dumps({"rows": rows}) + "\n```") == expected
    assert parse_answer("no table here") == []


# --- grading -------------------------------------------------------------------------------


def _table(columns: tuple[str, ...], rows: list[dict[str, Any]]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(str(r[c]) for c in columns) + " |" for r in rows]
    return "\n".join(lines)


def _traj(goal: str, answer: str | None) -> Trajectory:
    from kimmy_swarm.rewards.trajectory import Episode

    outputs = {ORCHESTRATOR_ID: {"answer": answer}} if answer is not None else {}
    root = Episode(
        subtask_id=ORCHESTRATOR_ID, role="orchestrator", status="done", started=True,
        attempts=1, steps=1, output_valid=True, output_used=True, is_orchestrator=True,
    )  # fmt: skip
    return Trajectory(
        run_id="r", goal=goal, status="done", episodes={ORCHESTRATOR_ID: root}, outputs=outputs
    )


def test_perfect_answer_scores_one(papers: list[Paper]) -> None:
    truth = RL.ground_truth(papers)
    score = grade_answer(RL, _table(RL.columns, truth), truth)
    assert (score.precision, score.recall, score.f1, score.cell_accuracy) == (1.0, 1.0, 1.0, 1.0)
    # Case, spacing and punctuation of titles and names do not matter; JSON rows do too.
    loose = [{**r, "title": r["title"].upper() + " .", "first_author": r["first_author"].lower()}
             for r in truth]  # fmt: skip
    assert grade_answer(RL, json.dumps(loose), truth).f1 == 1.0


def test_missing_wrong_and_extra_rows_give_hand_computed_figures(papers: list[Paper]) -> None:
    truth = RL.ground_truth(papers)
    n, c = len(truth), len(RL.columns)  # 55 rows, 4 columns
    answer = [dict(r) for r in truth[1:]]  # one row missing
    answer[0]["citations"] = int(answer[0]["citations"]) + 1  # one wrong cell
    answer.append({"title": "A paper that is not there", "first_author": "X", "decision": "Reject",
                   "citations": 0})  # fmt: skip
    score = grade_answer(RL, _table(RL.columns, answer), truth)
    assert (score.answer_rows, score.truth_rows, score.correct_rows) == (n, n, n - 2)
    assert score.precision == pytest.approx((n - 2) / n)  # 53 / 55
    assert score.recall == pytest.approx((n - 2) / n)
    assert score.f1 == pytest.approx((n - 2) / n)
    assert score.cell_accuracy == pytest.approx(((n - 2) * c + (c - 1)) / (n * c))  # 215 / 220


def test_a_repeated_row_counts_once_and_against_precision(papers: list[Paper]) -> None:
    truth = RL.ground_truth(papers)[:4]
    answer = truth + truth[:1]
    score = grade_answer(RL, json.dumps(answer), truth)
    assert (score.precision, score.recall) == (pytest.approx(4 / 5), 1.0)


def test_grader_reads_the_orchestrators_answer(papers: list[Paper]) -> None:
    grader = WideGrader(RL, papers)
    assert isinstance(grader, Grader) and isinstance(grader, PipelineGrader)
    truth = RL.ground_truth(papers)
    half = _table(RL.columns, truth[: len(truth) // 2])
    traj = _traj(RL.goal(), half)
    assert grader.applies(traj)
    assert grader(traj) == pytest.approx(2 * 1.0 * (27 / 55) / (1.0 + 27 / 55))
    parts = grader.parts(traj)
    assert parts["precision"] == 1.0 and parts["recall"] == pytest.approx(27 / 55)
    assert not grader.applies(_traj(WIDE_TASKS["attention_papers"].goal(), half))
    assert grader(_traj(RL.goal(), None)) == 0.0  # no final answer


# --- the extractor -------------------------------------------------------------------------


def test_extractor_procedure_returns_the_ground_truth_rows_of_its_slice(
    corpus: Corpus, papers: list[Paper]
) -> None:
    task = WIDE_TASKS["accepted_gan_papers"]  # needs metadata: decision filter, rating column
    ids = corpus.ids[100:260]
    swarm = Swarm(max_retries=0, failure_policy="continue")
    install(swarm, [extractor_role()], wide_toolbox(corpus))
    inputs = {"doc_ids": ids, "task": task.model_dump(mode="json")}
    result = swarm.run_sync({"subtasks": [{"id": "x1", "role": "extractor", "inputs": inputs}]})
    assert result.results["x1"].status is SubtaskStatus.DONE, result.results["x1"].error
    expected = task.ground_truth(p for p in papers if p.id in set(ids))
    assert expected  # the slice really has matching papers
    assert result.outputs["x1"]["rows"] == expected


def test_serial_baseline_equals_the_ground_truth(corpus: Corpus, papers: list[Paper]) -> None:
    assert serial_rows(RL, corpus) == RL.ground_truth(papers)
