"""One execution of a plan: the async loop around the pure step logic of `swarm.steps`.

Per-sub-agent overhead is kept small on purpose (no per-event work when nobody listens,
one task per running subtask, shared deadline timers, results built without re-validating
what this module itself produced), since a run may have 10,000 sub-agents.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kimmy_swarm.swarm import events as ev
from kimmy_swarm.swarm.agent_turns import TurnLog
from kimmy_swarm.swarm.approvals import Approvals
from kimmy_swarm.swarm.call_meter import CallMeter
from kimmy_swarm.swarm.deadlines import Deadlines
from kimmy_swarm.swarm.errors import BudgetExceededError, SpawnError
from kimmy_swarm.swarm.journal import EventSink, Journal
from kimmy_swarm.swarm.live_tokens import LiveTokens
from kimmy_swarm.swarm.schema import (
    ErrorInfo,
    Plan,
    RunResult,
    RunStatus,
    Subtask,
    SubtaskResult,
    SubtaskStatus,
    Usage,
)
from kimmy_swarm.swarm.steps import add_subtasks, apply_result, new_state, stop_pending, take_ready
from kimmy_swarm.swarm.subtask_runner import SubtaskRunner
from kimmy_swarm.swarm.unvalidated import trusted
from kimmy_swarm.swarm.waits import Waits

if TYPE_CHECKING:
    from kimmy_swarm.swarm.config import RunConfig
    from kimmy_swarm.swarm.store import RunStore
    from kimmy_swarm.swarm.workforce import Workforce


def _ignore_after_end(_: object) -> None:
    """A callback (failure, task done) arriving after its run ended has nothing left to do."""


class RunLoop:
    """One execution of a plan: its state, the dispatch loop, and the spawn callback.

    Its parts are composed, each handed what it needs: the `Journal` (events, durability),
    the `CallMeter` (model calls: admission, rate limit, token budget), the
    `SubtaskRunner` (attempts of each subtask), and the pure step logic of `swarm.steps`.

    Args:
        config: the run's settings.
        workforce: workers, schemas and the model.
        plan: the (validated) plan.
        run_id: the run.
        done: results of an earlier session, reused as they are.
        seq_start: the number of the run's next event.
        store: where events are written before they count (None: nowhere).
        sinks: receivers of every event.
        history: the turns agents recorded in earlier sessions, by subtask id.
    """

    def __init__(
        self,
        config: RunConfig,
        workforce: Workforce,
        plan: Plan,
        run_id: str,
        *,
        done: Mapping[str, SubtaskResult],
        seq_start: int,
        store: RunStore | None,
        sinks: Sequence[EventSink],
        history: Mapping[str, Sequence[ev.AgentTurn]] | None = None,
    ) -> None:
        self.cfg = config
        self.workforce = workforce
        self.plan = plan
        self.run_id = run_id
        self.state = new_state(plan, policy=config.failure_policy, done=done)
        self.journal = Journal(
            run_id, store=store, sinks=sinks, seq_start=seq_start, on_fatal=self.fail
        )
        self.emit = self.journal.emit
        self.meter = CallMeter(
            config, self.journal, on_limit_changed=self.dispatch, on_tokens_spent=self.exhaust
        )
        #: What watched sub-agents are writing, for viewers in other processes.
        self.live: LiveTokens | None = None
        if store is not None and self.meter.deltas is not None:
            self.live = LiveTokens(store.runs_dir, run_id, self.meter.deltas)
            self.live.start()
        self._on_cancelled = self.on_cancelled
        self.tasks: dict[asyncio.Task[None], Subtask] = {}
        self.waits = Waits(self.state, on_parked=self.dispatch)
        deadlines = Deadlines()
        self.store = store
        self.approvals = Approvals(
            run_id, config.approvals, self.journal, store, deadlines, on_parked=self.dispatch
        )
        self.runner = SubtaskRunner(
            run_id=run_id,
            config=config,
            workforce=workforce,
            state=self.state,
            journal=self.journal,
            deadlines=deadlines,
            meter=self.meter,
            rng=random.Random(config.seed),
            spawn=self.spawn,
            wait=self.waits.wait,
            approvals=self.approvals,
            turns=TurnLog(self.journal, history),
            tasks=self.tasks,
            finished=self.finished,
            fail=self.fail,
            halt=self.halt,
        )
        self.done_event = asyncio.Event()
        self.final_status: RunStatus | None = None
        self.fatal: BaseException | None = None
        #: Why the run stops early and resumable (the model server is unreachable).
        self.halted: str | None = None
        self.started_at = time.time()

    def fail(self, exc: BaseException) -> None:
        if self.fatal is None:
            self.fatal = exc
        self.done_event.set()

    def halt(self, reason: str) -> None:
        """Stop the run, resumable: nothing more starts, what runs is cancelled, what has not
        finished stays for `kimmy resume` (the model server is unreachable)."""
        if self.halted is None and self.state.stop_reason is None:
            self.halted = self.state.stop_reason = reason
            self.done_event.set()

    # --- the main loop ----------------------------------------------------------------

    async def execute(self, *, resumed: bool, settings: dict[str, Any]) -> RunResult:
        try:
            return await self._execute(resumed=resumed, settings=settings)
        finally:
            self._unlink()

    def _unlink(self) -> None:
        """Break the run's reference cycles (its journal and call gate call back into it).

        Then the run's state — 10,000 results and their tasks — is freed by reference
        counting when the caller drops it, instead of waiting for a full pass of the cyclic
        garbage collector, which on a large heap costs tens of milliseconds per pass.
        """
        self.journal.close()
        self.journal.on_fatal = _ignore_after_end
        self.meter.close()
        if self.live is not None:
            self.live.close()
        self.waits.close()
        self.approvals.close()
        self.runner.finished = self.runner.fail = self.runner.halt = _ignore_after_end
        self._on_cancelled = _ignore_after_end
        if self.state.stop_reason is None:  # nothing may start in a run that has ended
            self.state.stop_reason = "run ended"

    async def _execute(self, *, resumed: bool, settings: dict[str, Any]) -> RunResult:
        self.started_at = time.time()  # the instant of `run_started` (`RunResult.wall_s`)
        self.emit(
            ev.RunStarted,
            goal=self.plan.goal,
            n_subtasks=len(self.state.subtasks),
            resumed=resumed,
            settings=settings,
            roles=dict(Counter(st.role for st in self.state.subtasks.values())),
        )
        if resumed and self.store is not None:
            self._load_approvals(self.store)
        loop = asyncio.get_running_loop()
        deadline = self.cfg.deadline_s
        handle = loop.call_later(deadline, self.on_deadline) if deadline else None
        try:
            self.dispatch()
            self.check_done()
            await self.done_event.wait()
        except asyncio.CancelledError:
            await self.stop_in_flight("run cancelled", RunStatus.CANCELLED)
            await self.finish()
            raise
        finally:
            if handle is not None:
                handle.cancel()
        if self.fatal is not None:
            await self.stop_in_flight(f"run aborted: {self.fatal}", RunStatus.CANCELLED)
            await self.finish()
            raise self.fatal
        if self.halted is not None:
            await self.stop_in_flight(self.halted, RunStatus.CANCELLED)
        return await self.finish()

    def _load_approvals(self, store: RunStore) -> None:
        """The calls earlier sessions asked a person about (still waiting, or answered)."""
        earlier = store.approvals(self.run_id)
        if earlier:
            announced = {
                e.call_id
                for e in store.events(self.run_id, types=["approval_decided"])
                if isinstance(e, ev.ApprovalDecided)
            }
            self.approvals.load(earlier, announced)

    async def stop_in_flight(self, reason: str, status: RunStatus) -> None:
        """Cancel every running sub-agent and wait until each has recorded its result."""
        self.final_status = status
        self.runner.cancel_error = asyncio.CancelledError(reason)
        if self.state.stop_reason is None:
            self.state.stop_reason = reason
        tasks = self.cancel_tasks()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    async def finish(self) -> RunResult:
        await self.journal.drain()
        state = self.state
        results = dict(state.results)
        if len(results) < len(state.subtasks):  # stopped early: pending ones say so
            for key, st in state.subtasks.items():
                if key not in results:
                    results[key] = SubtaskResult(id=key, role=st.role, status=state.status[key])
        usage = Usage.total(r.usage for r in results.values())
        counts = {str(k): n for k, n in Counter(r.status for r in results.values()).items()}
        status = self.final_status or (
            RunStatus.COMPLETED if counts.get("done", 0) == len(results) else RunStatus.PARTIAL
        )
        finished_at = time.time()  # the instant of `run_finished`, before the store's writes
        self.emit(
            ev.RunFinished,
            status=status,
            stop_reason=state.stop_reason,
            usage=usage,
            counts=counts,
        )
        await self.journal.drain()
        return trusted(
            RunResult,
            {
                "run_id": self.run_id,
                "goal": self.plan.goal,
                "status": status,
                "stop_reason": state.stop_reason,
                "results": results,
                "usage": usage,
                "started_at": self.started_at,
                "finished_at": finished_at,
            },
        )

    def check_done(self) -> None:
        if self.state.finished:
            self.done_event.set()

    def dispatch(self) -> None:
        """Start as many ready subtasks as the limits allow."""
        state = self.state
        if state.stop_reason is not None or not state.ready:
            return
        room = self.meter.limit() - state.running + self.waits.parked + self.approvals.parked
        cap = self.cfg.max_subagents
        if cap is not None:
            room = min(room, cap - state.started)
            waiting = len(state.subtasks) - state.n_finished - state.running
            if cap - state.started <= 0 and waiting > 0:
                self.exhaust(f"sub-agent budget of {cap} spent")
                return
        if room <= 0:
            return
        loop = asyncio.get_running_loop()
        run = self.runner.run
        for st in take_ready(state, room):
            task = loop.create_task(run(st))
            self.tasks[task] = st  # the runner removes it when it has recorded its result
        if state.running == 0 and not state.finished and state.stop_reason is None:
            self.fail(RuntimeError("scheduler stalled: nothing running and nothing ready"))

    def cancel_tasks(self) -> list[asyncio.Task[None]]:
        """Cancel every running sub-agent; those cancelled before they began get a result too."""
        tasks = list(self.tasks)
        for t in tasks:
            t.cancel()
            t.add_done_callback(self._on_cancelled)
        return tasks

    def on_cancelled(self, task: asyncio.Task[None]) -> None:
        # Still listed: cancelled before `run_subtask` began, so it recorded nothing.
        st = self.tasks.pop(task, None)
        if st is not None and task.cancelled():
            self.finished(self.runner.never_started(st))

    def exhaust(self, reason: str, *, cancels_in_flight: bool = False) -> bool:
        """A budget is spent: start nothing more; what has not started is skipped.

        Returns whether the run stopped: a budget spent by the very last work of a run
        (nothing left to skip or cancel) stops nothing, and the run ends as it would have.
        """
        state = self.state
        if state.stop_reason is not None:
            return False
        not_started = len(state.subtasks) - state.n_finished - state.running
        if not_started == 0 and not (cancels_in_flight and state.running > 0):
            return False
        self.final_status = RunStatus.BUDGET_EXHAUSTED
        self.emit(ev.BudgetExhausted, reason=reason)
        stopped = stop_pending(self.state, SubtaskStatus.SKIPPED_BUDGET, reason, now=time.time())
        for res in stopped:
            self.emit(ev.SubtaskFinished, result=res)
        self.waits.notify([r.id for r in stopped])
        self.check_done()
        return True

    def on_deadline(self) -> None:
        reason = f"deadline of {self.cfg.deadline_s:g}s reached"
        if not self.exhaust(reason, cancels_in_flight=True):
            return
        self.runner.cancel_error = BudgetExceededError(reason)
        self.cancel_tasks()

    def finished(self, result: SubtaskResult) -> None:
        """Record a sub-agent's result; its dependents are released once it is durable."""
        if not self.journal.listened:  # nothing to write: apply at once
            self.apply(result)
            return
        self.emit(ev.SubtaskFinished, result=result)
        self.journal.after_commit(lambda: self.apply(result))

    def apply(self, result: SubtaskResult) -> None:
        applied = apply_result(self.state, result, now=time.time())
        for res in applied.skipped:
            self.emit(ev.SubtaskFinished, result=res)
        self.waits.notify([result.id, *(r.id for r in applied.skipped)])
        if self.state.stop_reason is not None and self.final_status is None:
            self.final_status = RunStatus.FAILED
        self.dispatch()
        self.check_done()

    # --- callbacks from sub-agents ----------------------------------------------------

    def _check_spawn_names(self, parent: Subtask, subtasks: Sequence[Subtask]) -> None:
        if self.state.stop_reason is not None:
            raise SpawnError(
                f"spawn from {parent.id!r} refused: the run is stopping ({self.state.stop_reason})"
            )
        workforce = self.workforce
        workers, schemas = workforce.workers, workforce.schemas
        unknown = sorted({s.role for s in subtasks if workforce.worker_for(s) is None})
        if unknown:
            raise SpawnError(
                f"spawn from {parent.id!r} names unknown roles {unknown}; "
                f"known roles: {', '.join(sorted(workers))}"
            )
        names = {s.output_schema for s in subtasks if s.output_schema is not None} - set(schemas)
        if names:
            raise SpawnError(
                f"spawn from {parent.id!r} names unknown output schemas {sorted(names)}; "
                f"known: {', '.join(sorted(schemas)) or '(none)'}"
            )

    def spawn(
        self, parent: Subtask, subtasks: Sequence[Subtask], feeds: Sequence[str]
    ) -> list[Subtask]:
        outputs = self.workforce.role_outputs
        if outputs:  # a role's default output schema holds for spawned subtasks too
            subtasks = [
                s.model_copy(update={"output_schema": outputs[s.role]})
                if s.output_schema is None and s.role in outputs
                else s
                for s in subtasks
            ]
        try:
            self._check_spawn_names(parent, subtasks)
            fresh, edges = add_subtasks(
                self.state,
                parent.id,
                subtasks,
                feeds=feeds,
                max_subagents=self.cfg.max_subagents,
                max_depth=self.cfg.max_depth,
            )
        except SpawnError as exc:
            self.emit(ev.SpawnRefused, parent_id=parent.id, error=ErrorInfo.from_exception(exc))
            raise
        if fresh or edges:
            self.emit(ev.SubtasksSpawned, parent_id=parent.id, subtasks=fresh, edges=edges)
            self.dispatch()
        return fresh


__all__ = ["RunLoop"]
