"""The run's shared state: datasets by key, figures on disk, the finished work, problems."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from kimmy_swarm.agents.analysis.board import AnalysisBoard, UnknownAnalysisDatasetError
from kimmy_swarm.agents.analysis.schemas import AnalysisTask, DatasetAnalysis, FindingChecks
from kimmy_swarm.agents.tools.datasets import load_dataset
from kimmy_swarm.swarm.errors import UserError


@pytest.fixture
def board(tmp_path: Path) -> AnalysisBoard:
    ds = load_dataset("statsmodels:longley")
    return AnalysisBoard({"longley": ds}, out_dir=tmp_path, load_errors={"x.csv": "no file"})


def test_an_unknown_dataset_names_the_loaded_ones(board: AnalysisBoard) -> None:
    assert board.frame("longley").shape == (16, 7)
    with pytest.raises(UnknownAnalysisDatasetError, match=r"'iris' is not loaded.*: longley"):
        board.frame("iris")
    assert issubclass(UnknownAnalysisDatasetError, UserError)  # bad input, told in one line
    assert board.load_errors == {"x.csv": "no file"}


def test_info_and_csv_of_a_dataset(board: AnalysisBoard) -> None:
    info = board.info("longley")
    assert (info.name, info.rows, info.columns, info.target) == ("longley", 16, 7, "TOTEMP")
    with ThreadPoolExecutor(4) as pool:  # made once, the same bytes for every caller
        csvs = list(pool.map(board.csv_bytes, ["longley"] * 8))
    assert len({id(c) for c in csvs}) == 1
    assert csvs[0].splitlines()[0].startswith(b"TOTEMP,")


def test_two_first_callers_of_csv_bytes_get_the_same_bytes(
    board: AnalysisBoard, monkeypatch: pytest.MonkeyPatch
) -> None:
    both_missed = threading.Barrier(2, timeout=10)
    frame = board.frame

    def frame_after_both_missed(name: str) -> Any:
        both_missed.wait()  # both threads found no CSV kept and render one each
        return frame(name)

    monkeypatch.setattr(board, "frame", frame_after_both_missed)
    with ThreadPoolExecutor(2) as pool:
        first, second = pool.map(board.csv_bytes, ["longley"] * 2)
    assert first is second


def test_figures_are_kept_and_written(board: AnalysisBoard, tmp_path: Path) -> None:
    path = board.add_figure("f1", b"png")
    assert path == tmp_path / "figures" / "f1.png" and path.read_bytes() == b"png"
    assert board.figures == {"f1": b"png"}
    assert [p.name for p in path.parent.iterdir()] == ["f1.png"]  # no temporary left


def test_finished_work_and_problems_are_recorded(board: AnalysisBoard) -> None:
    task = AnalysisTask(n=1, dataset="longley", question="q")
    board.record_task("analyze:1", task)
    board.record_analysis("analyze:1", DatasetAnalysis(dataset="longley", question="q"))
    board.record_checks("check:1", FindingChecks(analysis="analyze:1"))
    assert board.tasks == {"analyze:1": task}
    assert set(board.analyses) == {"analyze:1"} and set(board.checks) == {"check:1"}
    for message in ("a failed", "b failed", "a failed"):
        board.add_problem(message)
    assert board.problems == ["a failed", "b failed"]  # each once, in order
