"""`--out` on the command line (`kimmy.out_dir`): a folder that cannot be one is refused in
one line before anything runs, a run whose files could not be written is not stored as
`completed`, `kimmy resume --out` writes them elsewhere, and one run at a time writes into a
folder."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kimmy_swarm.agents.analysis.pipeline import AnalysisPipeline
from kimmy_swarm.agents.pipeline_record import stored_settings
from kimmy_swarm.cli.app import main
from kimmy_swarm.cli.out_dir import LOCK_NAME, hold_out
from kimmy_swarm.swarm import Plan, Subtask, SubtaskContext, Swarm
from kimmy_swarm.swarm.schema import RunStatus
from kimmy_swarm.swarm.store import RunStore

ANALYZE = ["analyze", "statsmodels:longley"]


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("KIMMY_BASE_URL", "KIMMY_MODEL", "KIMMY_API_KEY"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    for i, text in enumerate(["Attention weighs tokens.", "Linear attention is cheaper."]):
        (folder / f"n{i}.md").write_text(f"# Note {i}\n\n{text}\n", encoding="utf-8")
    return folder


def _one_line(capsys: pytest.CaptureFixture[str], *, after_progress: bool = False) -> str:
    """The one error line on stderr (`after_progress`: below the progress view's lines)."""
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.splitlines()
    if after_progress:
        lines = [x for x in lines if x.startswith("kimmy: ")]
    [line] = lines
    assert line.startswith("kimmy: error: ")
    return line


def _commands(corpus: Path) -> dict[str, list[str]]:
    return {
        "review": ["review", str(corpus), "--topic", "attention"],
        "analyze": ANALYZE,
        "swarm": ["swarm", "Review attention", "--corpus", str(corpus)],
        "demo": ["demo"],
    }


@pytest.mark.parametrize("command", ["review", "analyze", "swarm", "demo"])
def test_an_out_under_a_file_is_refused_before_anything_runs(
    command: str,
    corpus: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Before, each ran to the end, stored the run as completed, then raised
    NotADirectoryError while writing its files."""
    monkeypatch.chdir(tmp_path)
    Path("afile.txt").write_text("not a folder\n")
    runs = tmp_path / "runs"
    argv = [*_commands(corpus)[command], "--out", "afile.txt/sub", "--runs-dir", str(runs)]
    assert main(argv) == 2
    line = _one_line(capsys)
    assert "--out afile.txt/sub: afile.txt is a file, not a folder" in line
    assert not runs.exists()  # nothing ran, nothing was stored
    assert Path("afile.txt").read_text() == "not a folder\n"


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
@pytest.mark.parametrize("command", ["review", "analyze"])
def test_an_out_that_cannot_be_created_is_refused(
    command: str, corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "runs"
    argv = [*_commands(corpus)[command], "--out", "/proc/kimmy-out", "--runs-dir", str(runs)]
    assert main(argv) == 2
    line = _one_line(capsys)
    assert "--out /proc/kimmy-out: the folder cannot be created" in line
    assert not runs.exists()


def test_a_refused_run_leaves_no_empty_out_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The folder is made just before the run; bad input found after that leaves none."""
    out = tmp_path / "a" / "b"
    assert main(["analyze", "nope.csv", "--out", str(out), "--no-store"]) == 2
    assert "nope.csv" in _one_line(capsys)
    assert not (tmp_path / "a").exists()


def _no_space(*args: Any, **kwargs: Any) -> Any:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_files_not_written_after_the_run_fail_it_and_resume_out_writes_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before, the OSError was a traceback and the run stayed `completed`."""
    out, elsewhere, runs = tmp_path / "out", tmp_path / "elsewhere", tmp_path / "runs"
    with monkeypatch.context() as patch:
        patch.setattr(AnalysisPipeline, "write_outputs", _no_space)
        assert main([*ANALYZE, "--out", str(out), "--runs-dir", str(runs)]) == 1
    line = _one_line(capsys, after_progress=True)
    assert "could not be written into" in line and "No space left on device" in line
    assert "--out DIR" in line  # it says how to write them
    with RunStore(runs, create=False) as store:
        stored = store.load_run("latest")
    assert stored.status is RunStatus.FAILED
    assert stored.stop_reason is not None and "No space left" in stored.stop_reason
    # written elsewhere on resume: the run is complete, and its folder is that one from now
    assert main(["resume", "latest", "--runs-dir", str(runs), "--out", str(elsewhere)]) == 0
    assert (elsewhere / "findings.jsonl").stat().st_size > 0
    assert not (elsewhere / LOCK_NAME).exists()
    with RunStore(runs, create=False) as store:
        stored = store.load_run("latest")
    assert stored.status is RunStatus.COMPLETED
    assert stored_settings(stored.settings)["out"] == str(elsewhere)


def test_resume_refuses_a_stored_out_that_became_a_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before, `kimmy resume` repeated the NotADirectoryError, and had no --out."""
    out, runs = tmp_path / "out", tmp_path / "runs"
    assert main([*ANALYZE, "--out", str(out), "--runs-dir", str(runs)]) == 0
    capsys.readouterr()
    for path in out.rglob("*"):
        if path.is_file():
            path.unlink()
    for path in sorted(out.rglob("*"), reverse=True):
        path.rmdir()
    out.rmdir()
    out.write_text("now a file\n")
    assert main(["resume", "latest", "--runs-dir", str(runs)]) == 2
    line = _one_line(capsys)
    assert f"--out {out}: {out} is a file, not a folder" in line
    assert "write its files elsewhere with --out DIR" in line
    assert main(["resume", "latest", "--runs-dir", str(runs), "--out", str(tmp_path / "b")]) == 0
    assert (tmp_path / "b" / "report.md").stat().st_size > 0


def test_resume_out_of_a_swarm_run(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "runs"
    argv = ["swarm", "Review attention", "--corpus", str(corpus), "--runs-dir", str(runs)]
    assert main([*argv, "--out", str(tmp_path / "first")]) == 0
    assert main(["resume", "latest", "--runs-dir", str(runs), "--out", str(tmp_path / "b")]) == 0
    assert (tmp_path / "b" / "answer.md").read_text() == (
        tmp_path / "first" / "answer.md"
    ).read_text()


def test_resume_out_of_a_plan_run_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "runs"
    with Swarm(runs_dir=runs) as swarm:

        @swarm.role("w")
        async def work(ctx: SubtaskContext) -> dict[str, str]:
            return {"ok": "yes"}

        swarm.run_sync(Plan(subtasks=[Subtask(id="a", role="w")]))
    out = tmp_path / "out"
    assert main(["resume", "latest", "--runs-dir", str(runs), "--out", str(out)]) == 2
    assert "writes no files; drop --out" in _one_line(capsys)
    assert not out.exists()


def test_a_folder_another_run_writes_into_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before, two runs with one --out wrote into it at once, mixing their files."""
    out, runs = tmp_path / "out", tmp_path / "runs"
    with hold_out(out):  # a run holds it
        assert main([*ANALYZE, "--out", str(out), "--runs-dir", str(runs)]) == 2
        line = _one_line(capsys)
        assert f"--out {out}: another run (process {os.getpid()}" in line
        assert "give another --out" in line
        assert not runs.exists() and os.listdir(out) == [LOCK_NAME]
    assert not out.exists()  # the holder made it and wrote nothing: gone again


def test_the_lock_of_a_run_that_died_is_taken_over(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    (out / LOCK_NAME).write_text(f"{dead.stdout.strip()}\nkimmy analyze …\n")
    assert main([*ANALYZE, "--out", str(out), "--no-store"]) == 0
    assert (out / "report.md").stat().st_size > 0 and not (out / LOCK_NAME).exists()
