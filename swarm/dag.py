"""Plan ⇄ DAG: validation with typed errors that name the offending ids, and DAG metrics.

Edges point from a dependency to its dependent (`dep -> subtask`), so topological order is
execution order.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Iterable
from typing import TYPE_CHECKING

from kimmy_swarm.swarm.errors import (
    CycleError,
    DuplicateIdError,
    EmptyPlanError,
    PlanLimitError,
    UnknownDependencyError,
    UnknownRoleError,
    UnknownSchemaError,
)
from kimmy_swarm.swarm.schema import Plan, Subtask

if TYPE_CHECKING:  # networkx is imported when a graph is asked for: it is slow to import
    import networkx as nx

#: The most subtasks one plan may hold unless the caller allows more.
DEFAULT_MAX_SUBTASKS = 100_000
#: The most dependencies one subtask may list.
DEFAULT_MAX_DEPENDENCIES = 10_000
#: The most characters of a plan's goal and of one subtask's instructions (far more than any
#: model's context holds: a longer text is a mistake, not a task).
MAX_TEXT_CHARS = 200_000
#: The most bytes of one subtask's inputs, as JSON.
MAX_INPUTS_BYTES = 8 * 1024 * 1024


def _ids_text(ids: Iterable[str], limit: int = 8) -> str:
    ids = list(ids)
    shown = ", ".join(repr(i) for i in ids[:limit])
    return shown + (f" (and {len(ids) - limit} more)" if len(ids) > limit else "")


def build_graph(subtasks: Iterable[Subtask]) -> nx.DiGraph:
    """The dependency graph, without validation (unknown dependencies become bare nodes)."""
    import networkx as nx

    graph = nx.DiGraph()
    for st in subtasks:
        graph.add_node(st.id, role=st.role)
        graph.add_edges_from((dep, st.id) for dep in st.depends_on)
    return graph


def _check_size(plan: Plan, max_subtasks: int, max_dependencies: int) -> None:
    if not plan.subtasks:
        raise EmptyPlanError("plan has no subtasks: give at least one in `subtasks`")
    if len(plan.subtasks) > max_subtasks:
        raise PlanLimitError(
            f"plan has {len(plan.subtasks)} subtasks; at most {max_subtasks} are allowed"
        )
    per_subtask: tuple[tuple[Callable[[Subtask], bool], str], ...] = (
        (lambda s: len(s.depends_on) > max_dependencies,
         f"list more than {max_dependencies} dependencies"),
        (lambda s: len(s.instructions) > MAX_TEXT_CHARS,
         f"have instructions over {MAX_TEXT_CHARS:,} characters; put large data in a file "
         "the sub-agent reads"),
        (lambda s: bool(s.inputs) and _json_bytes(s.inputs) > MAX_INPUTS_BYTES,
         f"have inputs over {MAX_INPUTS_BYTES // 2**20} MiB as JSON; put large data in a file "
         "the sub-agent reads"),
    )  # fmt: skip
    for over, says in per_subtask:
        ids = [s.id for s in plan.subtasks if over(s)]
        if ids:
            raise PlanLimitError(f"subtasks {_ids_text(ids)} {says}", ids=ids)
    if len(plan.goal) > MAX_TEXT_CHARS:
        raise PlanLimitError(
            f"the goal has {len(plan.goal):,} characters; at most {MAX_TEXT_CHARS:,} are allowed"
        )


def _json_bytes(value: object) -> int:
    import json

    return len(json.dumps(value, ensure_ascii=False).encode())


def _check_ids(plan: Plan) -> dict[str, int]:
    """Ids are unique and every dependency names one; returns each id's position."""
    position = {s.id: i for i, s in enumerate(plan.subtasks)}
    if len(position) < len(plan.subtasks):
        counts = Counter(s.id for s in plan.subtasks)
        dups = sorted(i for i, n in counts.items() if n > 1)
        raise DuplicateIdError(f"duplicate subtask ids: {_ids_text(dups)}", ids=dups)
    known = position
    repeated = [(s.id, d) for s in plan.subtasks if len(set(s.depends_on)) < len(s.depends_on)
                for d, n in Counter(s.depends_on).items() if n > 1]  # fmt: skip
    if repeated:
        pairs = ", ".join(f"{a!r} lists {b!r}" for a, b in repeated[:8])
        raise DuplicateIdError(
            f"repeated dependencies: {pairs} more than once; name each dependency once",
            ids=sorted({a for a, _ in repeated}),
        )
    strays = [(s.id, s.parent) for s in plan.subtasks if s.parent is not None and s.parent
              not in known]  # fmt: skip
    if strays:
        pairs = ", ".join(f"{a!r} names parent {b!r}" for a, b in strays[:8])
        raise UnknownDependencyError(
            f"unknown parents: {pairs}; a parent must be a subtask of the plan (or left out)",
            ids=sorted({a for a, _ in strays}),
        )
    missing = [(s.id, d) for s in plan.subtasks for d in s.depends_on if d not in known]
    if missing:
        pairs = ", ".join(f"{a!r} depends on {b!r}" for a, b in missing[:8])
        raise UnknownDependencyError(
            f"unknown dependencies: {pairs}; every id in depends_on must be a subtask of the plan",
            ids=sorted({a for a, _ in missing}),
        )
    return position


def _in_dependency_order(plan: Plan, position: dict[str, int]) -> bool:
    """Whether every subtask comes after all it depends on: then there is no cycle.

    Plans are usually written in this order; checking it allocates nothing per subtask,
    where the general check (Kahn's algorithm) builds a list of dependents for each.
    """
    for i, st in enumerate(plan.subtasks):
        for dep in st.depends_on:
            if position[dep] >= i:
                return False
    return True


