"""The durable run store: schema, atomic batches, final `done` results, lookups, and a
run through `Swarm(runs_dir=...)` that is stored event for event and resumes cleanly."""

from __future__ import annotations

import asyncio
import re
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from kimmy_swarm.swarm import Swarm
from kimmy_swarm.swarm import events as ev
from kimmy_swarm.swarm.context import SubtaskContext
from kimmy_swarm.swarm.errors import (
    AmbiguousRunIdError,
    ConfigError,
    RunNotFoundError,
    StoreError,
)
from kimmy_swarm.swarm.schema import Plan, RunStatus, Subtask, SubtaskResult, SubtaskStatus, Usage
from kimmy_swarm.swarm.store import DB_NAME, RunStore

RUN = "20250101-000000-abcdef"
PLAN = Plan(
    goal="a report",
    subtasks=[
        Subtask(id="a", role="work"),
        Subtask(id="b", role="work", depends_on=["a"]),
        Subtask(id="c", role="work", depends_on=["b"]),
    ],
)
SETTINGS = {"max_concurrency": 4, "budget": {"max_subagents": None}}


def started(seq: int, sid: str, attempt: int = 1) -> ev.SubtaskStarted:
    return ev.SubtaskStarted(
        run_id=RUN, seq=seq, ts=1.0, subtask_id=sid, role="work", attempt=attempt
    )


def finished(seq: int, sid: str, status: str = "done", output: Any = None) -> ev.SubtaskFinished:
    result = SubtaskResult(id=sid, role="work", status=SubtaskStatus(status), output=output)
    return ev.SubtaskFinished(run_id=RUN, seq=seq, ts=2.0, result=result)


@pytest.fixture
def store(tmp_path: Path) -> RunStore:
    with RunStore(tmp_path / "runs") as s:
        s.create_run(RUN, PLAN, SETTINGS)
        s.begin_session(RUN)
        yield s


def rows(store: RunStore, sql: str) -> list[tuple[Any, ...]]:
    return store._db.execute(sql).fetchall()


# --- opening ------------------------------------------------------------------------------


def test_creates_missing_runs_dir_and_a_wal_database(tmp_path: Path) -> None:
    runs = tmp_path / "deep" / "runs"
    with RunStore(runs) as store:
        assert store.path == runs / DB_NAME
    assert (runs / DB_NAME).is_file()
    with sqlite3.connect(runs / DB_NAME) as conn:  # WAL is a property of the file
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)


@pytest.mark.parametrize("where", ["is_a_file", "under_a_file"])
def test_unusable_runs_dir_is_a_config_error_naming_it(tmp_path: Path, where: str) -> None:
    blocker = tmp_path / "plain.txt"
    blocker.write_text("not a directory")
    bad = blocker if where == "is_a_file" else blocker / "runs"
    with pytest.raises(ConfigError, match=re.escape(str(bad))):
        RunStore(bad)


def test_a_file_that_is_not_sqlite_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / DB_NAME).write_bytes(b"garbage, not a database " * 100)
    with pytest.raises(ConfigError, match=DB_NAME):
        RunStore(tmp_path)


