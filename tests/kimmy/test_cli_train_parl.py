"""`kimmy train parl` end to end on the tiny model: it trains, writes its run folder,
resumes, and says in one line what is wrong with bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kimmy_swarm.cli.app import main
from kimmy_swarm.cli.commands.train import RewardArm
from kimmy_swarm.cli.parl_training import REWARD_ARMS
from tests.agents.parl.conftest import write_notes

FAST = ["--checkpoint", "tiny", "--tasks", "3", "--docs-per-task", "3", "-k", "2",
        "--tasks-per-step", "1", "--max-new-tokens", "64", "--step-latency", "0",
        "--checkpoint-every", "1"]  # fmt: skip


def test_reward_arms_agree() -> None:
    assert tuple(a.value for a in RewardArm) == REWARD_ARMS


def test_train_parl_trains_checkpoints_and_resumes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    notes, out = write_notes(tmp_path / "notes"), tmp_path / "run"
    argv = ["train", "parl", "--out", str(out), "--corpus", str(notes), *FAST]
    assert main([*argv, "--steps", "2"]) == 0
    printed = capsys.readouterr().out
    assert "step 1/2: reward" in printed and "step 2/2: reward" in printed
    assert "kimmy: trained 2 steps" in printed and "checkpoint-000002" in printed
    settings = json.loads((out / "parl.json").read_text())
    assert settings["parl"]["reward"] == "parl" and settings["grpo"]["group_size"] == 2
    tasks = (out / "tasks.jsonl").read_text().splitlines()
    assert len(tasks) == 3 and json.loads(tasks[0])["corpus"] == str(notes)
    rows = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2]
    assert {"reward", "r_inst", "r_comp", "r_result", "spawned", "critical_steps"} <= set(rows[0])
    assert rows[0]["lambda1"] == 1.0 and rows[1]["lambda1"] == 0.5  # annealed over 2 steps

    assert main(["train", "parl", "--out", str(out), *FAST, "--steps", "3", "--resume"]) == 0
    printed = capsys.readouterr().out
    assert "step 3/3" in printed and "step 1/3" not in printed
    rows = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2, 3]
    assert (out / "checkpoint-000003" / "config.json").is_file()


def test_bad_input_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["train", "parl", "--out", str(tmp_path / "x"), "--resume", *FAST]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        err == f"kimmy: error: --resume: {tmp_path / 'x' / 'parl.json'} is missing "
        "(not a `kimmy train parl` run)"
    )
    notes = write_notes(tmp_path / "notes", n=3)
    assert main(["train", "parl", "--out", str(tmp_path / "y"), "--corpus", str(notes),
                 *FAST, "--docs-per-task", "5"]) == 2  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert "3 documents with a title; a task of width 5 needs at least 5" in err
    assert len(err.splitlines()) == 1
