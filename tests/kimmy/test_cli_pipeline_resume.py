"""`kimmy resume` of an interrupted `kimmy analyze` / `kimmy review` run: a real `kimmy`
process is stopped mid-pipeline (Ctrl-C, or kill -9), and the resumed run writes exactly the
files an unbroken run writes, running each unfinished subtask once and nothing twice.

The process holds chosen sub-agents forever (`tests.support.pipeline_hold`), so it is
stopped at a known point: every subtask that does not depend on the held ones is done.
"""

from __future__ import annotations

import base64
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kimmy_swarm.cli.app import main
from kimmy_swarm.swarm.store import RunStore
from tests.agents.review.conftest import ICLR_JSON
from tests.support.openai_server import OpenAIServer, probes_honoured
from tests.support.review_model import ReviewModel
from tests.support.signals import default_sigint

ROOT = Path(__file__).resolve().parents[2]

#: Each pipeline's command (without --out / --runs-dir), and the subtasks held: one
#: fact-check, so the run stops with some checks done and the reports not started.
PIPELINES = {
    "analysis": (
        ["analyze", "statsmodels:longley", "sklearn:iris"],
        "check:2",
    ),
    "review": (
        ["review", str(ICLR_JSON), "--topic", "attention", "--max-papers", "6", "--year", "2017"],
        "check:theme-1",
    ),
    # in model mode each analyst runs pandas in the sandbox (no briefs: the model calls the
    # tools itself): one dataset is enough there
    "analysis-model": (["analyze", "statsmodels:longley", "--no-briefs"], "check:1"),
}


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("KIMMY_BASE_URL", "KIMMY_MODEL", "KIMMY_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def _files(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def _held_and_after(runs: Path, pattern: str) -> tuple[set[str], set[str]]:
    """The subtasks of the stored run that match `pattern`, and those plus their dependents."""
    import fnmatch

    with RunStore(runs, create=False) as store:
        subtasks = store.load_run("latest").plan.subtasks
    held = {s.id for s in subtasks if fnmatch.fnmatchcase(s.id, pattern)}
    after = set(held)
    while True:
        more = {s.id for s in subtasks if s.id not in after and after & set(s.depends_on)}
        if not more:
            return held, after
        after |= more


def _reference(tmp: Path, pipeline: str, *extra: str) -> tuple[Path, set[str], set[str]]:
    """An unbroken run: its output folder, the subtasks the hold holds, and the ids of
    those that finish in spite of it."""
    args, pattern = PIPELINES[pipeline]
    out, runs = tmp / "unbroken", tmp / "unbroken-runs"
    assert main([*args, *extra, "--out", str(out), "--runs-dir", str(runs)]) == 0
    held, after = _held_and_after(runs, pattern)
    with RunStore(runs, create=False) as store:
        ids = set(store.load_run("latest").results)
    assert held and after < ids  # the hold stops the run mid-way, not at its start or end
    return out, held, ids - after


def _query(db: Path, sql: str) -> set[str]:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
            return {row[0] for row in con.execute(sql)}
    except sqlite3.OperationalError:  # not created yet
        return set()


def _start_and_stop(
    tmp: Path, pipeline: str, how: signal.Signals, held: set[str], done: set[str], *extra: str
) -> tuple[Path, Path]:
    """Start the pipeline in a `kimmy` process; once the held subtasks have started and all
    the rest that can finish is `done`, signal it. Returns the output and runs folders."""
    args, pattern = PIPELINES[pipeline]
    out, runs, log = tmp / "resumed", tmp / "runs", tmp / "held.log"
    db = runs / "kimmy.db"
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.support.pipeline_hold", str(log), pattern, *args, *extra,
         "--out", str(out), "--runs-dir", str(runs), "--json"],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, preexec_fn=default_sigint,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            started = _query(db, "SELECT subtask_id FROM attempts")
            finished = _query(db, "SELECT id FROM results WHERE status = 'done'")
            if held <= started and finished >= done:
                break
            time.sleep(0.05)
        assert proc.poll() is None, proc.communicate()[1]
        assert held <= started and finished >= done, "the run did not reach the hold"
        proc.send_signal(how)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if how is signal.SIGINT:
        assert proc.returncode == 130, err
        assert "kimmy resume latest" in err and "Traceback" not in err
    else:
        assert proc.returncode == -signal.SIGKILL
    assert _query(db, "SELECT id FROM results WHERE status = 'done'") == done
    return out, runs