def test_create_false_does_not_create_a_store(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no runs"):
        RunStore(tmp_path / "nothing", create=False)
    assert not (tmp_path / "nothing").exists()


# --- writing ------------------------------------------------------------------------------


def test_append_writes_attempts_results_and_run_status(store: RunStore) -> None:
    usage = Usage(prompt_tokens=3, completion_tokens=4, total_tokens=7, model_calls=1)
    store.append(RUN, [started(1, "a"), finished(2, "a", output={"x": 1})])
    store.append(RUN, [started(3, "b"), started(4, "b", attempt=2)])
    store.append(
        RUN,
        [ev.RunFinished(run_id=RUN, seq=5, ts=3.0, status=RunStatus.PARTIAL, usage=usage)],
    )
    assert rows(store, "SELECT subtask_id, attempt, session FROM attempts ORDER BY rowid") == [
        ("a", 1, 1),
        ("b", 1, 1),
        ("b", 2, 1),
    ]
    assert rows(store, "SELECT id, status FROM results") == [("a", "done")]
    stored = store.load_run(RUN)
    assert stored.results["a"].output == {"x": 1}
    assert stored.status is RunStatus.PARTIAL
    assert stored.next_seq == 6
    (u,) = rows(store, "SELECT usage FROM runs")
    assert Usage.model_validate_json(u[0]) == usage


def test_spawn_adds_subtasks_in_order_and_edges_to_existing_ones(store: RunStore) -> None:
    kids = [Subtask(id=f"k{i}", role="work", parent="a", depth=1) for i in range(3)]
    spawn = ev.SubtasksSpawned(
        run_id=RUN, seq=1, ts=1.0, parent_id="a", subtasks=kids, edges=[("k0", "c"), ("k2", "c")]
    )
    store.append(RUN, [spawn])
    plan = store.load_run(RUN).plan
    assert [s.id for s in plan.subtasks] == ["a", "b", "c", "k0", "k1", "k2"]
    assert plan.by_id()["c"].depends_on == ["b", "k0", "k2"]
    assert plan.by_id()["k1"].parent == "a"
    assert store.list_runs()[0].n_subtasks == 6


def test_a_batch_is_one_transaction(store: RunStore) -> None:
    store.append(RUN, [started(1, "a")])
    bad = [
        finished(2, "a"),
        ev.RunFinished(run_id=RUN, seq=3, ts=3.0, status=RunStatus.COMPLETED),
        started(1, "b"),  # seq 1 is taken: the whole batch must go
    ]
    with pytest.raises(sqlite3.IntegrityError):
        store.append(RUN, bad)
    stored = store.load_run(RUN)
    assert stored.results == {}
    assert stored.status is RunStatus.RUNNING
    assert stored.next_seq == 2
    assert store.attempt_counts(RUN) == {"a": 1}
    store.append(RUN, [finished(2, "a")])  # the connection is usable after the rollback
    assert store.done_ids(RUN) == {"a"}


def test_done_is_final_but_other_results_are_replaced(store: RunStore) -> None:
    store.append(RUN, [finished(1, "a", "done", 1), finished(2, "b", "failed")])
    store.append(RUN, [finished(3, "a", "failed"), finished(4, "a", "done", 2)])
    store.append(RUN, [finished(5, "b", "cancelled")])
    store.append(RUN, [finished(6, "b", "done", 3), finished(7, "b", "skipped")])
    results = store.load_run(RUN).results
    assert (results["a"].status, results["a"].output) == (SubtaskStatus.DONE, 1)
    assert (results["b"].status, results["b"].output) == (SubtaskStatus.DONE, 3)


def test_create_run_twice_is_a_config_error_and_keeps_the_first(store: RunStore) -> None:
    with pytest.raises(ConfigError, match=RUN):
        store.create_run(RUN, Plan(subtasks=[Subtask(id="z", role="work")]), {})
    assert [s.id for s in store.load_run(RUN).plan.subtasks] == ["a", "b", "c"]


# --- reading ------------------------------------------------------------------------------


def test_load_run_returns_plan_settings_and_sessions(store: RunStore) -> None:
    stored = store.load_run(RUN)
    assert stored.plan == PLAN
    assert stored.settings == SETTINGS
    assert (stored.status, stored.sessions, stored.next_seq) == (RunStatus.RUNNING, 1, 0)


def test_list_runs_counts_subtasks_and_done(store: RunStore) -> None:
    store.create_run("20250102-000000-123456", Plan(subtasks=[Subtask(id="x", role="w")]), {})
    store.append(RUN, [finished(0, "a"), finished(1, "b", "failed")])
    runs = store.list_runs()
    assert [(r.run_id, r.n_subtasks, r.n_done) for r in runs] == [
        ("20250102-000000-123456", 1, 0),
        (RUN, 3, 1),
    ]
    assert [r.run_id for r in store.list_runs(limit=1)] == ["20250102-000000-123456"]


def test_resolve_by_prefix_latest_and_unknown(store: RunStore) -> None:
    other = "20250101-000000-abffff"
    store.create_run(other, PLAN, {})
    assert store.resolve(RUN) == RUN
    assert store.resolve("20250101-000000-abc") == RUN
    assert store.resolve("latest") == other
    with pytest.raises(RunNotFoundError, match=f"{other}.*{RUN}|{RUN}.*{other}"):
        store.resolve("20250101-000000-ab")  # ambiguous: both candidates named
    with pytest.raises(RunNotFoundError, match="nope") as info:
        store.load_run("nope")
    assert RUN in str(info.value)


def test_an_ambiguous_prefix_names_its_runs_newest_first(store: RunStore) -> None:
    others = [f"20250101-00000{i}-abc{i:03d}" for i in range(1, 7)]
    for run_id in others:
        store.create_run(run_id, PLAN, {})
    with pytest.raises(AmbiguousRunIdError) as info:
        store.resolve("2025")
    assert isinstance(info.value, RunNotFoundError)  # callers that catch "no run" still do
    assert info.value.matches[0] == others[-1] and len(info.value.matches) == 7
    message = str(info.value)
    assert message.startswith("run id prefix '2025' is ambiguous: it matches 7 runs (")
    assert others[-1] in message and "… (2 more)" in message and RUN not in message


def test_latest_in_an_empty_store_is_not_found(tmp_path: Path) -> None:
    with RunStore(tmp_path) as store, pytest.raises(RunNotFoundError, match="latest"):
        store.resolve("latest")


def test_events_round_trip_and_filter(store: RunStore) -> None:
    batch = [
        ev.RunStarted(run_id=RUN, seq=0, ts=0.5, goal="g", n_subtasks=3, settings={"k": [1]}),
        started(1, "a"),
        finished(2, "a", output={"deep": [1, None, "x"]}),
        ev.RunFinished(run_id=RUN, seq=3, ts=4.0, status=RunStatus.COMPLETED, counts={"done": 1}),
    ]
    store.append(RUN, batch)
    assert list(store.events(RUN)) == batch
    assert list(store.events("latest", types=["subtask_started", "run_finished"])) == [
        batch[1],
        batch[3],
    ]


def test_attempt_counts_add_up_over_sessions(store: RunStore) -> None:
    store.append(RUN, [started(0, "a"), started(1, "b")])
    assert store.begin_session(RUN) == 2
    store.append(RUN, [started(2, "b"), started(3, "c")])
    assert store.attempt_counts(RUN) == {"a": 1, "b": 2, "c": 1}
    assert rows(store, "SELECT session FROM attempts WHERE subtask_id = 'c'") == [(2,)]
    assert store.load_run(RUN).sessions == 2
    with pytest.raises(RunNotFoundError):
        store.begin_session("nope")


# --- through Swarm ----------------------------------------------------------------------


class Recorder:
    def __init__(self) -> None:
        self.events: list[ev.Event] = []

    def handle(self, event: ev.Event) -> None:
        self.events.append(event)


def spawning_swarm(tmp_path: Path, calls: list[str]) -> Swarm:
    async def plan(ctx: SubtaskContext) -> str:
        calls.append(ctx.id)
        ctx.spawn([{"id": f"k{i}", "role": "work"} for i in range(3)], feeds=["write"])
        return "planned"

    async def work(ctx: SubtaskContext) -> int:
        calls.append(ctx.id)
        await asyncio.sleep(0)
        return int(ctx.id[1:])

    async def write(ctx: SubtaskContext) -> dict[str, Any]:
        calls.append(ctx.id)
        return dict(sorted(ctx.upstream.items()))

    return Swarm(runs_dir=tmp_path, roles={"plan": plan, "work": work, "write": write})


SPAWN_PLAN = {
    "goal": "spawn and write",
    "subtasks": [
        {"id": "plan", "role": "plan"},
        {"id": "w0", "role": "work"},
        {"id": "write", "role": "write", "depends_on": ["plan", "w0"]},
    ],
}


async def test_a_run_is_stored_event_for_event_and_resume_reruns_nothing(tmp_path: Path) -> None:
    calls: list[str] = []
    swarm = spawning_swarm(tmp_path, calls)
    sink = Recorder()
    async with asyncio.timeout(10):
        result = await swarm.execute(SPAWN_PLAN, run_id=RUN, sinks=[sink])
    assert result.ok
    assert result.outputs["write"] == {"k0": 0, "k1": 1, "k2": 2, "plan": "planned", "w0": 0}
    with RunStore(tmp_path) as store:
        stored_events = list(store.events(RUN))
        stored = store.load_run(RUN)
    assert stored_events == sink.events  # sinks see exactly what was committed
    assert [e.seq for e in stored_events] == list(range(len(stored_events)))
    assert stored.results == result.results
    assert stored.status is RunStatus.COMPLETED
    assert [s.id for s in stored.plan.subtasks] == ["plan", "w0", "write", "k0", "k1", "k2"]
    assert stored.plan.by_id()["write"].depends_on == ["plan", "w0", "k0", "k1", "k2"]

    n_calls = len(calls)
    async with asyncio.timeout(10):
        again = await swarm.resume(RUN, sinks=[resumed := Recorder()])
    assert len(calls) == n_calls  # nothing ran again
    assert again.ok and again.results == result.results
    assert [e.type for e in resumed.events] == ["run_started", "run_finished"]
    assert resumed.events[0].seq == len(stored_events)
    assert resumed.events[0].resumed is True
    with RunStore(tmp_path) as store:
        assert store.attempt_counts(RUN) == dict.fromkeys(result.results, 1)
        assert store.load_run(RUN).sessions == 2


async def test_a_failed_commit_stops_the_run_and_releases_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []

    async def work(ctx: SubtaskContext) -> int:
        calls.append(ctx.id)
        return len(ctx.upstream)

    chain = {
        "subtasks": [
            {"id": f"s{i}", "role": "work", "depends_on": [f"s{i - 1}"] if i else []}
            for i in range(4)
        ]
    }
    append = RunStore.append
    n_appends = 0

    def failing_second_append(self: RunStore, run_id: str, events: Any) -> None:
        nonlocal n_appends
        n_appends += 1
        if n_appends == 2:  # the batch holding s0's result
            raise sqlite3.OperationalError("disk I/O error")
        append(self, run_id, events)

    monkeypatch.setattr(RunStore, "append", failing_second_append)
    swarm = Swarm(runs_dir=tmp_path, roles={"work": work})
    sink = Recorder()
    with pytest.raises(StoreError, match="disk I/O") as raised:
        async with asyncio.timeout(10):
            await swarm.execute(chain, run_id=RUN, sinks=[sink])
    assert isinstance(raised.value.__cause__, sqlite3.OperationalError)
    assert calls == ["s0"]  # s0's result never became durable: s1 was not released
    with RunStore(tmp_path) as store:
        stored = store.load_run(RUN)
        assert list(store.events(RUN)) == sink.events  # sinks saw only what was stored
    assert stored.results == {}
    assert stored.status is RunStatus.CANCELLED
    assert "disk I/O error" in (stored.stop_reason or "")

    monkeypatch.setattr(RunStore, "append", append)
    async with asyncio.timeout(10):
        result = await swarm.resume(RUN)
    assert result.ok
    assert calls == ["s0", "s0", "s1", "s2", "s3"]


async def test_deadline_in_the_commit_iteration_cancels_the_released_subtask(
    tmp_path: Path,
) -> None:
    """The deadline fires in the loop iteration whose group commit releases `b`: `b`'s task
    is cancelled before its first step, and must still record a result (the run used to
    wait for it for ever)."""

    async def a(ctx: SubtaskContext) -> int:
        time.sleep(0.1)  # blocks the loop past the deadline, so both land in one iteration
        return 1

    async def b(ctx: SubtaskContext) -> int:
        return 2

    swarm = Swarm(runs_dir=tmp_path, deadline_s=0.05, roles={"a": a, "b": b})
    plan = {"subtasks": [{"id": "a", "role": "a"}, {"id": "b", "role": "b", "depends_on": ["a"]}]}
    async with asyncio.timeout(5):
        result = await swarm.execute(plan, run_id=RUN)
    assert result.status is RunStatus.BUDGET_EXHAUSTED
    assert result.results["a"].status is SubtaskStatus.DONE
    # b ends recorded whichever way the race goes: cancelled as it was released, done, or
    # skipped when the deadline came before a's commit released it
    assert result.results["b"].status in (
        SubtaskStatus.CANCELLED,
        SubtaskStatus.DONE,
        SubtaskStatus.SKIPPED_BUDGET,
    )
    with RunStore(tmp_path) as store:
        assert store.load_run(RUN).results == result.results


def test_a_run_owned_by_a_live_process_cannot_be_resumed_twice(tmp_path: Path) -> None:
    import subprocess
    import sys

    with RunStore(tmp_path) as store:
        store.create_run(RUN, Plan(subtasks=[Subtask(id="a", role="work")]), {})
        store.begin_session(RUN)
        other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
        try:
            store._db.execute("UPDATE runs SET pid = ? WHERE run_id = ?", (other.pid, RUN))
            with pytest.raises(ConfigError, match=f"process {other.pid}"):
                store.begin_session(RUN)
        finally:
            other.kill()
            other.wait()
        assert store.begin_session(RUN) == 2  # its process is gone: the run is free again


async def test_a_batch_is_dumped_as_its_events_are_one_by_one(tmp_path: Path) -> None:
    """`dump_events` (one serializer call per batch, in the writer thread) writes exactly
    the bytes of `model_dump_json` per event, for every kind a run emits, and reads back."""
    from kimmy_swarm.swarm.errors import ModelServerError
    from kimmy_swarm.swarm.llm import ScriptedChat
    from tests.support.scheduling import Recorder, make_plan, make_swarm

    calls = [0]

    async def flaky(ctx: SubtaskContext) -> dict[str, Any]:
        calls[0] += 1
        if calls[0] == 1:
            raise ModelServerError("502 on the first attempt", status=502)  # retried
        await ctx.model.chat([{"role": "user", "content": ctx.id}])
        return {"id": ctx.id, "text": "é ✓ \\u0000"}

    rec = Recorder()
    swarm = make_swarm(roles={"work": flaky}, model=ScriptedChat.always("ok"), sinks=[rec],
                       runs_dir=tmp_path)  # fmt: skip
    await swarm.execute(make_plan(("a", []), ("b", ["a"])))
    kinds = {e.type for e in rec.events}
    assert {"run_started", "subtask_started", "subtask_retrying", "model_called",
            "subtask_finished", "run_finished"} <= kinds  # fmt: skip
    one_by_one = "[" + ",".join(e.model_dump_json() for e in rec.events) + "]"
    assert ev.dump_events(rec.events) == one_by_one
    assert ev.parse_events(ev.dump_events(rec.events)) == rec.events
