"""A run as the dashboard sees it, built from the store's event batches incrementally.

`RunView.apply(first, last, body)` folds one committed batch (the raw JSON array the store
holds) into per-subtask state (status, role, attempts, start and finish times, tokens) and
the run's counters. Batches are read with `json.loads`, not the pydantic event models: a
view of 10,000 sub-agents is rebuilt from scratch in a fraction of a second, and a poll that
finds a few new batches costs next to nothing. So `RunView` is no `EventFold`; its run-wide
counters are the progress view's (`RunCounters`), moved by the same methods.

Every node remembers the seq of the event that last changed it, so any number of live
streams share one view: each asks `changed_since(seq)` for what it has not sent yet.
`structure_seq` is the seq of the last change of the graph's shape (a spawn, an
orchestrator turn): a stream that has seen an older one tells its page to fetch the layout
again.
"""

from __future__ import annotations

import json
import time
from collections import deque
from typing import Any

from kimmy_swarm.swarm.run_counters import RunCounters

#: Seconds over which `subtasks/s` is measured.
RATE_WINDOW_S = 5.0
#: The order of statuses in a list of sub-agents: running, then failed, then the rest.
_LIST_RANK = {"running": 0, "failed": 1}


class Node:
    """One node of the run's graph: a subtask, or an orchestrator turn that spawned some."""

    __slots__ = (
        "attempts",
        "changed",
        "depends_on",
        "finished_at",
        "id",
        "kind",
        "parent",
        "role",
        "started_at",
        "status",
        "tokens",
    )

    def __init__(
        self,
        id: str,
        role: str,
        *,
        kind: str = "subtask",
        status: str = "pending",
        depends_on: list[str] | None = None,
        parent: str | None = None,
        changed: int = -1,
    ) -> None:
        self.id = id
        self.role = role
        #: `subtask`, or `turn` (an orchestrator turn; its id is `PARENT#tSTEP`).
        self.kind = kind
        self.status = status
        self.depends_on = depends_on or []
        #: The subtask (or the orchestrator turn) that spawned this one.
        self.parent = parent
        self.attempts = 0
        self.started_at: float | None = None
        self.finished_at: float | None = None
        self.tokens = 0
        self.changed = changed

    def age(self, now: float) -> float | None:
        """Seconds it has run: to its end, or to `now` while it runs (None: never started)."""
        if self.started_at is None:
            return None
        end = self.finished_at if self.status != "running" and self.finished_at else now
        return max(0.0, end - self.started_at)

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "role": self.role,
            "kind": self.kind,
            "status": self.status,
            "attempts": self.attempts,
            "parent": self.parent,
            "depends_on": list(self.depends_on),
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "tokens": self.tokens,
        }


def turn_id(subtask_id: str, step: int) -> str:
    """The node id of an orchestrator's turn (`#` never occurs in a subtask id)."""
    return f"{subtask_id}#t{step}"


