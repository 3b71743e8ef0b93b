"""`RunStats`: the counters of one run, kept from its events in O(1) each.

Pure bookkeeping shared by every progress view (`swarm.progress` re-exports it): no I/O, no
layout. A view reads a `StatsSnapshot` of it a few times a second. The run-wide counters it
shares with the dashboard are `swarm.run_counters.RunCounters`; the per-role and per-status
tallies, times and the ETA are the progress view's own.
"""

from __future__ import annotations

import heapq
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from itertools import islice
from typing import Any, Final

from kimmy_swarm.swarm._progress_render import (
    FailureNote,
    InFlightNote,
    RoleCounts,
    StatsSnapshot,
    truncate,
)
from kimmy_swarm.swarm.event_fold import EventFold
from kimmy_swarm.swarm.events import (
    ApprovalDecided,
    ApprovalRequested,
    BudgetExhausted,
    ConcurrencyChanged,
    Event,
    ModelCalled,
    RunFinished,
    RunStarted,
    SpawnRefused,
    SubtaskFinished,
    SubtaskRetrying,
    SubtasksSpawned,
    SubtaskStarted,
)
from kimmy_swarm.swarm.run_counters import RunCounters
from kimmy_swarm.swarm.schema import RunStatus, SubtaskStatus

Clock = Callable[[], float]

#: Recent failures kept for display; older ones live in the run's store.
MAX_RECENT_FAILURES: Final = 5
#: A failure is shown as one line: `Type: message`, cut to this many characters.
FAILURE_TEXT_CHARS: Final = 120
#: Finish instants the ETA's recent rate is measured over.
RATE_WINDOW: Final = 256
#: Fewer finishes than this give no meaningful rate, so no ETA.
MIN_FINISHES_FOR_ETA: Final = 3
#: In-flight sub-agents listed by age, oldest first.
LONGEST_RUNNING: Final = 5

_FINISHED_STATUSES: Final = tuple(s for s in SubtaskStatus if s.finished)
_SKIPPED_STATUSES: Final = (SubtaskStatus.SKIPPED, SubtaskStatus.SKIPPED_BUDGET)


@dataclass(slots=True)
class _RoleTally:
    #: Subtasks of the role in the plan (RunStarted.roles).
    planned: int = 0
    #: Spawned during the run (SubtasksSpawned).
    spawned: int = 0
    #: Seen first in a start or finish, not spawned: planned ones, as far as the view knows.
    seen: int = 0
    running: int = 0
    done: int = 0
    failed: int = 0
    cancelled: int = 0
    skipped: int = 0

    @property
    def total(self) -> int:
        # `seen` only exceeds `planned` where the plan's roles are unknown (an old event
        # stream, a view attached mid-run); then the subtasks seen are all there is to count.
        return self.spawned + max(self.planned, self.seen)

    def count_end(self, status: SubtaskStatus) -> None:
        if status is SubtaskStatus.DONE:
            self.done += 1
        elif status is SubtaskStatus.FAILED:
            self.failed += 1
        elif status is SubtaskStatus.CANCELLED:
            self.cancelled += 1
        else:
            self.skipped += 1


def _failure_text(error_type: str, message: str) -> str:
    return truncate(f"{error_type}: {message}", FAILURE_TEXT_CHARS)


def _role_order(counts: RoleCounts) -> tuple[int, str]:
    return (-counts.total, counts.role)


