"""The run store's SQLite tables, and the records read back from them (see `swarm.store`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kimmy_swarm.swarm.events import AgentTurn
from kimmy_swarm.swarm.schema import Plan, RunStatus, SubtaskResult

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    goal TEXT NOT NULL,
    status TEXT NOT NULL,
    stop_reason TEXT,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    settings TEXT NOT NULL,
    -- the planned subtasks as one JSON array (spawned ones are rows of `subtasks`)
    plan TEXT NOT NULL,
    n_planned INTEGER NOT NULL,
    usage TEXT,
    sessions INTEGER NOT NULL DEFAULT 0,
    -- the process running the current session (a `running` run whose process is gone
    -- was killed: it is shown as interrupted)
    pid INTEGER,
    host TEXT
);
-- subtasks spawned at run time, in spawn order
CREATE TABLE IF NOT EXISTS subtasks (
    run_id TEXT NOT NULL,
    id TEXT NOT NULL,
    pos INTEGER NOT NULL,
    parent TEXT,
    body TEXT NOT NULL,
    PRIMARY KEY (run_id, id)
);
-- dependencies added at run time to subtasks that already existed (spawn `feeds`)
CREATE TABLE IF NOT EXISTS edges (
    run_id TEXT NOT NULL,
    dependency TEXT NOT NULL,
    dependent TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS attempts (
    run_id TEXT NOT NULL,
    subtask_id TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    session INTEGER NOT NULL,
    started_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS results (
    run_id TEXT NOT NULL,
    id TEXT NOT NULL,
    status TEXT NOT NULL,
    seq INTEGER NOT NULL,
    committed_at REAL NOT NULL,
    PRIMARY KEY (run_id, id)
);
-- Calls that asked a person (`swarm.approvals`): the request is written with its
-- `approval_requested` event; the decision by whoever answers first (verdict NULL: waiting).
CREATE TABLE IF NOT EXISTS approvals (
    run_id TEXT NOT NULL,
    call_id TEXT NOT NULL,
    subtask_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    arguments TEXT NOT NULL,
    requested_at REAL NOT NULL,
    verdict TEXT,
    edited_arguments TEXT,
    reason TEXT,
    decided_by TEXT,
    decided_at REAL,
    PRIMARY KEY (run_id, call_id)
);
-- One row per commit: the JSON array of the events it wrote, seq first_seq..last_seq.
-- (A row per event costs SQLite several times more at 10,000 sub-agents.)
CREATE TABLE IF NOT EXISTS events (
    run_id TEXT NOT NULL,
    first_seq INTEGER NOT NULL,
    last_seq INTEGER NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (run_id, first_seq)
);
"""

# A done result is final: a later upsert for the same subtask is ignored.
UPSERT_RESULT = """
INSERT INTO results (run_id, id, status, seq, committed_at) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (run_id, id) DO UPDATE SET
    status = excluded.status, seq = excluded.seq, committed_at = excluded.committed_at
WHERE results.status != 'done'
"""


@dataclass(frozen=True, slots=True)
class RunSummary:
    """One line of `kimmy runs`."""

    run_id: str
    goal: str
    status: RunStatus
    created_at: float
    updated_at: float
    n_subtasks: int
    n_done: int
    stop_reason: str | None
    #: Stored as running, but its process is gone (killed): `kimmy resume` continues it.
    interrupted: bool = False


@dataclass(frozen=True, slots=True)
class StoredRun:
    """Everything needed to show or resume a run."""

    run_id: str
    plan: Plan
    #: The settings the run was last started with (`RunConfig.from_settings` reads them).
    settings: dict[str, Any]
    status: RunStatus
    stop_reason: str | None
    results: dict[str, SubtaskResult]
    next_seq: int
    sessions: int
    created_at: float
    #: The turns agents recorded (`AgentTurn` events), by subtask id, oldest first.
    turns: dict[str, list[AgentTurn]] = field(default_factory=dict)


__all__ = ["SCHEMA", "UPSERT_RESULT", "RunSummary", "StoredRun"]
