"""A newcomer's first steps with `kimmy` (issue 38): `--version` and `-h`, a run id prefix
that several runs share, a folder where `kimmy rollouts` wants a file, Ctrl-C on a command
that runs no run, Ctrl-C during `kimmy demo` (its message names each of its two runs and the
command that finishes it), and a folder corpus whose files say who wrote them and when."""

from __future__ import annotations

import os
import shlex
import signal
from collections.abc import Iterator, Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

from kimmy_swarm.agents import analysis, demo
from kimmy_swarm.cli.app import main
from kimmy_swarm.swarm import SubtaskContext, Swarm

RUN_IDS = ("20260101-000000-aaaaaa", "20260101-000001-bbbbbb", "20260102-000000-cccccc")


def run_cli(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


async def _echo(ctx: SubtaskContext) -> str:
    return f"said {ctx.id}"


@pytest.fixture
def sigint_raises() -> Iterator[None]:
    """Ctrl-C raises KeyboardInterrupt here even in a test run whose shell ignores SIGINT."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def test_version_and_h_on_the_root_and_on_commands(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(capsys, "--version") == (0, f"kimmy-swarm {version('kimmy-swarm')}\n", "")
    code, out, _ = run_cli(capsys, "-h")
    assert code == 0 and out.startswith("Usage: kimmy [OPTIONS] COMMAND") and "--version" in out
    for argv in (["show", "-h"], ["rollouts", "-h"], ["models", "list", "-h"]):
        code, out, err = run_cli(capsys, *argv)
        assert code == 0 and out.startswith(f"Usage: kimmy {' '.join(argv[:-1])} "), err
        assert "-h, --help" in out


def test_a_prefix_many_runs_share_is_ambiguous_and_lists_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "runs"
    swarm = Swarm(runs_dir=runs, roles={"echo": _echo})
    for run_id in RUN_IDS:
        swarm.run_sync({"goal": run_id, "subtasks": [{"id": "s", "role": "echo"}]}, run_id=run_id)
    code, out, err = run_cli(capsys, "show", "2026", "--runs-dir", runs)
    [line] = err.splitlines()
    assert code == 2 and out == ""
    assert "'2026' is ambiguous" in line and "matches 3 runs" in line
    assert all(run_id in line for run_id in RUN_IDS)
    code, _, err = run_cli(capsys, "rewards", "20260101", "--runs-dir", runs, "--json")
    assert code == 2 and "matches 2 runs" in err and RUN_IDS[2] not in err
    # a prefix of one run's id is that run; `latest` the newest; an unknown id is no run
    for given, shown in (("20260102", RUN_IDS[2]), ("20260101-000001", RUN_IDS[1])):
        code, out, err = run_cli(capsys, "show", given, "--runs-dir", runs)
        assert code == 0 and shown in out, err
    code, out, _ = run_cli(capsys, "show", "latest", "--runs-dir", runs)
    assert code == 0 and RUN_IDS[2] in out
    code, _, err = run_cli(capsys, "show", "2025", "--runs-dir", runs)
    assert code == 2 and "no run with id '2025'" in err


def test_rollouts_given_a_folder_says_it_is_a_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "runs"
    code, _, err = run_cli(capsys, "rollouts", tmp_path, "-k", "1", "--runs-dir", runs)
    [line] = err.splitlines()
    assert code == 2 and f"task file '{tmp_path}' is a folder" in line and "JSON file" in line
    task = tmp_path / "task.json"
    task.write_text('{"pipeline": "review", "corpus": "nowhere"}')
    code, _, err = run_cli(capsys, "rollouts", task, "--jsonl", tmp_path, "--runs-dir", runs)
    [line] = err.splitlines()
    assert code == 2 and f"--jsonl {tmp_path} is a folder" in line
    assert f"--jsonl {tmp_path / 'rollouts.jsonl'}" in line
    assert not runs.exists()  # refused before any rollout ran


def test_ctrl_c_on_a_command_that_runs_no_run_suggests_no_resume(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("fastapi")
    from kimmy_swarm.swarm import dashboard

    Swarm(runs_dir=tmp_path, roles={"echo": _echo}).run_sync(
        {"goal": "g", "subtasks": [{"id": "s", "role": "echo"}]}
    )

    def ctrl_c_serving(app: Any, sock: Any) -> None:
        sock.close()
        raise KeyboardInterrupt

    monkeypatch.setattr(dashboard, "serve", ctrl_c_serving)
    code, _, err = run_cli(capsys, "dashboard", "--runs-dir", tmp_path, "--port", "0")
    assert (code, err) == (130, "kimmy: interrupted\n")

    # a pipeline run with --no-store has nothing to resume either
    def ctrl_c_at_start(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(analysis, "run_analysis", ctrl_c_at_start)
    argv = ["analyze", "statsmodels:longley", "--out", tmp_path / "a", "--no-store"]
    code, _, err = run_cli(capsys, *argv)
    assert code == 130 and "not stored (--no-store)" in err and "kimmy resume" not in err


def test_ctrl_c_during_the_demo_names_each_half_and_resume_finishes_the_demo(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    sigint_raises: None,
) -> None:
    monkeypatch.setattr(demo, "DEMO_DATASETS", ("statsmodels:longley", "sklearn:iris"))
    run_analysis = analysis.run_analysis

    class CtrlC:
        """Presses Ctrl-C once, when the first analyst has finished."""

        sent = False

        def handle(self, event: Any) -> None:
            if event.type == "subtask_finished" and not self.sent:
                self.sent = True
                os.kill(os.getpid(), signal.SIGINT)

    def interrupted(config: Any, *, sinks: Sequence[Any] = (), **kw: Any) -> Any:
        return run_analysis(config, sinks=[*sinks, CtrlC()], **kw)

    monkeypatch.setattr(analysis, "run_analysis", interrupted)
    out, runs = tmp_path / "demo", tmp_path / "runs"
    code, _, err = run_cli(capsys, "demo", "--out", out, "--runs-dir", runs)
    assert code == 130, err
    lines = err.splitlines()  # the progress lines, then the message
    start = lines.index(
        "kimmy: interrupted; finished work is stored, but the demo is not finished:"
    )
    analysis_line, review_line = lines[start + 1 :]
    run_id = analysis_line.split("run ", 1)[1].split()[0]
    assert analysis_line == (
        f"  analysis: run {run_id} stopped: `kimmy resume {run_id} --runs-dir {runs}` "
        "finishes it, then runs the review"
    )
    assert review_line == "  review: not started (the analysis's resume runs it)"
    monkeypatch.setattr(analysis, "run_analysis", run_analysis)
    monkeypatch.setattr(demo, "DEMO_MAX_PAPERS", 3)  # a small review: fast
    # the command it names does what it says: the analysis run finishes, then the review runs
    code, said, err = run_cli(capsys, *shlex.split(analysis_line.split("`")[1])[1:])
    assert code == 0, err
    assert f"this run was the analysis of the demo in {out}; its review runs now" in said
    assert (out / "analysis" / "report.html").exists()
    assert (out / "review" / "review.md").exists()
    # the demo is finished: resuming its analysis again does not review again
    code, said, err = run_cli(capsys, "resume", run_id, "--runs-dir", runs)
    assert code == 0 and "review runs now" not in said, err


def test_a_folder_corpus_cites_the_authors_and_years_its_files_give(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = tmp_path / "papers"
    corpus.mkdir()
    (corpus / "attention.md").write_text(
        "---\ntitle: Attention Is All You Need\nauthors: [Ashish Vaswani, Noam Shazeer]\n"
        "year: 2017\n---\n\nWe propose the Transformer, a neural network for translation "
        "built on attention. It reaches 28.4 BLEU on translation.\n"
    )
    (corpus / "resnet.txt").write_text(
        "Title: Deep Residual Learning\nAuthors: Kaiming He, Xiangyu Zhang\nYear: 2016\n\n"
        "We present residual learning, a neural network design that eases the training of "
        "deep networks. It reaches 3.57 percent error.\n"
    )
    out = tmp_path / "review"
    argv = ["review", corpus, "--topic", "neural network", "--out", out, "--no-store"]
    code, _, err = run_cli(capsys, *argv)
    assert code == 0, err
    review = (out / "review.md").read_text()
    assert "Anonymous" not in review and "n.d." not in review
    assert "Ashish Vaswani, Noam Shazeer (2017). *Attention Is All You Need*." in review
    assert "Kaiming He, Xiangyu Zhang (2016). *Deep Residual Learning*." in review
