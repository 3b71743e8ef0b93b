"""Crash and resume: a 1,000-subtask run killed mid-run (SIGKILL, Ctrl-C), then resumed.

The guarantee under test: every subtask ends `done` exactly once — no result committed
before the crash is lost, no subtask committed `done` is executed again, and every
subtask not committed is executed in the resumed session, with correct upstream outputs.
The run lives in a subprocess (`tests/support/crash_driver.py`); each of its workers logs
its execution to a file when it starts, so executions can be told apart by session.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest

from kimmy_swarm.swarm import Swarm
from kimmy_swarm.swarm import events as ev
from kimmy_swarm.swarm.context import SubtaskContext
from kimmy_swarm.swarm.store import DB_NAME, RunStore
from tests.support import crash_driver
from tests.support.signals import default_sigint

DRIVER = Path(crash_driver.__file__)
RUN_ID = "crash-run"
N = crash_driver.LAYERS * crash_driver.WIDTH
TIMEOUT_S = 20.0

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


def _driver(tmp: Path, mode: str) -> list[str]:
    return [sys.executable, str(DRIVER), str(tmp / "runs"), str(tmp / "exec.log"), mode, RUN_ID]


def _n_done(db: Path) -> int:
    """Done results committed so far, read without taking any lock from the writer."""
    if not db.exists():
        return 0
    try:
        with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1.0)) as conn:
            (n,) = conn.execute(
                "SELECT COUNT(*) FROM results WHERE run_id = ? AND status = 'done'", (RUN_ID,)
            ).fetchone()
    except sqlite3.DatabaseError:  # the file or its tables are not created yet
        return 0
    return n


def _interrupt_midway(tmp: Path, sig: signal.Signals) -> tuple[subprocess.Popen[bytes], str]:
    """Start a run and send `sig` once 30% of its results are committed; returns the ended
    process and the end of its stderr."""
    proc = subprocess.Popen(
        _driver(tmp, "start"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=default_sigint,
    )
    db = tmp / "runs" / DB_NAME
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while _n_done(db) < 0.3 * N:
            if proc.poll() is not None:
                _, err = proc.communicate()
                pytest.fail(f"driver ended before the interrupt (rc {proc.returncode}): {err!r}")
            if time.monotonic() > deadline:
                pytest.fail("run did not reach 30% within the timeout")
            time.sleep(0.005)
        os.kill(proc.pid, sig)
        _, err = proc.communicate(timeout=TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc, err.decode(errors="replace")[-2000:]


def _read_log(tmp: Path, start: int = 0) -> list[str]:
    with open(tmp / "exec.log", "rb") as f:
        f.seek(start)
        return f.read().decode().split()


def _resume_and_check(tmp: Path) -> tuple[RunStore, set[str]]:
    """Resume the interrupted run to completion and check the exactly-once guarantee."""
    with RunStore(tmp / "runs") as store:
        committed = store.done_ids(RUN_ID)
        plan = store.load_run(RUN_ID).plan
    assert 0.3 * N <= len(committed) < N, "the interrupt did not land mid-run"
    # A result is committed only after its dependencies' results: what survived is closed
    # under dependencies.
    assert [
        s.id for s in plan.subtasks if s.id in committed and not set(s.depends_on) <= committed
    ] == []
    log_at_interrupt = (tmp / "exec.log").stat().st_size

    proc = subprocess.run(_driver(tmp, "resume"), capture_output=True, timeout=TIMEOUT_S)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    assert proc.stdout.decode().split() == ["completed"]

    resumed = _read_log(tmp, log_at_interrupt)
    assert not set(resumed) & committed, "subtasks committed done were executed again"
    assert set(resumed) == set(crash_driver.expected_values()) - committed
    assert [k for k, n in Counter(resumed).items() if n > 1] == []

    store = RunStore(tmp / "runs")
    stored = store.load_run(RUN_ID)
    want = crash_driver.expected_values()
    assert {k: r.status.value for k, r in stored.results.items()} == dict.fromkeys(want, "done")
    assert {k: r.output for k, r in stored.results.items()} == {
        k: {"v": v} for k, v in want.items()
    }
    done_events = Counter(
        e.result.id
        for e in store.events(RUN_ID, types=["subtask_finished"])
        if e.result.status.value == "done"
    )
    assert done_events == Counter(list(want)), "some subtask finished done more than once"
    seqs = [e.seq for e in store.events(RUN_ID)]
    assert seqs == list(range(len(seqs)))
    assert stored.status.value == "completed"
    assert stored.sessions == 2
    return store, committed


def test_sigkill_mid_run_then_resume_runs_each_subtask_done_exactly_once(tmp_path: Path) -> None:
    proc, _ = _interrupt_midway(tmp_path, signal.SIGKILL)
    assert proc.returncode == -signal.SIGKILL
    with RunStore(tmp_path / "runs") as store:
        assert store.load_run(RUN_ID).status.value == "running"  # killed: nothing marked it
        # ...but its process is gone, so listings call it interrupted (resumable)
        assert [r.interrupted for r in store.list_runs()] == [True]
    store, committed = _resume_and_check(tmp_path)
    with store:
        attempts = store._db.execute(
            "SELECT subtask_id, session FROM attempts WHERE run_id = ?", (RUN_ID,)
        ).fetchall()
    # The store's own record agrees: session 2 started each uncommitted subtask once.
    second = Counter(k for k, session in attempts if session == 2)
    assert second == Counter(set(crash_driver.expected_values()) - committed)


def test_ctrl_c_cancels_the_run_and_resume_completes_it(tmp_path: Path) -> None:
    proc, err = _interrupt_midway(tmp_path, signal.SIGINT)
    assert proc.returncode == 130, err
    with RunStore(tmp_path / "runs") as store:
        stored = store.load_run(RUN_ID)
        assert stored.status.value == "cancelled"
        # Every sub-agent started before Ctrl-C recorded a result (done, or cancelled when
        # it was in flight); none is left looking like it is still running.
        started = set(_read_log(tmp_path))
        assert started <= set(stored.results)
        # Ones dispatched in the very loop iteration of the Ctrl-C never reached their
        # worker: they are recorded cancelled, with no attempt.
        unstarted = {k: stored.results[k] for k in set(stored.results) - started}
        assert all((r.status.value, r.attempts) == ("cancelled", 0) for r in unstarted.values())
        statuses = Counter(r.status.value for r in stored.results.values())
        assert set(statuses) <= {"done", "cancelled"}
        (finished,) = store.events(RUN_ID, types=["run_finished"])
        assert finished.status.value == "cancelled"
        counts = dict(finished.counts)
        assert counts.pop("pending", 0) == N - len(stored.results)
        assert counts == dict(statuses)
    store, _ = _resume_and_check(tmp_path)
    store.close()


# --- in process: a cancelled spawning parent runs again --------------------------------------


class DoneIds:
    """A sink: ids whose `done` result is committed (sinks see events after the commit)."""

    def __init__(self) -> None:
        self.done: set[str] = set()

    def handle(self, event: ev.Event) -> None:
        if event.type == "subtask_finished" and event.result.status.value == "done":
            self.done.add(event.result.id)


async def _until(cond: Callable[[], bool]) -> None:
    async with asyncio.timeout(TIMEOUT_S):
        while not cond():
            await asyncio.sleep(0.001)


def _spawner(tmp: Path, calls: list[str], *, block: bool) -> tuple[Swarm, asyncio.Event]:
    """A parent that spawns k0..k2 to feed `write`, then (if `block`) waits for ever."""
    gate = asyncio.Event()

    async def plan(ctx: SubtaskContext) -> str:
        calls.append(ctx.id)
        ctx.spawn([{"id": f"k{i}", "role": "work"} for i in range(3)], feeds=["write"])
        if block:
            await asyncio.Event().wait()
        return "planned"

    async def slow(ctx: SubtaskContext) -> str:
        calls.append(ctx.id)
        await gate.wait()
        return "slow"

    async def work(ctx: SubtaskContext) -> int:
        calls.append(ctx.id)
        return int(ctx.id[1:])

    async def write(ctx: SubtaskContext) -> list[str]:
        calls.append(ctx.id)
        return sorted(ctx.upstream)

    roles = {"plan": plan, "slow": slow, "work": work, "write": write}
    return Swarm(runs_dir=tmp, roles=roles), gate


async def test_parent_rerun_after_cancel_respawns_without_effect(tmp_path: Path) -> None:
    plan = {
        "subtasks": [
            {"id": "p", "role": "plan"},
            {"id": "s", "role": "slow"},
            {"id": "write", "role": "write", "depends_on": ["s"]},
        ]
    }
    calls: list[str] = []
    swarm, gate = _spawner(tmp_path, calls, block=True)
    sink = DoneIds()
    task = asyncio.create_task(swarm.execute(plan, run_id=RUN_ID, sinks=[sink]))
    await _until(lambda: {"k0", "k1", "k2"} <= sink.done)
    gate.set()  # `write` now runs to the end while its feeder `p` is still running
    await _until(lambda: "write" in sink.done)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        async with asyncio.timeout(TIMEOUT_S):
            await task
    with RunStore(tmp_path) as store:
        assert store.load_run(RUN_ID).results["p"].status.value == "cancelled"

    calls.clear()
    swarm, _ = _spawner(tmp_path, calls, block=False)
    async with asyncio.timeout(TIMEOUT_S):
        result = await swarm.resume(RUN_ID)
    assert calls == ["p"]  # only the cancelled parent ran; its spawn is the stored one
    assert result.ok, result.results["p"].error
    assert result.outputs["write"] == ["k0", "k1", "k2", "s"]


async def test_cancel_in_the_commit_that_releases_a_subtask_still_records_it(
    tmp_path: Path,
) -> None:
    """Ctrl-C lands while the group commit of `a` releases `b`: `b` is cancelled before it
    starts, is recorded `cancelled` (not left `running`), and a resume runs it."""
    task: asyncio.Task[object] | None = None

    class CancelAfterA:
        def handle(self, event: ev.Event) -> None:
            if event.type == "subtask_finished" and event.result.id == "a":
                assert task is not None
                task.cancel()

    async def work(ctx: SubtaskContext) -> str:
        return ctx.id + "".join(sorted(ctx.upstream.values()))

    swarm = Swarm(runs_dir=tmp_path, roles={"work": work})
    plan = {
        "subtasks": [{"id": "a", "role": "work"}, {"id": "b", "role": "work", "depends_on": ["a"]}]
    }
    task = asyncio.create_task(swarm.execute(plan, run_id=RUN_ID, sinks=[CancelAfterA()]))
    with pytest.raises(asyncio.CancelledError):
        async with asyncio.timeout(TIMEOUT_S):
            await task
    with RunStore(tmp_path) as store:
        (finished,) = store.events(RUN_ID, types=["run_finished"])
        stored = store.load_run(RUN_ID)
    assert finished.status.value == "cancelled"
    assert finished.counts == {"done": 1, "cancelled": 1}
    assert {k: r.status.value for k, r in stored.results.items()} == {
        "a": "done",
        "b": "cancelled",
    }
    async with asyncio.timeout(TIMEOUT_S):
        result = await swarm.resume(RUN_ID)
    assert result.ok and result.outputs == {"a": "a", "b": "ba"}
