"""benchmarks/experiments/parl.py --report-from: the table and plot rebuilt from a finished
run's summary.json (means over the first and last window of steps, the share of spawned
sub-agents that completed, the steps that took a gradient), and a clear error without one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.experiments import parl
from tests.support.markdown_tables import table_rows

HEADER = "| arm | steps | sub-agents spawned |"


def _row(step: int, spawned: float, completed: float, trained: bool) -> dict:
    return {"step": step, "reward": 1.0 + spawned / 10, "spawned": spawned,
            "completed": completed, "critical_steps": 10.0 - spawned / 2, "wall_s": 0.1,
            "r_result": 1.0, "trained_samples": 4.0 if trained else 0.0,
            "elapsed_s": 6.0 * step}  # fmt: skip


def test_report_from_a_summary_rebuilds_table_and_plot(tmp_path: Path) -> None:
    steps = 2 * parl.WINDOW
    arms = {
        "result": [_row(i + 1, 4.0, 2.0, False) for i in range(steps)],
        "parl": [_row(i + 1, 6.0, 3.0 if i < parl.WINDOW else 6.0, i < 3) for i in range(steps)],
        "no-comp": [_row(i + 1, 8.0, 6.0, i % 2 == 0) for i in range(steps)],
    }
    work = tmp_path / "work"
    work.mkdir()
    (work / "summary.json").write_text(json.dumps(arms), encoding="utf-8")
    out = tmp_path / "results"
    assert parl.main(["--report-from", str(work), "--out-dir", str(out)]) == 0

    page = (out / "parl_training.md").read_text(encoding="utf-8")
    rows = {(r[0], r[1]): r for r in table_rows(page, HEADER)}
    late = f"{parl.WINDOW + 1}–{steps}"
    assert rows[("parl", f"1–{parl.WINDOW}")][6:] == ["0.50", "1.60", "3"]
    assert rows[("parl", late)][6:] == ["1.00", "1.60", "0"]
    assert rows[("result", late)][2:5] == ["4.00", "8.00", "0.10"]
    assert rows[("no-comp", late)][6:] == ["0.75", "1.80", str(parl.WINDOW // 2)]
    assert f"{steps} steps per arm" in page
    assert (out / "parl_training.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not (work / "parl").exists()  # nothing trained


def test_report_from_a_folder_without_summary_names_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stop:
        parl.main(["--report-from", str(tmp_path), "--out-dir", str(tmp_path)])
    assert stop.value.code == 2
    assert f"--report-from {tmp_path}: no summary.json there" in capsys.readouterr().err
