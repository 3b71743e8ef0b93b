"""The analysis digest: findings joined to their verdicts, failed and unchecked work said,
and the JSON a model reads (`collect_results`) in a fixed shape."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kimmy_swarm.agents.analysis.board import AnalysisBoard
from kimmy_swarm.agents.analysis.digest import (
    AnalysisDigest,
    AnalysisEntry,
    FindingRecord,
    analysis_digest,
    run_problems,
)
from tests.support.analysis_board import DATASET, FAILURE, checked_board


@pytest.fixture
def board(tmp_path: Path) -> AnalysisBoard:
    return checked_board(tmp_path)


def test_entries_in_plan_order_with_their_verdicts(board: AnalysisBoard) -> None:
    digest = analysis_digest(board)
    done, _, partial = digest.analyses
    assert [e.id for e in digest.analyses] == ["analyze:1", "analyze:2", "analyze:3"]
    assert [r.verdict for r in done.findings] == ["verified", "mismatch", "verified", "unchecked"]
    assert done.findings[3].reason == "the fact-check check:1 did not run"
    assert done.findings[1].recomputed == pytest.approx(65317.0)
    assert done.counts.model_dump() == {"verified": 2, "mismatch": 1, "unverifiable": 0,
                                        "unchecked": 1}  # fmt: skip
    assert (done.total, done.r2, done.fallbacks) == (4, 0.9674, ["analyze:1"])
    assert done.fit is not None and (done.fit.statistic, done.fit.value) == ("r2", 0.9674)
    assert done.strongest_corr is not None and done.strongest_corr.verdict == "unchecked"
    assert [f.figure_id for f in done.figures] == ["longley-heatmap"]
    assert partial.status == "partial" and partial.fallbacks == []
    assert {r.verdict for r in partial.findings} == {"unchecked"}
    assert partial.findings[0].reason == "the fact-check check:3 did not run"


def test_a_failed_analysis_says_why(board: AnalysisBoard) -> None:
    failed = analysis_digest(board).analyses[1]
    assert (failed.status, failed.dataset, failed.question) == ("failed", DATASET, "q2")
    assert failed.problems == [FAILURE, "no analysis to check"]
    assert failed.findings == [] and failed.rows is None and failed.total == 0


def test_totals_and_run_problems(board: AnalysisBoard) -> None:
    digest = analysis_digest(board)
    assert digest.totals.model_dump() == {"verified": 2, "mismatch": 1, "unverifiable": 0,
                                          "unchecked": 5, "analyses": 3, "findings": 8}  # fmt: skip
    assert digest.datasets == [DATASET] and digest.not_loaded == {"nope.csv": "no file"}
    assert run_problems(board) == ["dataset 'nope.csv' was not loaded: no file", FAILURE]
    assert digest.problems == run_problems(board)


def test_the_json_a_model_reads_keeps_its_shape(board: AnalysisBoard) -> None:
    # `collect_results` gives a model `model_dump()`: the keys, in this order, are its API
    assert list(AnalysisEntry.model_fields) == [
        "id", "dataset", "question", "status", "answered", "applicable", "interpretation",
        "model", "model_reason", "notes", "fit", "reason", "rows", "columns", "target",
        "predictors", "summary", "r2", "strongest_corr", "findings", "counts", "total",
        "figures", "problems", "fallbacks",
    ]  # fmt: skip
    assert list(FindingRecord.model_fields) == [
        "dataset", "question", "statistic", "columns", "predictors", "method", "group", "note",
        "model", "level", "part", "cov_type", "nominal", "without_row", "without_influential",
        "value", "verdict", "recomputed", "reason",
    ]  # fmt: skip
    digest = analysis_digest(board)
    dumped = digest.model_dump()
    assert list(dumped) == ["datasets", "not_loaded", "problems", "totals", "analyses"]
    assert AnalysisDigest.model_validate(json.loads(json.dumps(dumped))) == digest