def _check_names(
    plan: Plan, roles: Collection[str] | None, schemas: Collection[str] | None
) -> None:
    if roles is not None:
        bad = [s for s in plan.subtasks if s.role not in roles]
        if bad:
            names = sorted({s.role for s in bad})
            raise UnknownRoleError(
                f"unknown role(s) {_ids_text(names)} in subtasks {_ids_text(s.id for s in bad)}; "
                f"known roles: {', '.join(sorted(roles)) or '(none registered)'}",
                ids=[s.id for s in bad],
            )
    if schemas is not None:
        bad = [s for s in plan.subtasks if s.output_schema and s.output_schema not in schemas]
        if bad:
            names = sorted({s.output_schema or "" for s in bad})
            raise UnknownSchemaError(
                f"unknown output schema(s) {_ids_text(names)} in subtasks "
                f"{_ids_text(s.id for s in bad)}; "
                f"known schemas: {', '.join(sorted(schemas)) or '(none registered)'}",
                ids=[s.id for s in bad],
            )


def find_cycle(graph: nx.DiGraph) -> list[str] | None:
    """One dependency cycle as a list of ids in order, or None if the graph is acyclic."""
    import networkx as nx

    try:
        edges = nx.find_cycle(graph)
    except nx.NetworkXNoCycle:
        return None
    return [u for u, _v, *_ in edges]


def _cycle_nodes(plan: Plan) -> list[str] | None:
    """Kahn's algorithm over plain dicts: None when acyclic, else the subtasks left over."""
    indegree = {s.id: len(s.depends_on) for s in plan.subtasks}
    dependents: dict[str, list[str]] = {s.id: [] for s in plan.subtasks}
    for s in plan.subtasks:
        for dep in s.depends_on:
            dependents[dep].append(s.id)
    stack = [k for k, n in indegree.items() if n == 0]
    seen = 0
    while stack:
        key = stack.pop()
        seen += 1
        for nxt in dependents[key]:
            indegree[nxt] -= 1
            if indegree[nxt] == 0:
                stack.append(nxt)
    if seen == len(indegree):
        return None
    return [k for k, n in indegree.items() if n > 0]


def check_plan(
    plan: Plan,
    *,
    roles: Collection[str] | None = None,
    schemas: Collection[str] | None = None,
    max_subtasks: int = DEFAULT_MAX_SUBTASKS,
    max_dependencies: int = DEFAULT_MAX_DEPENDENCIES,
) -> None:
    """Check that `plan` is a runnable DAG (linear time, no graph built).

    Args:
        plan: the plan to check.
        roles: the role names that have a worker; None skips the check.
        schemas: the registered output-schema names; None skips the check.
        max_subtasks: size limit of the plan.
        max_dependencies: limit on `depends_on` of one subtask.

    Raises:
        EmptyPlanError, PlanLimitError, DuplicateIdError, UnknownDependencyError,
        UnknownRoleError, UnknownSchemaError, CycleError: each names the offending ids.
    """
    _check_size(plan, max_subtasks, max_dependencies)
    position = _check_ids(plan)
    _check_names(plan, roles, schemas)
    if _in_dependency_order(plan, position):
        return
    stuck = _cycle_nodes(plan)
    if stuck is not None:
        by_id = plan.by_id()
        cycle = find_cycle(build_graph(by_id[k] for k in stuck))
        raise CycleError(cycle or stuck)


def validate_plan(
    plan: Plan,
    *,
    roles: Collection[str] | None = None,
    schemas: Collection[str] | None = None,
    max_subtasks: int = DEFAULT_MAX_SUBTASKS,
    max_dependencies: int = DEFAULT_MAX_DEPENDENCIES,
) -> nx.DiGraph:
    """`check_plan`, then the plan's dependency graph (edges dependency → dependent)."""
    check_plan(
        plan,
        roles=roles,
        schemas=schemas,
        max_subtasks=max_subtasks,
        max_dependencies=max_dependencies,
    )
    return build_graph(plan.subtasks)


def topological_generations(graph: nx.DiGraph) -> list[list[str]]:
    """Stages of the DAG: each stage's subtasks depend only on earlier stages."""
    import networkx as nx

    return [sorted(gen) for gen in nx.topological_generations(graph)]


def critical_path(graph: nx.DiGraph, weights: dict[str, float] | None = None) -> list[str]:
    """The longest dependency chain (by node weight, default 1 per subtask)."""
    import networkx as nx

    if graph.number_of_nodes() == 0:
        return []
    best: dict[str, tuple[float, str | None]] = {}
    for node in nx.topological_sort(graph):
        w = 1.0 if weights is None else weights.get(node, 0.0)
        preds = [(best[p][0], p) for p in graph.predecessors(node)]
        top = max(preds, default=(0.0, None))
        best[node] = (top[0] + w, top[1])
    node: str | None = max(best, key=lambda n: best[n][0])
    path: list[str] = []
    while node is not None:
        path.append(node)
        node = best[node][1]
    return path[::-1]


def critical_path_length(graph: nx.DiGraph, weights: dict[str, float] | None = None) -> float:
    """Length of the critical path: subtasks on it, or the sum of their weights."""
    path = critical_path(graph, weights)
    if weights is None:
        return float(len(path))
    return sum(weights.get(n, 0.0) for n in path)


__all__ = [
    "DEFAULT_MAX_DEPENDENCIES",
    "DEFAULT_MAX_SUBTASKS",
    "MAX_INPUTS_BYTES",
    "MAX_TEXT_CHARS",
    "build_graph",
    "check_plan",
    "critical_path",
    "critical_path_length",
    "find_cycle",
    "topological_generations",
    "validate_plan",
]
