"""The scheduler: runs a validated plan's sub-agents under the run's limits.

It runs ready subtasks concurrently as their dependencies finish, passing upstream outputs
to dependents, within `max_concurrency` (adapted down under overload), a model-call rate
limit, per-subtask timeouts, retries with backoff for retryable errors only, the failure
policy, and the budgets. The decisions are the pure functions of `swarm.steps`; one
execution is a `swarm.run_loop.RunLoop`; events go through `swarm.journal.Journal`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kimmy_swarm.swarm.config import RunConfig
from kimmy_swarm.swarm.journal import EventSink
from kimmy_swarm.swarm.run_loop import RunLoop
from kimmy_swarm.swarm.schema import Plan, RunResult, SubtaskResult
from kimmy_swarm.swarm.workforce import Workforce

if TYPE_CHECKING:
    from kimmy_swarm.swarm.events import AgentTurn
    from kimmy_swarm.swarm.store import RunStore


class Scheduler:
    """Runs plans with one workforce, config, store and set of sinks.

    Args:
        config: how runs are executed.
        workforce: workers by role, output schemas (a role's default schema holds for
            subtasks spawned at run time too), and the model.
        store: where runs are written durably (None: nowhere).
        sinks: receivers of every event.
    """

    def __init__(
        self,
        config: RunConfig,
        workforce: Workforce,
        *,
        store: RunStore | None = None,
        sinks: Sequence[EventSink] = (),
    ) -> None:
        self.config = config
        self.workforce = workforce
        self.store = store
        self.sinks = list(sinks)

    async def run(
        self,
        plan: Plan,
        *,
        run_id: str,
        done: Mapping[str, SubtaskResult] | None = None,
        resumed: bool = False,
        seq_start: int = 0,
        settings: Mapping[str, Any] | None = None,
        history: Mapping[str, Sequence[AgentTurn]] | None = None,
    ) -> RunResult:
        """Run `plan` (already validated) to the end; `done` results are reused, not re-run.

        `settings` are recorded in the `run_started` event; the config's own are always
        among them, as they are (what is recorded is what runs). `history` holds the turns
        agents recorded in earlier sessions (a resumed agent continues from them).

        Raises:
            asyncio.CancelledError: the run was cancelled; everything finished so far is
                recorded (and stored), so it can be resumed.
        """
        run = RunLoop(
            self.config,
            self.workforce,
            plan,
            run_id,
            done=done or {},
            seq_start=seq_start,
            store=self.store,
            sinks=self.sinks,
            history=history,
        )
        recorded = {**(settings or {}), **self.config.to_settings()}
        return await run.execute(resumed=resumed, settings=recorded)


__all__ = ["EventSink", "Scheduler"]
