"""The scheduler's step logic, kept apart from the async loop (as LangGraph's `_algo.py`).

These functions do no I/O and know nothing of asyncio: given a `RunState` they decide which
subtasks are ready, apply a finished result (releasing dependents or skipping them by the
failure policy), add spawned subtasks, and stop the rest of a run. Their only effect is on
the state object they are handed, so every rule is testable with plain data.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from kimmy_swarm.swarm.dag import build_graph, find_cycle
from kimmy_swarm.swarm.errors import SpawnError
from kimmy_swarm.swarm.schema import (
    ErrorInfo,
    Plan,
    Subtask,
    SubtaskResult,
    SubtaskStatus,
    Timings,
    Usage,
)

# Enum members as module globals: a class-attribute lookup on an Enum costs several times
# more, and these are read once or more per sub-agent.
_PENDING = SubtaskStatus.PENDING
_RUNNING = SubtaskStatus.RUNNING
_DONE = SubtaskStatus.DONE
_FAILED = SubtaskStatus.FAILED


class FailurePolicy(StrEnum):
    """What a failed subtask does to the rest of the run."""

    #: Stop the run: cancel nothing in flight, dispatch nothing more, skip the rest.
    FAIL_FAST = "fail_fast"
    #: Skip the failed subtask's transitive dependents; siblings go on (default).
    SKIP_DEPENDENTS = "skip_dependents"
    #: Dependents still run, and see the failure in their upstream results.
    CONTINUE = "continue"


@dataclass(slots=True)
class RunState:
    """Where a run stands: every subtask's status, what waits on what, what is ready."""

    subtasks: dict[str, Subtask]
    status: dict[str, SubtaskStatus]
    #: Unfinished dependencies per pending subtask.
    waiting: dict[str, int]
    dependents: dict[str, list[str]]
    results: dict[str, SubtaskResult] = field(default_factory=dict)
    ready: deque[str] = field(default_factory=deque)
    policy: FailurePolicy = FailurePolicy.SKIP_DEPENDENTS
    #: Sub-agents started in this session (retries excluded); checked against the budget.
    started: int = 0
    #: Subtasks dispatched and not yet finished.
    running: int = 0
    n_finished: int = 0
    #: Why dispatching stopped (fail-fast, budget, cancellation); None while running.
    stop_reason: str | None = None

    @property
    def finished(self) -> bool:
        return self.n_finished == len(self.subtasks)


def new_state(
    plan: Plan,
    *,
    policy: FailurePolicy = FailurePolicy.SKIP_DEPENDENTS,
    done: Mapping[str, SubtaskResult] | None = None,
) -> RunState:
    """The state at the start of a run; `done` holds results reused from an earlier session.

    Only `done` results are reused; every other subtask runs (again).
    """
    done = {k: r for k, r in (done or {}).items() if r.status is _DONE}
    items = plan.subtasks
    subtasks = {s.id: s for s in items}
    dependents: dict[str, list[str]] = {k: [] for k in subtasks}
    status = dict.fromkeys(subtasks, _PENDING)
    waiting: dict[str, int] = {}
    ready: deque[str] = deque()
    for st in items:
        key = st.id
        deps = st.depends_on
        for dep in deps:
            dependents[dep].append(key)
        if key in done:
            status[key] = _DONE
            continue
        n = sum(1 for d in deps if d not in done) if done else len(deps)
        waiting[key] = n
        if n == 0:
            ready.append(key)
    return RunState(
        subtasks=subtasks,
        status=status,
        waiting=waiting,
        dependents=dependents,
        results=dict(done),
        ready=ready,
        policy=policy,
        n_finished=len(done),
    )


def take_ready(state: RunState, n: int) -> list[Subtask]:
    """Pop up to `n` ready subtasks and mark them running (none once the run is stopping)."""
    out: list[Subtask] = []
    if state.stop_reason is not None:
        return out
    ready, status, waiting, subtasks = state.ready, state.status, state.waiting, state.subtasks
    while ready and len(out) < n:
        key = ready.popleft()
        # Stale entries: already taken, or a spawn gave it a new dependency since.
        if status[key] is not _PENDING or waiting[key] > 0:
            continue
        status[key] = _RUNNING
        out.append(subtasks[key])
    state.started += len(out)
    state.running += len(out)
    return out


def _record(state: RunState, result: SubtaskResult) -> None:
    if state.status[result.id] is _RUNNING:
        state.running -= 1
    state.status[result.id] = result.status
    state.results[result.id] = result
    state.waiting.pop(result.id, None)
    state.n_finished += 1