class RunView(RunCounters):
    """The live state of one stored run (see the module docstring).

    Args:
        run_id: the run.
        planned: the planned subtasks, as the dicts of the stored plan's JSON.
        settings: the run's recorded settings (`max_concurrency` is the initial limit).
    """

    def __init__(
        self, run_id: str, planned: list[dict[str, Any]], settings: dict[str, Any]
    ) -> None:
        super().__init__()
        self.run_id = run_id
        self.nodes: dict[str, Node] = {}
        for st in planned:
            self._add(st, changed=-1)
        self.limit_from_settings(settings)
        self.last_seq = -1
        self.structure_seq = -1
        self.status = "running"
        self.started_at: float | None = None
        self.finished_at: float | None = None
        self.counts: dict[str, int] = {"pending": len(self.nodes)}
        self._finish_times: deque[float] = deque()

    # --- folding events ---------------------------------------------------------------

    def apply(self, first: int, last: int, body: str) -> None:
        """Fold one stored batch (seqs `first`..`last`, a JSON array) into the view."""
        if last <= self.last_seq:
            return
        for e in json.loads(body):
            seq = e["seq"]
            if seq > self.last_seq:
                self._apply_one(e, seq)
        self.last_seq = last

    def _apply_one(self, e: dict[str, Any], seq: int) -> None:  # noqa: C901 - one arm a kind
        kind = e["type"]
        if kind == "subtask_started":
            node = self.nodes.get(e["subtask_id"])
            if node is not None:
                node.attempts = max(node.attempts, e["attempt"])
                node.started_at = node.started_at or e["ts"]
                self._set_status(node, "running", seq)
        elif kind == "subtask_finished":
            r = e["result"]
            node = self.nodes.get(r["id"])
            if node is not None:
                node.finished_at = (r.get("timings") or {}).get("finished_at") or e["ts"]
                node.started_at = node.started_at or (r.get("timings") or {}).get("started_at")
                self._set_status(node, r["status"], seq)
                self._finish_times.append(e["ts"])
        elif kind == "model_called":
            tokens = (e.get("usage") or {}).get("total_tokens", 0)
            self.count_model_call(tokens, failed=e.get("error") is not None)
            node = self.nodes.get(e["subtask_id"])
            if node is not None:
                node.tokens += tokens
                node.changed = seq
        elif kind == "subtask_retrying":
            self.count_retry()
        elif kind == "subtasks_spawned":
            for st in e["subtasks"]:
                self._add(st, changed=seq)
            for dep, target in e.get("edges", ()):
                node = self.nodes.get(target)
                if node is not None and dep not in node.depends_on:
                    node.depends_on.append(dep)
            self.structure_seq = seq
        elif kind == "agent_turn" and e.get("spawned"):
            self._add_turn(e, seq)
        elif kind == "spawn_refused":
            self.count_spawn_refused()
        elif kind == "concurrency_changed":
            self.limit_changed(e["limit"])
        elif kind == "run_started":
            self._start(e, seq)
        elif kind == "run_finished":
            self.status = e["status"]
            self.finished_at = e["ts"]

    def _start(self, e: dict[str, Any], seq: int) -> None:
        """A (re)start: what was running when an earlier session stopped runs again."""
        self.status = "running"
        self.finished_at = None
        self.started_at = self.started_at or e["ts"]
        self.limit_from_settings(e.get("settings") or {})
        for node in self.nodes.values():
            if node.status == "running":
                self._set_status(node, "pending", seq)

    def _add(self, st: dict[str, Any], *, changed: int) -> None:
        if st["id"] in self.nodes:
            return
        self.nodes[st["id"]] = Node(
            st["id"],
            st["role"],
            depends_on=list(st.get("depends_on") or ()),
            parent=st.get("parent"),
            changed=changed,
        )
        if changed >= 0:
            self.counts["pending"] = self.counts.get("pending", 0) + 1

    def _add_turn(self, e: dict[str, Any], seq: int) -> None:
        """An orchestrator turn that spawned subtasks: a node between it and them."""
        parent = e["subtask_id"]
        tid = turn_id(parent, e["step"])
        if tid in self.nodes:
            return
        owner = self.nodes.get(parent)
        turn = Node(tid, owner.role if owner else "turn", kind="turn", status="done",
                    parent=parent, changed=seq)  # fmt: skip
        turn.started_at = turn.finished_at = e["ts"]
        self.nodes[tid] = turn
        for sid in e["spawned"]:
            child = self.nodes.get(sid)
            if child is not None:
                child.parent = tid
        self.structure_seq = seq

    def _set_status(self, node: Node, status: str, seq: int) -> None:
        if node.kind == "subtask" and node.status != status:
            self.counts[node.status] = self.counts.get(node.status, 0) - 1
            self.counts[status] = self.counts.get(status, 0) + 1
        node.status = status
        node.changed = seq

    # --- reading ----------------------------------------------------------------------

    def subtask_count(self) -> int:
        return sum(self.counts.values())

    def counters(self, now: float | None = None) -> dict[str, Any]:
        """The run's counters: in flight, the concurrency limit, retries, tokens, model
        calls, subtasks finished per second over the last `RATE_WINDOW_S`, and how many
        subtasks are in each status."""
        now = time.time() if now is None else now
        times = self._finish_times
        while times and times[0] < now - RATE_WINDOW_S * 4:  # keep a little history only
            times.popleft()
        recent = sum(1 for t in times if t >= now - RATE_WINDOW_S)
        c = self.counts
        return {
            "status": self.status,
            "total": self.subtask_count(),
            "in_flight": c.get("running", 0),
            "limit": self.concurrency_limit,
            "retries": self.retries,
            "tokens": self.tokens,
            "model_calls": self.model_calls,
            "subtasks_per_s": round(recent / RATE_WINDOW_S, 2),
            "pending": c.get("pending", 0),
            "done": c.get("done", 0),
            "failed": c.get("failed", 0),
            "cancelled": c.get("cancelled", 0),
            "skipped": c.get("skipped", 0) + c.get("skipped_budget", 0),
            "last_seq": self.last_seq,
        }

    def find(
        self,
        *,
        query: str = "",
        status: str | None = None,
        among: list[str] | None = None,
        limit: int = 100,
        now: float | None = None,
    ) -> dict[str, Any]:
        """The sub-agents (not turns) whose id contains `query` (any case), in `status`,
        among the ids `among` (None: all); the running ones first, longest-running first,
        then the failed, then the rest, each by id.

        Returns:
            `{total, agents}`: how many match, and the first `limit` of them, each with its
            id, role, status, attempts, tokens and `age_s` (seconds it has run, so far when
            running; None when it never started).
        """
        now = time.time() if now is None else now
        nodes = self.nodes.values() if among is None else (self.nodes[i] for i in among)
        needle = query.strip().lower()
        found = [
            n
            for n in nodes
            if n.kind == "subtask"
            and (not needle or needle in n.id.lower())
            and (status is None or n.status == status)
        ]
        ages = {n.id: n.age(now) for n in found}

        def order(n: Node) -> tuple[int, float, str]:
            running_for = (ages[n.id] or 0.0) if n.status == "running" else 0.0
            return (_LIST_RANK.get(n.status, 2), -running_for, n.id)

        found.sort(key=order)
        return {
            "total": len(found),
            "agents": [
                {
                    "id": n.id,
                    "role": n.role,
                    "status": n.status,
                    "attempts": n.attempts,
                    "tokens": n.tokens,
                    "age_s": None if ages[n.id] is None else round(ages[n.id], 1),
                }
                for n in found[:limit]
            ],
        }

    def changed_since(self, seq: int) -> list[Node]:
        """The nodes an event after `seq` changed."""
        return [n for n in self.nodes.values() if n.changed > seq]

    @property
    def finished(self) -> bool:
        return self.status != "running"


__all__ = ["RATE_WINDOW_S", "Node", "RunView", "turn_id"]
