"""`kimmy approvals` / `approve` / `deny` against real `kimmy swarm` processes: the
orchestrator's plan past `--approve-spawns-over` waits for a person; a run killed (-9) while
it waits resumes with the call still waiting (asked once in all); an approval from another
process lets the resumed run finish; a denial reaches the orchestrator's conversation."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kimmy_swarm.cli.app import main
from kimmy_swarm.swarm import Approval
from kimmy_swarm.swarm.errors import RunNotFoundError
from kimmy_swarm.swarm.store import RunStore
from tests.agents.review.conftest import ICLR_JSON
from tests.support.signals import default_sigint

ROOT = Path(__file__).resolve().parents[2]
GOAL = "Review the papers on attention"


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("KIMMY_BASE_URL", "KIMMY_MODEL", "KIMMY_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def _kimmy(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "kimmy_swarm.cli", *args, "--json"],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, preexec_fn=default_sigint,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _swarm(tmp: Path) -> subprocess.Popen[str]:
    return _kimmy("swarm", GOAL, "--corpus", str(ICLR_JSON), "--year", "2017",
                  "--approve-spawns-over", "1", "--out", str(tmp / "out"),
                  "--runs-dir", str(tmp / "runs"))  # fmt: skip


def _until(proc: subprocess.Popen[str], what: str, found: Callable[[RunStore], Any]) -> Any:
    """Poll the store (while `proc` runs) until `found` gives something truthy."""
    runs = Path(proc.args[proc.args.index("--runs-dir") + 1])
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()[1]
        if (runs / "kimmy.db").is_file():
            with RunStore(runs, create=False) as store, contextlib.suppress(RunNotFoundError):
                value = found(store)
                if value:
                    return value
        time.sleep(0.1)
    raise AssertionError(f"{what} did not happen")


def _waiting(proc: subprocess.Popen[str]) -> list[Approval]:
    """The calls of the newest run that wait, once there are some."""
    return _until(proc, "a call waiting", lambda store: store.approvals("latest", pending=True))


def _asked_again(run_id: str, proc: subprocess.Popen[str]) -> None:
    """Wait until the resumed session's sub-agent waits on its call again."""

    def asked_twice(store: RunStore) -> bool:
        return len(list(store.events(run_id, types=["approval_requested"]))) == 2

    _until(proc, "asking again", asked_twice)


@contextlib.contextmanager
def _stopping(proc: subprocess.Popen[str]) -> Iterator[subprocess.Popen[str]]:
    """`proc`, killed on the way out if it still runs."""
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@contextlib.contextmanager
def _asking(tmp: Path) -> Iterator[tuple[subprocess.Popen[str], Approval]]:
    """A `kimmy swarm` process whose plan waits for a person, and the call that waits."""
    with _stopping(_swarm(tmp)) as proc:
        (call,) = _waiting(proc)
        yield proc, call


def test_a_run_killed_while_a_call_waits_resumes_with_it_waiting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "runs"
    with _asking(tmp_path) as (proc, call):
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    assert call.tool == "spawn" and call.arguments["over"] == 1
    run_id = call.run_id
    # listed as waiting while nothing runs
    assert main(["approvals", "--runs-dir", str(runs)]) == 0
    listed = capsys.readouterr().out
    assert f"{run_id}  a1    pending" in listed and "kimmy approve RUN CALL" in listed
    with _stopping(_kimmy("resume", run_id, "--runs-dir", str(runs))) as resumed:
        _asked_again(run_id, resumed)
        with RunStore(runs, create=False) as store:
            (again,) = store.approvals(run_id)
            assert store.load_run(run_id).sessions == 2
        assert again.call_id == "a1" and again.pending  # the same call: asked once
        assert main(["approve", run_id, "a1", "--runs-dir", str(runs)]) == 0
        assert "approved a1 (spawn)" in capsys.readouterr().out
        _, err = resumed.communicate(timeout=240)
    assert resumed.returncode in (0, 1), err
    assert (tmp_path / "out" / "answer.md").is_file()
    with RunStore(runs, create=False) as store:
        kinds = [e.type for e in store.events(run_id)]
        (answered,) = store.approvals(run_id)
    # shown waiting in each session, answered once
    assert kinds.count("approval_requested") == 2 and kinds.count("approval_decided") == 1
    assert answered.status == "approved" and answered.decision.by == "cli"
    assert main(["approvals", run_id, "--all", "--runs-dir", str(runs), "--json"]) == 0
    (row,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert row["status"] == "approved" and row["by"] == "cli"


def test_a_denied_plan_is_the_orchestrators_tool_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "runs"
    with _asking(tmp_path) as (proc, call):
        reason = "read at most ten papers"
        assert main(["deny", call.run_id, "a1", "--reason", reason, "--runs-dir", str(runs)]) == 0
        proc.communicate(timeout=240)
    assert proc.returncode == 1  # the run ended without its review
    with RunStore(runs, create=False) as store:
        told = [m["content"] for t in store.events(call.run_id, types=["agent_turn"])
                for m in t.messages if m.get("role") == "tool"]  # fmt: skip
    denied = "a person denied this turn's plan to spawn sub-agents: read at most ten papers"
    assert any(denied in text for text in told)
    answer = (tmp_path / "out" / "answer.md").read_text()
    assert "PlanDeniedError: a person denied the plan (read at most ten papers)" in answer


def test_answers_that_cannot_be_given_are_one_line_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "runs"
    with _asking(tmp_path) as (_, call):
        run_id = call.run_id
        cases = [
            (["approve", run_id, "a7"], "has no call 'a7' asking for approval; waiting: a1"),
            (["approve", run_id, "a1", "--args", "{oops"], "--args is not JSON"),
            (["approve", run_id, "a1", "--args", "[1, 2]"], "--args must be a JSON object"),
            (["approve", "nosuchrun", "a1"], "no run with id 'nosuchrun'"),
            (["deny", run_id, "a1", "--reason", " "], "give a reason"),
        ]
        for args, message in cases:
            assert main([*args, "--runs-dir", str(runs)]) == 2, args
            err = capsys.readouterr().err
            assert message in err and "Traceback" not in err, (args, err)
        assert main(["approve", run_id, "a1", "--runs-dir", str(runs)]) == 0
        assert main(["deny", run_id, "a1", "--reason", "late", "--runs-dir", str(runs)]) == 2
        assert "was approved already (by cli)" in capsys.readouterr().err
