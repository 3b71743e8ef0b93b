"""The durable run store: SQLite in WAL mode under a runs directory.

Tables: `runs` (with the planned subtasks), `subtasks` (spawned ones), `edges` (dependencies
added by spawns), `attempts`, `events` (a JSON array per commit), and `results` (each
subtask's latest result: its status and the `subtask_finished` event holding it). The run's
journal hands over batches of events to `append`, which writes each in one transaction; only
after it returns is a result allowed to release its dependents. A process killed at any
instant leaves either the whole batch or none of it.

A `done` result is never overwritten (the upsert refuses), so a subtask can end done only once.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kimmy_swarm.swarm import events as ev
from kimmy_swarm.swarm._store_schema import SCHEMA, UPSERT_RESULT, RunSummary, StoredRun
from kimmy_swarm.swarm.approval_records import Approval, ApprovalError, Decision
from kimmy_swarm.swarm.errors import AmbiguousRunIdError, ConfigError, RunNotFoundError
from kimmy_swarm.swarm.schema import Plan, RunStatus, Subtask, SubtaskResult

DB_NAME = "kimmy.db"


def _with_edges(subtasks: list[Subtask], edges: list[tuple[str, str]]) -> list[Subtask]:
    """The subtasks with the dependencies that spawns added to them (`feeds`)."""
    extra: dict[str, list[str]] = {}
    for dep, target in edges:
        extra.setdefault(target, []).append(dep)
    if not extra:
        return subtasks
    out = []
    for st in subtasks:
        more = [d for d in extra.get(st.id, ()) if d not in st.depends_on]
        if more:
            st = st.model_copy(update={"depends_on": [*st.depends_on, *more]})
        out.append(st)
    return out


def _alive(pid: int | None, host: str | None) -> bool:
    """Whether the process that runs a session still exists (unknown hosts count as alive)."""
    if pid is None or host != socket.gethostname():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _approval(row: tuple[Any, ...]) -> Approval:
    """An `approvals` row (the table's column order) as an `Approval`."""
    run_id, call_id, subtask_id, tool, arguments, requested_at = row[:6]
    verdict, edited, reason, by, decided_at = row[6:11]
    decision = None
    if verdict is not None:
        decision = Decision(
            verdict, json.loads(edited) if edited is not None else None, reason, by or ""
        )
    return Approval(
        run_id,
        call_id,
        subtask_id,
        tool,
        json.loads(arguments),
        requested_at,
        decision,
        decided_at,
    )


class RunStore:
    """Durable runs under `runs_dir` (created if missing, unless `create` is False)."""

    def __init__(self, runs_dir: str | Path, *, create: bool = True) -> None:
        self.runs_dir = Path(runs_dir)
        if not create and not (self.runs_dir / DB_NAME).is_file():
            raise ConfigError(
                f"no runs stored in {str(self.runs_dir)!r}; give the directory runs were "
                "stored in with --runs-dir or KIMMY_RUNS_DIR"
            )
        try:
            self.runs_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(
                f"cannot use runs directory {str(self.runs_dir)!r}: {exc.strerror}; "
                "give a writable directory with --runs-dir or KIMMY_RUNS_DIR"
            ) from None
        if not self.runs_dir.is_dir():
            raise ConfigError(f"runs directory {str(self.runs_dir)!r} is not a directory")
        self.path = self.runs_dir / DB_NAME
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            # WAL + NORMAL: a commit survives a killed process; only an OS crash may lose
            # the last transactions, never corrupt the file.
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA busy_timeout=5000")
            # Checkpoint (and fsync) every ~40 MB of log instead of every 4 MB: fewer stalls
            # in the middle of a large run; the log is folded into the database on close.
            self._db.execute("PRAGMA wal_autocheckpoint=10000")
            self._db.executescript(SCHEMA)
        except sqlite3.Error as exc:
            raise ConfigError(
                f"runs directory {str(self.runs_dir)!r} has an unusable store {DB_NAME}: {exc}"
            ) from None
        self._session: dict[str, int] = {}
        self._lock = threading.RLock()

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- writing ----------------------------------------------------------------------

    def create_run(self, run_id: str, plan: Plan, settings: dict[str, Any]) -> None:
        """Record a new run and its planned subtasks (one transaction)."""
        now = time.time()
        with self._tx() as db:
            if db.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone():
                raise ConfigError(
                    f"a run with id {run_id!r} is already stored in {str(self.runs_dir)!r}; "
                    "choose another id, or continue that run with resume"
                )
            db.execute(
                "INSERT INTO runs (run_id, goal, status, created_at, updated_at, settings,"
                " plan, n_planned) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run_id,
                    plan.goal,
                    RunStatus.RUNNING.value,
                    now,
                    now,
                    json.dumps(settings),
                    plan.model_dump_json(),  # one serializer call for the whole plan
                    len(plan.subtasks),
                ),
            )

    def begin_session(self, run_id: str, settings: dict[str, Any] | None = None) -> int:
        """Mark a (re)start of a run; returns the session number (1 for the first).

        Raises:
            ConfigError: another live process on this host is running the run now (two
                sessions at once would do the same work twice).
        """
        with self._tx() as db:
            owner = db.execute(
                "SELECT status, pid, host FROM runs WHERE run_id = ?", (run_id,)
            ).fetchone()
            if (
                owner is not None
                and owner[0] == RunStatus.RUNNING.value
                and owner[1] is not None
                and owner[1] != os.getpid()
                and owner[2] == socket.gethostname()
                and _alive(owner[1], owner[2])
            ):
                raise ConfigError(
                    f"run {run_id} is being run by process {owner[1]} right now; "
                    "wait for it to finish (or stop it) before resuming"
                )
            db.execute(
                "UPDATE runs SET sessions = sessions + 1, status = ?, updated_at = ?,"
                " pid = ?, host = ?"
                + (", settings = ?" if settings is not None else "")
                + " WHERE run_id = ?",
                (RunStatus.RUNNING.value, time.time(), os.getpid(), socket.gethostname())
                + ((json.dumps(settings),) if settings is not None else ())
                + (run_id,),
            )
            row = db.execute("SELECT sessions FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            raise RunNotFoundError(run_id)
        self._session[run_id] = row[0]
        return row[0]

    def append(self, run_id: str, events: Sequence[Any]) -> None:
        """Write a batch of events (contiguous seqs), and what they imply, in one transaction."""
        if not events:
            return
        session = self._session.get(run_id, 1)
        now = time.time()
        results, attempts = [], []
        with self._tx() as db:
            for e in events:
                kind = e.type
                if kind == "subtask_finished":
                    r = e.result
                    # the result's body is its event's: one copy of each fact
                    results.append((run_id, r.id, r.status, e.seq, now))
                elif kind == "subtask_started":
                    attempts.append((run_id, e.subtask_id, e.attempt, session, e.ts))
                elif kind == "subtasks_spawned":
                    self._write_spawn(db, run_id, e)
                elif kind == "approval_requested":
                    db.execute(
                        "INSERT OR IGNORE INTO approvals (run_id, call_id, subtask_id, tool,"
                        " arguments, requested_at) VALUES (?, ?, ?, ?, ?, ?)",
                        (run_id, e.call_id, e.subtask_id, e.tool, json.dumps(e.arguments), e.ts),
                    )
                elif kind == "run_finished":
                    db.execute(
                        "UPDATE runs SET status = ?, stop_reason = ?, usage = ?, updated_at = ?"
                        " WHERE run_id = ?",
                        (e.status.value, e.stop_reason, e.usage.model_dump_json(), now, run_id),
                    )
            self._check_seqs(db, run_id, events)
            body = ev.dump_events(events)
            db.execute(
                "INSERT INTO events VALUES (?, ?, ?, ?)",
                (run_id, events[0].seq, events[-1].seq, body),
            )
            if results:
                db.executemany(UPSERT_RESULT, results)
            if attempts:
                db.executemany("INSERT INTO attempts VALUES (?, ?, ?, ?, ?)", attempts)

    def amend_run(
        self,
        run_id: str,
        *,
        failed: str | None = None,
        settings: dict[str, Any] | None = None,
    ) -> None:
        """Change a finished run's row after its session, from what happened after it: it
        `failed` (the reason, stored as its stop reason: e.g. its files could not be
        written, so it is not `completed`), or its `settings` changed (e.g. its files went
        to another folder). Its events are left as they were.

        Raises:
            RunNotFoundError: no such run.
        """
        sets: dict[str, Any] = {"updated_at": time.time()}
        if failed is not None:
            sets |= {"status": RunStatus.FAILED.value, "stop_reason": failed}
        if settings is not None:
            sets["settings"] = json.dumps(settings)
        with self._tx() as db:
            changed = db.execute(
                f"UPDATE runs SET {', '.join(f'{k} = ?' for k in sets)} WHERE run_id = ?",
                (*sets.values(), run_id),
            ).rowcount
        if not changed:
            raise RunNotFoundError(run_id)

    @staticmethod
    def _check_seqs(db: sqlite3.Connection, run_id: str, events: Sequence[Any]) -> None:
        """A batch is contiguous and comes after every stored seq: no seq is used twice.

        (A gap is allowed: it is where a batch whose commit failed would have been.)
        """
        row = db.execute(
            "SELECT last_seq FROM events WHERE run_id = ? ORDER BY first_seq DESC LIMIT 1",
            (run_id,),
        ).fetchone()
        expected = row[0] + 1 if row else 0
        first = events[0].seq
        contiguous = all(e.seq == first + i for i, e in enumerate(events))
        if not contiguous or first < expected:
            raise sqlite3.IntegrityError(
                f"events of run {run_id} must continue from seq {expected} without repeats, "
                f"got seqs {[e.seq for e in events][:10]}"
            )

    def _write_spawn(self, db: sqlite3.Connection, run_id: str, e: ev.SubtasksSpawned) -> None:
        (pos,) = db.execute(
            "SELECT COALESCE(MAX(pos), -1) + 1 FROM subtasks WHERE run_id = ?", (run_id,)
        ).fetchone()
        db.executemany(
            "INSERT INTO subtasks (run_id, id, pos, parent, body) VALUES (?, ?, ?, ?, ?)",
            (
                (run_id, s.id, pos + i, s.parent, s.model_dump_json())
                for i, s in enumerate(e.subtasks)
            ),
        )
        db.executemany("INSERT INTO edges VALUES (?, ?, ?)", ((run_id, d, t) for d, t in e.edges))

    class _Tx:
        """One transaction; the lock keeps threads sharing the store from interleaving."""

        def __init__(self, db: sqlite3.Connection, lock: threading.Lock) -> None:
            self.db = db
            self.lock = lock

        def __enter__(self) -> sqlite3.Connection:
            self.lock.acquire()
            try:
                self.db.execute("BEGIN IMMEDIATE")
            except BaseException:
                self.lock.release()
                raise
            return self.db

        def __exit__(self, exc_type: object, *rest: object) -> None:
            try:
                self.db.execute("COMMIT" if exc_type is None else "ROLLBACK")
            finally:
                self.lock.release()

    def _tx(self) -> RunStore._Tx:
        return RunStore._Tx(self._db, self._lock)

    def decide(self, run_id: str, call_id: str, decision: Decision) -> Approval:
        """Answer a waiting call (the first answer wins); returns it, answered.

        Whoever answers writes here — `kimmy approve`/`deny`, the dashboard, Python, or the
        run itself when the policy's timeout came — and the run that waits reads it.

        Raises:
            RunNotFoundError: no such run.
            ApprovalError: the run has no call `call_id`, or it was answered already.
        """
        run_id = self.resolve(run_id)
        edited = json.dumps(decision.arguments) if decision.arguments is not None else None
        with self._tx() as db:
            changed = db.execute(
                "UPDATE approvals SET verdict = ?, edited_arguments = ?, reason = ?,"
                " decided_by = ?, decided_at = ? WHERE run_id = ? AND call_id = ?"
                " AND verdict IS NULL",
                (decision.verdict, edited, decision.reason, decision.by, time.time(),
                 run_id, call_id),
            ).rowcount  # fmt: skip
        if changed:
            return self.approval(run_id, call_id)
        known = {a.call_id: a for a in self.approvals(run_id)}
        found = known.get(call_id)
        if found is None:
            waiting = ", ".join(a.call_id for a in known.values() if a.pending) or "(none)"
            raise ApprovalError(
                f"run {run_id} has no call {call_id!r} asking for approval; waiting: {waiting}"
            )
        assert found.decision is not None
        done = "approved" if found.decision.verdict == "approve" else "denied"
        raise ApprovalError(
            f"call {call_id} of run {run_id} was {done} already (by {found.decision.by})"
        )

    # --- reading ----------------------------------------------------------------------

    @contextmanager
    def _snapshot(self) -> Iterator[sqlite3.Connection]:
        """One read transaction: a consistent view, never inside another thread's write."""
        with self._lock:
            self._db.execute("BEGIN")
            try:
                yield self._db
            finally:
                self._db.execute("COMMIT")

    def run_ids(self) -> list[str]:
        with self._snapshot() as db:
            rows = db.execute("SELECT run_id FROM runs ORDER BY created_at DESC").fetchall()
        return [r[0] for r in rows]

    def list_runs(self, limit: int | None = None, *, run_id: str | None = None) -> list[RunSummary]:
        """Runs, newest first, with their subtask counts (only `run_id`'s, when given)."""
        where = "" if run_id is None else " WHERE r.run_id = ?"
        with self._snapshot() as db:
            rows = db.execute(
                "SELECT r.run_id, r.goal, r.status, r.created_at, r.updated_at, r.stop_reason,"
                " r.n_planned + (SELECT COUNT(*) FROM subtasks s WHERE s.run_id = r.run_id),"
                " (SELECT COUNT(*) FROM results x WHERE x.run_id = r.run_id"
                " AND x.status = 'done'), r.pid, r.host FROM runs r"
                + where
                + " ORDER BY r.created_at DESC LIMIT ?",
                (*(() if run_id is None else (run_id,)), -1 if limit is None else limit),
            ).fetchall()
        return [
            RunSummary(
                run_id=r[0],
                goal=r[1],
                status=RunStatus(r[2]),
                created_at=r[3],
                updated_at=r[4],
                stop_reason=r[5],
                n_subtasks=r[6],
                n_done=r[7],
                interrupted=RunStatus(r[2]) is RunStatus.RUNNING and not _alive(r[8], r[9]),
            )
            for r in rows
        ]

    def resolve(self, run_id: str) -> str:
        """The full id of a run given its id or a unique prefix (`latest` = newest).

        Raises:
            AmbiguousRunIdError: the prefix matches several runs (they are named).
            RunNotFoundError: no run has this id or prefix.
        """
        ids = self.run_ids()
        if run_id == "latest" and ids:
            return ids[0]
        if run_id in ids:
            return run_id
        matches = [i for i in ids if i.startswith(run_id)] if run_id else []
        if len(matches) == 1:
            return matches[0]
        if matches:
            raise AmbiguousRunIdError(run_id, matches)
        raise RunNotFoundError(run_id, ids)

    def load_run(self, run_id: str) -> StoredRun:
        """The stored plan (spawned subtasks included), settings and committed results."""
        run_id = self.resolve(run_id)
        with self._snapshot() as db:
            row = db.execute(
                "SELECT goal, status, stop_reason, settings, sessions, created_at, plan FROM runs"
                " WHERE run_id = ?",
                (run_id,),
            ).fetchone()
            spawned = db.execute(
                "SELECT body FROM subtasks WHERE run_id = ? ORDER BY pos", (run_id,)
            ).fetchall()
            edges = db.execute(
                "SELECT dependency, dependent FROM edges WHERE run_id = ? ORDER BY rowid",
                (run_id,),
            ).fetchall()
            wanted = dict(
                db.execute("SELECT seq, id FROM results WHERE run_id = ?", (run_id,)).fetchall()
            )
            batches = db.execute(
                "SELECT first_seq, last_seq, body FROM events WHERE run_id = ? ORDER BY first_seq",
                (run_id,),
            ).fetchall()
        subtasks = Plan.model_validate_json(row[6]).subtasks
        subtasks += [Subtask.model_validate_json(b) for (b,) in spawned]
        results: dict[str, SubtaskResult] = {}
        turns: dict[str, list[ev.AgentTurn]] = {}
        next_seq = 0
        for first, last, body in batches:
            next_seq = last + 1
            # Only batches holding a wanted result or an agent's turn are parsed.
            if '"agent_turn"' in body or any(first <= seq <= last for seq in wanted):
                for event in ev.parse_events(body):
                    if event.seq in wanted and event.type == "subtask_finished":
                        results[wanted[event.seq]] = event.result
                    elif event.type == "agent_turn":
                        turns.setdefault(event.subtask_id, []).append(event)
        return StoredRun(
            run_id=run_id,
            plan=Plan(goal=row[0], subtasks=_with_edges(subtasks, edges)),
            settings=json.loads(row[3]),
            status=RunStatus(row[1]),
            stop_reason=row[2],
            results=results,
            turns=turns,
            next_seq=next_seq,
            sessions=row[4],
            created_at=row[5],
        )

    def events(self, run_id: str, *, types: Sequence[str] | None = None) -> Iterator[ev.Event]:
        """The run's events in order (optionally only some types)."""
        run_id = self.resolve(run_id)
        with self._snapshot() as db:
            rows = db.execute(
                "SELECT body FROM events WHERE run_id = ? ORDER BY first_seq", (run_id,)
            ).fetchall()
        for (body,) in rows:
            for event in ev.parse_events(body):
                if not types or event.type in types:
                    yield event

    def subtask(self, run_id: str, subtask_id: str) -> tuple[Subtask | None, dict[str, Any]]:
        """One subtask of a run (planned or spawned; None when it has none of that id) and
        the run's settings, without reading its events."""
        run_id = self.resolve(run_id)
        with self._snapshot() as db:
            plan, settings = db.execute(
                "SELECT plan, settings FROM runs WHERE run_id = ?", (run_id,)
            ).fetchone()
            spawned = db.execute(
                "SELECT body FROM subtasks WHERE run_id = ? AND id = ?", (run_id, subtask_id)
            ).fetchone()
        if spawned is not None:
            return Subtask.model_validate_json(spawned[0]), json.loads(settings)
        if json.dumps(subtask_id) in plan:
            for st in Plan.model_validate_json(plan).subtasks:
                if st.id == subtask_id:
                    return st, json.loads(settings)
        return None, json.loads(settings)

    def subtask_ids(self, run_id: str, limit: int = 8) -> list[str]:
        """The first `limit` subtask ids of a run, planned then spawned (for messages)."""
        run_id = self.resolve(run_id)
        with self._snapshot() as db:
            (plan,) = db.execute("SELECT plan FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            spawned = db.execute(
                "SELECT id FROM subtasks WHERE run_id = ? ORDER BY pos LIMIT ?", (run_id, limit)
            ).fetchall()
        ids = [st.id for st in Plan.model_validate_json(plan).subtasks[:limit]]
        return (ids + [r[0] for r in spawned])[:limit]

    def events_mentioning(self, run_id: str, text: str) -> Iterator[ev.Event]:
        """The run's events, in order, of the batches whose JSON contains `text` (a quick
        filter: the caller still checks each event; e.g. one subtask's, by its quoted id)."""
        run_id = self.resolve(run_id)
        with self._snapshot() as db:
            rows = db.execute(
                "SELECT body FROM events WHERE run_id = ? AND instr(body, ?) > 0"
                " ORDER BY first_seq",
                (run_id, text),
            ).fetchall()
        for (body,) in rows:
            yield from ev.parse_events(body)

    def attempt_counts(self, run_id: str) -> dict[str, int]:
        """How many attempts each subtask has started, over all sessions."""
        run_id = self.resolve(run_id)
        with self._snapshot() as db:
            return dict(
                db.execute(
                    "SELECT subtask_id, COUNT(*) FROM attempts WHERE run_id = ?"
                    " GROUP BY subtask_id",
                    (run_id,),
                ).fetchall()
            )

    def done_ids(self, run_id: str) -> set[str]:
        run_id = self.resolve(run_id)
        with self._snapshot() as db:
            rows = db.execute(
                "SELECT id FROM results WHERE run_id = ? AND status = 'done'", (run_id,)
            ).fetchall()
        return {r[0] for r in rows}

    # --- reading raw rows (for live views that poll the store: `swarm.dashboard`) ---------

    def event_batches_after(self, run_id: str, seq: int = -1) -> list[tuple[int, int, str]]:
        """The run's committed batches whose events come after `seq`, oldest first, each as
        `(first_seq, last_seq, JSON array)` unparsed: a poller reads only what is new and
        parses it as cheaply as it likes (-1: every batch)."""
        with self._snapshot() as db:
            return db.execute(
                "SELECT first_seq, last_seq, body FROM events WHERE run_id = ? AND last_seq > ?"
                " ORDER BY first_seq",
                (run_id, seq),
            ).fetchall()

    def approvals(self, run_id: str | None, *, pending: bool = False) -> list[Approval]:
        """The calls of a run (every run's, newest run first, for None) that asked for
        approval, in the order they asked; only those still waiting with `pending`."""
        where, params = [], []
        if run_id is not None:
            where.append("a.run_id = ?")
            params.append(self.resolve(run_id))
        if pending:
            where.append("a.verdict IS NULL")
        query = "SELECT a.* FROM approvals a JOIN runs r ON r.run_id = a.run_id"
        if where:
            query += " WHERE " + " AND ".join(where)
        with self._snapshot() as db:
            rows = db.execute(
                query + " ORDER BY r.created_at DESC, a.requested_at, a.rowid", params
            ).fetchall()
        return [_approval(r) for r in rows]

    def answered(self, run_id: str, call_ids: Sequence[str]) -> list[Approval]:
        """Those of `call_ids` (of the run `run_id`, its full id) that have an answer: what
        a waiting run polls for."""
        found: list[Approval] = []
        ids = list(call_ids)
        with self._snapshot() as db:
            for at in range(0, len(ids), 500):  # SQLite's bound-parameter limit
                part = ids[at : at + 500]
                rows = db.execute(
                    "SELECT * FROM approvals WHERE run_id = ? AND verdict IS NOT NULL"
                    f" AND call_id IN ({', '.join('?' * len(part))})",
                    (run_id, *part),
                ).fetchall()
                found += [_approval(r) for r in rows]
        return found

    def approval(self, run_id: str, call_id: str) -> Approval:
        """One call that asked for approval (raises `ApprovalError` when there is none)."""
        with self._snapshot() as db:
            row = db.execute(
                "SELECT * FROM approvals WHERE run_id = ? AND call_id = ?", (run_id, call_id)
            ).fetchone()
        if row is None:
            raise ApprovalError(f"run {run_id} has no call {call_id!r} asking for approval")
        return _approval(row)

    def run_record(self, run_id: str) -> dict[str, Any]:
        """The run's own row, unparsed where it is big: goal, status, stop_reason,
        created_at, updated_at, settings (a dict), plan (the planned subtasks as the JSON
        of a `Plan`), interrupted (stored as running, its process gone).

        Raises:
            RunNotFoundError: no run has exactly this id.
        """
        with self._snapshot() as db:
            row = db.execute(
                "SELECT goal, status, stop_reason, created_at, updated_at, settings, plan, pid,"
                " host FROM runs WHERE run_id = ?",
                (run_id,),
            ).fetchone()
        if row is None:
            raise RunNotFoundError(run_id)
        status = RunStatus(row[1])
        return {
            "run_id": run_id,
            "goal": row[0],
            "status": status.value,
            "stop_reason": row[2],
            "created_at": row[3],
            "updated_at": row[4],
            "settings": json.loads(row[5]),
            "plan": row[6],
            "interrupted": status is RunStatus.RUNNING and not _alive(row[7], row[8]),
        }


__all__ = ["DB_NAME", "RunStore", "RunSummary", "StoredRun"]