class RunStats(RunCounters, EventFold):
    """Counters of one run, updated from its events in O(1) each; no I/O.

    Times come from the injected `clock` (not the events' `ts`) so tests can script them
    and a view's elapsed time keeps moving between events. Role totals are the plan's
    (RunStarted.roles) plus the spawned subtasks; without the plan's roles, the subtasks
    seen so far. Finished means done or failed: cancelled and skipped subtasks are counted
    apart. Unknown event types are ignored: a progress view must never be the reason a run
    fails.
    """

    def __init__(self, *, clock: Clock = time.monotonic) -> None:
        super().__init__()
        self._clock = clock
        self.run_id = ""
        self.goal = ""
        self.status: RunStatus | None = None
        self.stop_reason: str | None = None
        self.budget_reason: str | None = None
        self.planned = 0
        self.spawned = 0
        self.recent_failures: deque[FailureNote] = deque(maxlen=MAX_RECENT_FAILURES)
        self.started_at: float | None = None
        self.finished_at: float | None = None
        self._role_of: dict[str, str] = {}
        self._roles: dict[str, _RoleTally] = {}
        #: In flight: subtask id -> (clock at its first start, role). Insertion order is
        #: start order, so the first entries are the oldest (`longest_running` is O(k)).
        self._running: dict[str, tuple[float, str]] = {}
        self._backing_off: set[str] = set()
        #: Calls waiting for a person (`swarm.approvals`), by call id.
        self._awaiting: set[str] = set()
        self._finished: set[str] = set()
        self._by_status: dict[SubtaskStatus, int] = dict.fromkeys(_FINISHED_STATUSES, 0)
        self._final_counts: dict[str, int] | None = None
        self._finish_times: deque[float] = deque(maxlen=RATE_WINDOW)

    # --- events --------------------------------------------------------------------------

    def wants(self, cls: type[Any]) -> bool:
        return cls in self._handlers  # `handle` only notes when the first event came

    def handle(self, event: Event) -> None:
        """Fold one event into the counters."""
        if self.started_at is None:  # attached mid-run: time from the first event seen
            self.started_at = self._clock()
            self.run_id = event.run_id
        super().handle(event)

    def _role(self, role: str) -> _RoleTally:
        tally = self._roles.get(role)
        if tally is None:
            tally = self._roles[role] = _RoleTally()
        return tally

    def _tally(self, subtask_id: str, role: str, *, spawned: bool = False) -> _RoleTally:
        """The role's tally, counting the subtask towards it the first time it shows."""
        known = self._role_of.get(subtask_id)
        if known is None:
            self._role_of[subtask_id] = role
            tally = self._role(role)
            if spawned:
                tally.spawned += 1
            else:
                tally.seen += 1
            return tally
        return self._roles[known]

    def on_run_started(self, ev: RunStarted) -> None:
        self.run_id, self.goal, self.planned = ev.run_id, ev.goal, ev.n_subtasks
        for role, n in ev.roles.items():
            self._role(role).planned = n
        self.status = RunStatus.RUNNING
        self.limit_from_settings(ev.settings)

    def on_subtask_started(self, ev: SubtaskStarted) -> None:
        sid = ev.subtask_id
        if sid in self._running:  # the next attempt of a retried subtask
            self._backing_off.discard(sid)
        elif sid not in self._finished:
            self._tally(sid, ev.role).running += 1
            self._running[sid] = (self._clock(), ev.role)

    def on_subtask_retrying(self, ev: SubtaskRetrying) -> None:
        self.count_retry()
        # Waiting out its back-off delay: it keeps its admission slot, so it stays in flight.
        if ev.subtask_id in self._running:
            self._backing_off.add(ev.subtask_id)

    def on_subtask_finished(self, ev: SubtaskFinished) -> None:
        result = ev.result
        if result.id in self._finished or not result.status.finished:
            return
        tally = self._tally(result.id, result.role)
        if self._running.pop(result.id, None) is not None:
            self._backing_off.discard(result.id)
            tally.running -= 1
        self._finished.add(result.id)
        self._by_status[result.status] += 1
        tally.count_end(result.status)
        if result.status is SubtaskStatus.FAILED:
            err = result.error
            text = _failure_text(err.type, err.message) if err else "failed (no error recorded)"
            self.recent_failures.append(FailureNote(result.id, result.role, text))
        self._finish_times.append(self._clock())

    def on_model_called(self, ev: ModelCalled) -> None:
        self.count_model_call(ev.usage.total_tokens, failed=ev.error is not None)

    def on_subtasks_spawned(self, ev: SubtasksSpawned) -> None:
        for sub in ev.subtasks:
            if sub.id not in self._role_of:
                self.spawned += 1
                self._tally(sub.id, sub.role, spawned=True)

    def on_spawn_refused(self, ev: SpawnRefused) -> None:
        self.count_spawn_refused()

    def on_approval_requested(self, ev: ApprovalRequested) -> None:
        self._awaiting.add(ev.call_id)

    def on_approval_decided(self, ev: ApprovalDecided) -> None:
        self._awaiting.discard(ev.call_id)

    def on_concurrency_changed(self, ev: ConcurrencyChanged) -> None:
        self.limit_changed(ev.limit)

    def on_budget_exhausted(self, ev: BudgetExhausted) -> None:
        self.budget_reason = ev.reason

    def on_run_finished(self, ev: RunFinished) -> None:
        self.status, self.stop_reason = ev.status, ev.stop_reason
        self.finished_at = self._clock()
        if ev.counts:
            # The scheduler's own tally wins: it also counts subtasks that never got an
            # event of their own (e.g. everything left pending when a budget ran out).
            self._final_counts = {s.value: ev.counts.get(s.value, 0) for s in SubtaskStatus}

    # --- derived numbers -----------------------------------------------------------------

    @property
    def total(self) -> int:
        """Subtasks known: planned plus spawned (or seen, if RunStarted was missed)."""
        return max(self.planned + self.spawned, len(self._role_of))

    @property
    def in_flight(self) -> int:
        """Subtasks holding an admission slot: running an attempt or backing off to retry."""
        return len(self._running)

    @property
    def backing_off(self) -> int:
        """Of those in flight, the ones waiting out a retry delay."""
        return len(self._backing_off)

    def counts_by_status(self) -> dict[str, int]:
        """Subtasks per `SubtaskStatus` value; every status is present."""
        if self._final_counts is not None:
            return dict(self._final_counts)
        counts = {s.value: n for s, n in self._by_status.items()}
        running = len(self._running)
        counts[SubtaskStatus.RUNNING.value] = running
        counts[SubtaskStatus.PENDING.value] = max(0, self.total - len(self._finished) - running)
        return {s.value: counts[s.value] for s in SubtaskStatus}

    def _count(self, *statuses: SubtaskStatus) -> int:
        if self._final_counts is not None:
            return sum(self._final_counts[s.value] for s in statuses)
        return sum(self._by_status[s] for s in statuses)

    @property
    def finished(self) -> int:
        """Subtasks that ran to an end: done or failed (cancelled and skipped are apart)."""
        return self._count(SubtaskStatus.DONE, SubtaskStatus.FAILED)

    @property
    def cancelled(self) -> int:
        """Subtasks stopped while running."""
        return self._count(SubtaskStatus.CANCELLED)

    @property
    def skipped(self) -> int:
        """Subtasks that never ran: after a failed dependency, or for a spent budget."""
        return self._count(*_SKIPPED_STATUSES)

    @property
    def settled(self) -> int:
        """Subtasks in any final status: finished, cancelled or skipped."""
        if self._final_counts is not None:
            return self._count(*_FINISHED_STATUSES)
        return len(self._finished)

    def longest_running(self, top: int = LONGEST_RUNNING) -> list[InFlightNote]:
        """The `top` sub-agents in flight the longest, oldest first, with their ages.

        O(top): the in-flight map is kept in start order.
        """
        now = self.finished_at if self.finished_at is not None else self._clock()
        return [
            InFlightNote(sid, role, max(0.0, now - since))
            for sid, (since, role) in islice(self._running.items(), top)
        ]

    def elapsed_s(self) -> float:
        if self.started_at is None:
            return 0.0
        end = self.finished_at if self.finished_at is not None else self._clock()
        return max(0.0, end - self.started_at)

    def eta_s(self) -> float | None:
        """Seconds left at the recent finishing rate; None while that rate means nothing.

        The rate is measured over the last `RATE_WINDOW` finishes up to now, so it falls
        while the run stalls and the ETA grows instead of freezing.
        """
        if self.finished_at is not None or self.status is None:
            return None
        remaining = self.total - self.settled
        if remaining <= 0:
            return 0.0
        window = self._finish_times
        if len(window) < MIN_FINISHES_FOR_ETA:
            return None
        span = self._clock() - window[0]
        if span <= 0:
            return None
        return remaining * span / (len(window) - 1)

    def roles(self, top: int | None = None) -> list[RoleCounts]:
        """Per-role counts, largest total first (then by name); the first `top` if given."""
        items = [
            RoleCounts(r, t.total, t.running, t.done, t.failed, t.cancelled, t.skipped)
            for r, t in self._roles.items()
        ]
        if top is not None:
            return heapq.nsmallest(top, items, key=_role_order)
        return sorted(items, key=_role_order)

    def snapshot(self, *, top_roles: int = 10) -> StatsSnapshot:
        """All numbers at once. O(roles); meant for a renderer, not for every event."""
        elapsed = self.elapsed_s()
        return StatsSnapshot(
            run_id=self.run_id,
            goal=self.goal,
            status=self.status,
            stop_reason=self.stop_reason,
            budget_reason=self.budget_reason,
            elapsed_s=elapsed,
            eta_s=self.eta_s(),
            total=self.total,
            finished=self.finished,
            cancelled=self.cancelled,
            skipped=self.skipped,
            settled=self.settled,
            counts=self.counts_by_status(),
            in_flight=self.in_flight,
            backing_off=self.backing_off,
            concurrency_limit=self.concurrency_limit,
            spawned=self.spawned,
            spawn_refused=self.spawn_refused,
            retries=self.retries,
            awaiting_approval=len(self._awaiting),
            model_calls=self.model_calls,
            failed_model_calls=self.failed_model_calls,
            tokens=self.tokens,
            subtasks_per_s=self.finished / elapsed if elapsed > 0 else 0.0,
            calls_per_s=self.model_calls / elapsed if elapsed > 0 else 0.0,
            roles=tuple(self.roles(top_roles)),
            n_roles=len(self._roles),
            failures=tuple(self.recent_failures),
            longest_running=tuple(self.longest_running()),
        )


__all__ = ["Clock", "RunStats"]
