"""Server-side layout of a run's graph with networkx: stages left to right, the critical path.

The graph has an edge for every dependency (`depends_on`, spawn `feeds` included) and one
from each spawner to what it spawned; an orchestrator turn that spawned subtasks sits
between the orchestrator and them (`state.turn_id`). Stages are
`nx.topological_generations`, positions `nx.multipartite_layout` (one column per stage),
scaled to pixels; the page only draws SVG where it is told. The critical path is
`swarm.dag.critical_path`, weighted by each subtask's duration so far.

Above `max_nodes` nodes a graph is not drawn node by node: it is aggregated into one node
per (stage, role), which carries its count by status, with one edge per pair of groups
that carries how many edges it stands for. A page stays responsive at 10,000 sub-agents.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from kimmy_swarm.swarm.dag import critical_path
from kimmy_swarm.swarm.dashboard.state import Node, RunView

#: Nodes above which the graph is drawn as groups (stage, role).
MAX_NODES = 300
#: Pixels between stages (columns) and between the nodes of a stage (rows).
COLUMN_PX = 220
ROW_PX = 34
GROUP_ROW_PX = 64
MARGIN_PX = 40


@dataclass(slots=True)
class Layout:
    """A laid-out graph: what `/graph` returns (`payload`), and, when aggregated, the group
    of each node (to turn node changes into group counts)."""

    structure_seq: int
    payload: dict[str, Any]
    group_of: dict[str, str] | None = None
    members: dict[str, list[str]] = field(default_factory=dict)

    @property
    def aggregated(self) -> bool:
        return self.group_of is not None


def build_graph(view: RunView) -> nx.DiGraph:
    """The run's graph: dependency edges (`kind="dep"`) and spawn edges (`kind="spawn"`).

    Spawn edges that would close a cycle (an agent fed by what it spawned) are left out:
    dependencies alone are a validated DAG.
    """
    g = nx.DiGraph()
    g.add_nodes_from(view.nodes)
    spawn = []
    for node in view.nodes.values():
        for dep in node.depends_on:
            if dep in view.nodes:
                g.add_edge(dep, node.id, kind="dep")
        if node.parent in view.nodes and not g.has_edge(node.parent, node.id):
            spawn.append((node.parent, node.id))
    g.add_edges_from(spawn, kind="spawn")
    if spawn and not nx.is_directed_acyclic_graph(g):
        g.remove_edges_from(spawn)
    return g


def _weights(view: RunView, now: float) -> dict[str, float]:
    """Seconds each node has run (so far, when running); a small constant breaks ties."""
    out = {}
    for n in view.nodes.values():
        w = 1e-3
        if n.started_at is not None:
            w += (n.finished_at or now) - n.started_at
        out[n.id] = w
    return out


def _positions(g: nx.DiGraph, row_px: int) -> tuple[dict[str, tuple[float, float]], int, int]:
    """Pixel positions from `nx.multipartite_layout` over the nodes' `stage` attribute."""
    if g.number_of_nodes() == 0:
        return {}, 0, 0
    stages: dict[int, int] = {}
    for _, s in g.nodes(data="stage"):
        stages[s] = stages.get(s, 0) + 1
    width = MARGIN_PX * 2 + COLUMN_PX * (len(stages) - 1)
    height = MARGIN_PX * 2 + row_px * (max(stages.values()) - 1)
    if g.number_of_nodes() == 1:
        (only,) = g.nodes
        return {only: (MARGIN_PX, MARGIN_PX)}, width, height
    pos = nx.multipartite_layout(g, subset_key="stage")
    xs = [p[0] for p in pos.values()]
    ys = [p[1] for p in pos.values()]
    x0, xspan = min(xs), (max(xs) - min(xs)) or 1.0
    y0, yspan = min(ys), (max(ys) - min(ys)) or 1.0
    out = {
        n: (
            MARGIN_PX + (p[0] - x0) / xspan * (width - 2 * MARGIN_PX),
            MARGIN_PX + (p[1] - y0) / yspan * (height - 2 * MARGIN_PX),
        )
        for n, p in pos.items()
    }
    return out, width, height


def _node_payload(n: Node, xy: tuple[float, float], critical: bool) -> dict[str, Any]:
    label = n.id if n.kind == "subtask" else f"turn {n.id.rsplit('#t', 1)[1]}"
    return {
        "id": n.id,
        "label": label,
        "role": n.role,
        "kind": n.kind,
        "status": n.status,
        "attempts": n.attempts,
        "x": round(xy[0], 1),
        "y": round(xy[1], 1),
        "critical": critical,
    }