def _not_run(st: Subtask, status: SubtaskStatus, error: ErrorInfo, now: float) -> SubtaskResult:
    return SubtaskResult.model_construct(
        id=st.id,
        role=st.role,
        status=status,
        output=None,
        error=error,
        usage=Usage(),
        timings=Timings.model_construct(started_at=None, finished_at=now),
        attempts=0,
    )


def _release(state: RunState, key: str) -> list[str]:
    ready = []
    status, waiting = state.status, state.waiting
    for dep in state.dependents[key]:
        if status.get(dep) is not _PENDING:
            continue
        left = waiting[dep] - 1
        waiting[dep] = left
        if left == 0:
            state.ready.append(dep)
            ready.append(dep)
    return ready


def _descendants(state: RunState, key: str) -> list[str]:
    seen: set[str] = set()
    order: list[str] = []
    stack = list(state.dependents[key])
    while stack:
        k = stack.pop()
        if k in seen:
            continue
        seen.add(k)
        order.append(k)
        stack.extend(state.dependents[k])
    return order


@dataclass(frozen=True, slots=True)
class Applied:
    """What applying one result changed."""

    newly_ready: list[str]
    #: Results of subtasks that will not run because of this one (skipped).
    skipped: list[SubtaskResult]


def apply_result(state: RunState, result: SubtaskResult, *, now: float) -> Applied:
    """Record a finished subtask and propagate it by the failure policy.

    `now` (seconds since the epoch) is when the subtasks this skips finished.
    """
    _record(state, result)
    if result.status is _DONE or (
        result.status is _FAILED and state.policy is FailurePolicy.CONTINUE
    ):
        return Applied(_release(state, result.id), [])
    if result.status is not _FAILED:
        return Applied([], [])
    if state.policy is FailurePolicy.FAIL_FAST:
        state.stop_reason = f"subtask {result.id!r} failed and the policy is fail_fast"
        return Applied([], stop_pending(state, SubtaskStatus.SKIPPED, state.stop_reason, now=now))
    err = ErrorInfo(type="DependencyFailed", message=f"dependency {result.id!r} failed")
    skipped = []
    for k in _descendants(state, result.id):
        if state.status.get(k) is SubtaskStatus.PENDING:
            res = _not_run(state.subtasks[k], SubtaskStatus.SKIPPED, err, now)
            _record(state, res)
            skipped.append(res)
    return Applied([], skipped)


def stop_pending(
    state: RunState, status: SubtaskStatus, reason: str, *, now: float
) -> list[SubtaskResult]:
    """Stop dispatching; every subtask not yet started finishes with `status` at `now`
    (seconds since the epoch)."""
    if state.stop_reason is None:
        state.stop_reason = reason
    err = ErrorInfo(type="NotRun", message=reason)
    out = []
    for key, st in state.subtasks.items():
        if state.status[key] is SubtaskStatus.PENDING:
            res = _not_run(st, status, err, now)
            _record(state, res)
            out.append(res)
    state.ready.clear()
    return out


def _satisfied(state: RunState, key: str) -> bool:
    status = state.status[key]
    return status is SubtaskStatus.DONE or (
        status is SubtaskStatus.FAILED and state.policy is FailurePolicy.CONTINUE
    )


def _unusable(state: RunState, key: str) -> bool:
    return state.status[key].finished and not _satisfied(state, key)


def _spawn_ancestors(state: RunState, new: Sequence[Subtask]) -> dict[str, str]:
    """The existing ancestors of `new`, each mapped to the next id on a path down to one.

    Following the map from an ancestor ends at a new subtask, so a feed edge into an
    ancestor can be reported as the whole cycle it closes, in order.
    """
    down: dict[str, str] = {}
    stack: list[str] = []
    for st in new:
        for dep in st.depends_on:
            if dep in state.subtasks and dep not in down:
                down[dep] = st.id
                stack.append(dep)
    while stack:
        key = stack.pop()
        for dep in state.subtasks[key].depends_on:
            if dep not in down:
                down[dep] = key
                stack.append(dep)
    return down


def _fed(state: RunState, target: str, new: Sequence[Subtask]) -> bool:
    """Whether `target` already depends on every one of `new`."""
    deps = state.subtasks[target].depends_on
    return all(st.id in deps for st in new)