def _resume_and_compare(
    out: Path, runs: Path, reference: Path, held: set[str], *extra: str
) -> None:
    """`kimmy resume latest`: the unbroken run's files, byte for byte; the held subtasks
    ran again, every other subtask once in all."""
    with RunStore(runs, create=False) as store:
        run_id = store.load_run("latest").run_id
    assert main(["resume", "latest", "--runs-dir", str(runs), *extra]) == 0
    got, want = _files(out), _files(reference)
    assert sorted(got) == sorted(want)
    assert [name for name in want if got[name] != want[name]] == []
    with RunStore(runs, create=False) as store:
        stored = store.load_run(run_id)
        attempts = store.attempt_counts(run_id)
    assert stored.status.value == "completed" and stored.sessions == 2
    assert attempts == {i: 2 if i in held else 1 for i in stored.results}


Reference = tuple[Path, set[str], set[str]]


@pytest.fixture(scope="module")
def unbroken(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Reference]:
    """Each offline pipeline's unbroken run, made once for both ways of stopping it."""
    made: dict[str, Reference] = {}

    def get(pipeline: str) -> Reference:
        if pipeline not in made:
            made[pipeline] = _reference(tmp_path_factory.mktemp(pipeline), pipeline)
        return made[pipeline]

    return get


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "kill-9"])
@pytest.mark.parametrize("pipeline", ["analysis", "review"])
def test_interrupted_offline_pipeline_resumes_to_the_unbroken_files(
    tmp_path: Path, unbroken: Callable[[str], Reference], pipeline: str, how: signal.Signals
) -> None:
    if pipeline == "review" and not ICLR_JSON.exists():
        pytest.skip(f"the shared corpus is not at {ICLR_JSON}")
    reference, held, done = unbroken(pipeline)
    out, runs = _start_and_stop(tmp_path, pipeline, how, held, done)
    with RunStore(runs, create=False) as store:
        status = store.load_run("latest").status.value
    assert status == ("cancelled" if how is signal.SIGINT else "running")
    _resume_and_compare(out, runs, reference, held)


def _scripted_model(pipeline: str) -> Any:
    """The scripted model of a pipeline (skips where it cannot run here), behind a server
    that honours the CLI's capability probe."""
    if pipeline == "analysis":
        from kimmy_swarm.agents.tools.sandbox import sandbox_available
        from tests.support.analysis_model import AnalysisModel

        usable, why = sandbox_available()
        if not usable:
            pytest.skip(f"no isolated sandbox here (the analyst's run_python): {why}")
        # a repair turn
        return probes_honoured(AnalysisModel(bad_json="sklearn:iris", wrong_mean="(none)"))
    if not ICLR_JSON.exists():
        pytest.skip(f"the shared corpus is not at {ICLR_JSON}")
    return probes_honoured(ReviewModel())


@pytest.mark.parametrize("pipeline", ["analysis", "review"])
def test_model_mode_pipeline_resumes_after_kill_9_and_stores_no_secret(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], pipeline: str
) -> None:
    """Against the scripted model over HTTP, through a URL with credentials and an API key:
    neither is stored, so resume asks for the URL again; given it, the files are the
    unbroken run's."""
    with OpenAIServer(default=_scripted_model(pipeline)) as srv:
        url = srv.base_url.replace("http://", "http://kimmy:hunter2@")
        given = ("--base-url", url, "--model", "test-model", "--api-key", "sk-not-stored")
        name = "analysis-model" if pipeline == "analysis" else pipeline
        reference, held, done = _reference(tmp_path, name, *given)
        out, runs = _start_and_stop(tmp_path, name, signal.SIGKILL, held, done, *given)
        with sqlite3.connect(runs / "kimmy.db") as con:
            everything = "\n".join(con.iterdump())
        assert "hunter2" not in everything and "sk-not-stored" not in everything
        assert "kimmy:***@127.0.0.1" not in everything and "***@127.0.0.1" in everything
        capsys.readouterr()
        assert main(["resume", "latest", "--runs-dir", str(runs)]) == 2
        assert "--base-url" in capsys.readouterr().err  # the credentials are asked for again
        calls = len(srv.chat_requests)
        _resume_and_compare(out, runs, reference, held, "--base-url", url, "--api-key", "k")
        resumed = srv.chat_requests[calls:]
    assert resumed and {r.body["model"] for r in resumed} == {"test-model"}
    # the credentials given again reach the server (httpx sends a URL's user info as Basic)
    basic = "Basic " + base64.b64encode(b"kimmy:hunter2").decode()
    assert {r.headers.get("authorization") for r in resumed} == {basic}
