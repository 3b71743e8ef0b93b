"""The dashboard's side of the store: one live `RunView` per run, refreshed by polling.

The store is SQLite in WAL mode, written by the process that runs the swarm; the dashboard
reads it from another process (or thread). `LiveRuns.refresh` reads only the batches
committed after the last seq a view has seen, so a poll every half second costs a query
that returns nothing most of the time. Layouts are cached per graph shape
(`RunView.structure_seq`) and recomputed when a spawn or an orchestrator turn changes it,
or when the run finishes (the final critical path).

A stream keeps a cursor (the last seq it sent); `delta(run_id, cursor)` gives what changed
after it: node statuses (or group counts when the graph is aggregated), the counters, and
whether the page must fetch the layout again.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from kimmy_swarm.swarm.dashboard.layout import MAX_NODES, Layout, group_counts, layout_run
from kimmy_swarm.swarm.dashboard.state import RunView
from kimmy_swarm.swarm.store import RunStore


def layout_key(view: RunView) -> tuple[int, bool]:
    """What a layout depends on: the graph's shape, and whether the run has finished."""
    return (view.structure_seq, view.finished)


def _key_text(key: tuple[int, bool]) -> str:
    return f"{key[0]}:{int(key[1])}"


class LiveRuns:
    """Live views of the runs of one store (thread-safe: routes run in a thread pool).

    Args:
        store: the run store to read.
        max_nodes: graphs above this many nodes are drawn by (stage, role) group.
    """

    def __init__(self, store: RunStore, *, max_nodes: int = MAX_NODES) -> None:
        self.store = store
        self.max_nodes = max_nodes
        self._views: dict[str, RunView] = {}
        self._layouts: dict[str, tuple[tuple[int, bool], Layout]] = {}
        self._lock = threading.Lock()

    def resolve(self, run_id: str) -> str:
        """The stored run's id (an exact id, a unique prefix or `latest`).

        Raises:
            swarm.errors.RunNotFoundError: no stored run matches.
        """
        return self.store.resolve(run_id)

    def refresh(self, run_id: str) -> RunView:
        """The run's view, with every batch committed so far folded in."""
        with self._lock:
            view = self._views.get(run_id)
            if view is None:
                record = self.store.run_record(run_id)
                planned = json.loads(record["plan"]).get("subtasks", [])
                view = RunView(run_id, planned, record["settings"])
                self._views[run_id] = view
            for first, last, body in self.store.event_batches_after(run_id, view.last_seq):
                view.apply(first, last, body)
            return view

    def layout(self, run_id: str) -> Layout:
        """The run's laid-out graph (cached until its shape changes or the run ends)."""
        view = self.refresh(run_id)
        with self._lock:
            key = layout_key(view)
            cached = self._layouts.get(run_id)
            if cached is None or cached[0] != key:
                cached = (key, layout_run(view, max_nodes=self.max_nodes))
                self._layouts[run_id] = cached
            return cached[1]

    def graph(self, run_id: str) -> dict[str, Any]:
        """The laid-out graph with the statuses of now: what the page draws.

        `seq` is the last event it includes (a stream goes on from there) and `layout_key`
        names the layout (a stream says `relayout` when it is no longer current).
        """
        layout = self.layout(run_id)
        view = self.refresh(run_id)
        with self._lock:
            payload = dict(layout.payload)
            if layout.group_of is not None:
                payload["nodes"] = [
                    {**n, "counts": group_counts(view, layout.members[n["id"]])}
                    for n in payload["nodes"]
                ]
            else:
                nodes = view.nodes
                payload["nodes"] = [
                    {**n, "status": nodes[n["id"]].status, "attempts": nodes[n["id"]].attempts}
                    for n in payload["nodes"]
                ]
            payload["seq"] = view.last_seq
            payload["layout_key"] = _key_text(layout_key(view))
            return payload

    def delta(self, run_id: str, cursor: int, drawn: str) -> dict[str, Any]:
        """What changed after seq `cursor`, for a page that drew the layout `drawn`.

        Returns:
            `{seq, counters, status, relayout, layout_key, nodes}` where `nodes` maps node
            ids to their status and attempts, or group ids to their counts when the graph
            is aggregated; `relayout` says the page must fetch the graph (`layout_key`).
        """
        view = self.refresh(run_id)
        layout = self.layout(run_id)
        with self._lock:
            changed = view.changed_since(cursor)
            nodes: dict[str, Any]
            if layout.group_of is not None:
                touched = {layout.group_of[n.id] for n in changed if n.id in layout.group_of}
                nodes = {g: group_counts(view, layout.members[g]) for g in touched}
            else:
                nodes = {n.id: {"status": n.status, "attempts": n.attempts} for n in changed}
            return {
                "seq": view.last_seq,
                "status": view.status,
                "counters": view.counters(),
                "relayout": _key_text(layout_key(view)) != drawn,
                "layout_key": _key_text(layout_key(view)),
                "nodes": nodes,
            }

    def agents(
        self,
        run_id: str,
        *,
        query: str = "",
        status: str | None = None,
        group: str | None = None,
        limit: int = 100,
    ) -> dict[str, Any]:
        """The run's sub-agents that match, for a page to list and open: those whose id
        contains `query` (any case), in `status`, in the drawn `group` (an aggregated
        graph's stage × role); the running ones first, longest-running first, then the
        failed, then the rest by id.

        Returns:
            `{total, agents}`: how many match, and the first `limit` of them, each with its
            id, role, status, attempts, tokens and `age_s` (seconds it has run, so far when
            running; None when it never started).

        Raises:
            KeyError: `group` is not a group of the run's current layout.
        """
        view = self.refresh(run_id)
        layout = self.layout(run_id) if group is not None else None
        with self._lock:
            members = None
            if layout is not None:
                if group not in layout.members:
                    raise KeyError(group)
                members = layout.members[group]
            return view.find(query=query, status=status, among=members, limit=limit)

    def node(self, run_id: str, node_id: str) -> dict[str, Any]:
        """One node's state.

        Raises:
            KeyError: the run has no node `node_id`.
        """
        view = self.refresh(run_id)
        with self._lock:
            node = view.nodes.get(node_id)
            if node is None:
                raise KeyError(node_id)
            return node.as_dict()


__all__ = ["LiveRuns"]