def _check_spawn(
    state: RunState, parent: Subtask, new: Sequence[Subtask], feeds: Sequence[str]
) -> None:
    ids = [s.id for s in new]
    batch = set(ids)
    if len(batch) != len(ids):
        raise SpawnError(f"spawn from {parent.id!r} repeats ids {sorted(ids)}", ids=ids)
    clash = [i for i in ids if i in state.subtasks]
    if clash:
        raise SpawnError(f"spawn from {parent.id!r}: ids already in the run: {clash}", ids=clash)
    for st in new:
        unknown = [d for d in st.depends_on if d not in batch and d not in state.subtasks]
        if unknown:
            raise SpawnError(
                f"spawned subtask {st.id!r} depends on unknown ids {unknown}", ids=[st.id]
            )
        dead = [d for d in st.depends_on if d not in batch and _unusable(state, d)]
        if dead:
            raise SpawnError(
                f"spawned subtask {st.id!r} depends on {dead}, which ended without output "
                f"({', '.join(state.status[d].value for d in dead)})",
                ids=[st.id],
            )
    for f in feeds:
        if f not in state.subtasks:
            raise SpawnError(f"spawn from {parent.id!r} feeds unknown subtask {f!r}", ids=[f])
        if state.status[f] is not SubtaskStatus.PENDING:
            raise SpawnError(
                f"spawn from {parent.id!r} cannot feed {f!r}: it is already "
                f"{state.status[f].value}; only pending subtasks can gain dependencies",
                ids=[f],
            )
    internal = [
        s.model_copy(update={"depends_on": [d for d in s.depends_on if d in batch]}) for s in new
    ]
    cycle = find_cycle(build_graph(internal)) if any(s.depends_on for s in internal) else None
    if cycle is None and feeds:
        down = _spawn_ancestors(state, new)
        looped = next((f for f in feeds if f in down), None)
        if looped is not None:  # looped -> ... -> a new subtask, which would feed `looped`
            cycle = [looped]
            while cycle[-1] in down:
                cycle.append(down[cycle[-1]])
    if cycle is not None:
        raise SpawnError(
            f"spawn from {parent.id!r} refused: it would create the cycle "
            f"{' -> '.join([*cycle, cycle[0]])}",
            ids=cycle,
        )


def add_subtasks(
    state: RunState,
    parent_id: str,
    new: Sequence[Subtask],
    *,
    feeds: Sequence[str] = (),
    max_subagents: int | None = None,
    max_depth: int | None = None,
) -> tuple[list[Subtask], list[tuple[str, str]]]:
    """Add subtasks spawned by a running subtask to the live DAG.

    Each new subtask gets `parent` and `depth` set; every id in `feeds` (pending subtasks)
    gains a dependency on every new subtask. Subtasks identical to ones the same parent
    already spawned (a retried or resumed parent) are accepted again without effect.

    Returns:
        The subtasks actually added and the (dependency, dependent) edges added to `feeds`.

    Raises:
        SpawnError: a cycle, an unknown or taken id, a non-pending feed target, or the
            depth / sub-agent limit; nothing is added then.
    """
    parent = state.subtasks[parent_id]
    depth = parent.depth + 1
    stamped = [s.model_copy(update={"parent": parent_id, "depth": depth}) for s in new]
    fresh = [s for s in stamped if state.subtasks.get(s.id) != s]
    if feeds:  # a repeated spawn (retried or resumed parent) need not feed targets again
        feeds = [f for f in feeds if f not in state.subtasks or not _fed(state, f, stamped)]
    if not fresh and not feeds:
        return [], []
    if max_depth is not None and depth > max_depth:
        raise SpawnError(
            f"spawn from {parent_id!r} refused: depth {depth} exceeds max_depth {max_depth}",
            ids=[s.id for s in fresh],
        )
    if max_subagents is not None and len(state.subtasks) + len(fresh) > max_subagents:
        raise SpawnError(
            f"spawn from {parent_id!r} refused: {len(state.subtasks)} + {len(fresh)} "
            f"sub-agents exceeds max_subagents {max_subagents}",
            ids=[s.id for s in fresh],
        )
    _check_spawn(state, parent, fresh, feeds)
    for st in fresh:
        state.subtasks[st.id] = st
        state.dependents[st.id] = []
        state.status[st.id] = SubtaskStatus.PENDING
    for st in fresh:
        for dep in st.depends_on:
            state.dependents[dep].append(st.id)
        n = sum(1 for d in st.depends_on if not _satisfied(state, d))
        state.waiting[st.id] = n
        if n == 0:
            state.ready.append(st.id)
    edges = [(s.id, f) for f in feeds for s in fresh]
    new_ids = [s.id for s in fresh]
    for target in feeds:  # one copy per target, however many subtasks feed it
        st = state.subtasks[target]
        state.subtasks[target] = st.model_copy(update={"depends_on": [*st.depends_on, *new_ids]})
        state.waiting[target] += len(new_ids)
        for dep in new_ids:
            state.dependents[dep].append(target)
    return fresh, edges


__all__ = [
    "Applied",
    "FailurePolicy",
    "RunState",
    "add_subtasks",
    "apply_result",
    "new_state",
    "stop_pending",
    "take_ready",
]