def _payload(
    mode: str,
    view: RunView,
    size: tuple[int, int],
    stage_of: dict[str, int],
    nodes: list[dict[str, Any]],
    edges: list[dict[str, Any]],
    path: list[str],
) -> dict[str, Any]:
    """What `/graph` returns of a layout (`mode`: `nodes`, or `groups` when aggregated)."""
    return {
        "mode": mode,
        "structure_seq": view.structure_seq,
        "width": size[0],
        "height": size[1],
        "stages": len(set(stage_of.values())),
        "nodes": nodes,
        "edges": edges,
        "critical_path": path,
    }


def layout_run(view: RunView, *, max_nodes: int = MAX_NODES, now: float | None = None) -> Layout:
    """The laid-out graph of `view` (node by node up to `max_nodes`, else by group)."""
    now = time.time() if now is None else now
    g = build_graph(view)
    stage_of: dict[str, int] = {}
    for i, gen in enumerate(nx.topological_generations(g)):
        for node_id in gen:
            stage_of[node_id] = i
    path = critical_path(g, _weights(view, now))
    if g.number_of_nodes() > max_nodes:
        return _aggregate(view, g, stage_of, path)
    nx.set_node_attributes(g, stage_of, "stage")
    pos, width, height = _positions(g, ROW_PX)
    on_path = set(path)
    path_edges = set(itertools.pairwise(path))
    nodes = [_node_payload(view.nodes[i], pos[i], i in on_path) for i in g.nodes]
    edges = [
        {"source": a, "target": b, "kind": k, "critical": (a, b) in path_edges}
        for a, b, k in g.edges(data="kind")
    ]
    payload = _payload("nodes", view, (width, height), stage_of, nodes, edges, path)
    return Layout(view.structure_seq, payload)


def group_key(stage: int, node: Node) -> str:
    role = node.role if node.kind == "subtask" else f"{node.role} turns"
    return f"s{stage}:{role}"


def group_counts(view: RunView, members: list[str]) -> dict[str, int]:
    """How many of a group's nodes are in each status."""
    counts: dict[str, int] = {}
    for node_id in members:
        status = view.nodes[node_id].status
        counts[status] = counts.get(status, 0) + 1
    return counts


def _aggregate(view: RunView, g: nx.DiGraph, stage_of: dict[str, int], path: list[str]) -> Layout:
    group_of = {n: group_key(stage_of[n], view.nodes[n]) for n in g.nodes}
    members: dict[str, list[str]] = {}
    for node_id, gid in group_of.items():
        members.setdefault(gid, []).append(node_id)
    groups = nx.DiGraph()
    for gid, ids in members.items():
        groups.add_node(gid, stage=stage_of[ids[0]])
    for a, b in g.edges:
        ga, gb = group_of[a], group_of[b]
        if ga == gb:
            continue
        if groups.has_edge(ga, gb):
            groups[ga][gb]["count"] += 1
        else:
            groups.add_edge(ga, gb, count=1)
    pos, width, height = _positions(groups, GROUP_ROW_PX)
    on_path = {group_of[n] for n in path}
    path_edges = {(group_of[a], group_of[b]) for a, b in itertools.pairwise(path)}
    nodes = []
    for gid, ids in members.items():
        first = view.nodes[ids[0]]
        nodes.append({
            "id": gid,
            "label": f"{first.role if first.kind == 'subtask' else first.role + ' turns'}",
            "role": first.role,
            "kind": "group",
            "stage": stage_of[ids[0]],
            "count": len(ids),
            "counts": group_counts(view, ids),
            "x": round(pos[gid][0], 1),
            "y": round(pos[gid][1], 1),
            "critical": gid in on_path,
        })  # fmt: skip
    edges = [
        {"source": a, "target": b, "count": c, "critical": (a, b) in path_edges}
        for a, b, c in groups.edges(data="count")
    ]
    payload = _payload("groups", view, (width, height), stage_of, nodes, edges, path)
    payload["node_count"] = g.number_of_nodes()
    return Layout(view.structure_seq, payload, group_of, members)


__all__ = ["MAX_NODES", "Layout", "build_graph", "group_counts", "group_key", "layout_run"]
