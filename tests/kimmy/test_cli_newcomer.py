"""The command line as a newcomer meets it (issue 38), offline: `kimmy swarm` refuses a bad
`--data` as `kimmy analyze` does, says why it stopped and how it was planned, asks the goal
as the analysis's question; its counts and wall time agree with `kimmy show` and `kimmy
rewards`; `kimmy analyze` prints its answers; a fit's warnings become notes."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pandas as pd
import pytest

from kimmy_swarm.cli.app import main


@pytest.fixture
def table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A small CSV in the working directory (file datasets must lie inside it)."""
    monkeypatch.chdir(tmp_path)
    x = [float(i) for i in range(12)]
    z = [float((i * 7) % 5) for i in range(12)]
    y = [
        2 * a + 0.5 * b + (0.3 if i % 2 else -0.3)
        for i, (a, b) in enumerate(zip(x, z, strict=True))
    ]
    pd.DataFrame({"x": x, "z": z, "y": y}).to_csv(tmp_path / "tiny.csv", index=False)
    return "tiny.csv"


@pytest.mark.parametrize("bad", ["statsmodels:longly", "folder"])
def test_swarm_refuses_a_dataset_as_analyze_does(
    tmp_path: Path, table: str, bad: str, capsys: pytest.CaptureFixture[str]
) -> None:
    if bad == "folder":
        (tmp_path / bad).mkdir()
    for argv in (["analyze", bad], ["swarm", "What drives y?", "--data", bad]):
        assert main([*argv, "--out", str(tmp_path / "out"), "--no-store"]) == 2
        [line] = capsys.readouterr().err.splitlines()
        assert "could not be loaded" in line and repr(bad) in line and "Accepted forms" in line
    assert not (tmp_path / "out" / "answer.md").exists()


def test_swarm_names_the_sub_agent_limit_that_stopped_it(
    tmp_path: Path, table: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["swarm", "Analyse it", "--data", table, "--max-subagents", "2", "--no-store"]
    assert main([*argv, "--out", str(tmp_path / "out")]) == 1
    printed = capsys.readouterr().out
    assert re.search(r"stopped: the sub-agent limit \(--max-subagents 2\) refused \d+ spawns; "
                     r"raise it", printed), printed  # fmt: skip


def test_swarm_asks_the_goal_and_says_it_planned_offline(
    tmp_path: Path, table: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    argv = ["swarm", "Which factors drive y?", "--data", table, "--no-store", "--out", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "planned offline (no model given): the goal was read by rules" in printed
    answer = (out / "answer.md").read_text(encoding="utf-8")
    assert "Which factors drive y?" in answer  # the question asked, not the general one
    assert "OLS of y on" in answer


def test_swarm_counts_and_wall_time_agree_with_show_and_rewards(
    tmp_path: Path, table: str, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = str(tmp_path / "runs")
    argv = ["swarm", "Analyse it", "--data", table, "--runs-dir", runs, "--out", "out"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    counted = re.search(r"swarm: (\d+) sub-agents \((\d+) \+ the orchestrator\)", printed)
    wall = re.search(r"([\d.]+) s wall time", printed)
    run_id = re.search(r"kimmy show (\S+)", printed)
    assert counted and wall and run_id, printed
    assert int(counted[1]) == int(counted[2]) + 1
    assert main(["show", run_id[1], "--runs-dir", runs]) == 0
    shown = capsys.readouterr().out
    assert f"subtasks: {counted[1]} done (of {counted[1]})" in shown
    assert f"wall time: {wall[1]} s" in shown
    assert main(["rewards", run_id[1], "--runs-dir", runs]) == 0
    assert re.search(rf"wall time\s*│\s*{re.escape(wall[1])} s", capsys.readouterr().out)


def test_analyze_prints_each_answer(
    tmp_path: Path, table: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["analyze", table, "--question", "Which factors drive y?", "--question", "What of w?"]
    assert main([*argv, "--out", str(tmp_path / "a"), "--no-store"]) == 1  # w: not answered
    printed = capsys.readouterr().out
    assert re.search(r"^answer \[tiny\.csv\] Which factors drive y\?: .*OLS of y on", printed, re.M)
    assert re.search(r"^answer \[tiny\.csv\] What of w\?: not answered: ", printed, re.M)


def test_a_fits_runtime_warnings_become_notes(
    monkeypatch: pytest.MonkeyPatch, recwarn: pytest.WarningsRecorder
) -> None:
    from kimmy_swarm.agents.tools import models

    fit_ols = models._fit_ols

    def noisy(y: pd.Series, x: pd.DataFrame) -> object:
        warnings.warn("divide by zero encountered in log", RuntimeWarning, stacklevel=1)
        return fit_ols(y, x)

    monkeypatch.setattr(models, "_fit_ols", noisy)
    frame = pd.DataFrame({"x": [1.0, 2, 3, 4, 5, 6], "y": [1.1, 2.3, 2.9, 4.2, 5.1, 5.8]})
    fit = models.fit_model(frame, "y", ["x"])
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]  # not on stderr
    assert fit.notes == [
        "fitting the model of y: RuntimeWarning: divide by zero encountered in log"
    ]
