"""The scheduler: runs a validated plan's sub-agents under the run's limits.

It runs ready subtasks concurrently as their dependencies finish, passing upstream outputs
to dependents, within `max_concurrency` (adapted down under overload), a model-call rate
limit, per-subtask timeouts, retries with backoff for retryable errors only, the failure
policy, and the budgets. The decisions are the pure functions of `swarm.steps`; the loop
around them is `swarm._run.RunLoop`; events go through `swarm._journal.Journal`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from swarm._journal import EventSink
from swarm._run import RunLoop
from swarm.context import Worker
from swarm.errors import ConfigError
from swarm.limits import Backoff, Budget, RateLimit
from swarm.schema import Plan, RunResult, SubtaskResult
from swarm.steps import FailurePolicy

if TYPE_CHECKING:
    from swarm.llm.protocol import ChatModel
    from swarm.store import RunStore


@dataclass(frozen=True, slots=True)
class SchedulerConfig:
    """How a run is executed. Validated on construction; errors name the bad value."""

    max_concurrency: int = 64
    timeout_s: float = 600.0
    max_retries: int = 2
    failure_policy: FailurePolicy = FailurePolicy.SKIP_DEPENDENTS
    rate_limit: RateLimit | None = None
    budget: Budget = field(default_factory=Budget)
    max_depth: int = 3
    adaptive: bool = True
    backoff: Backoff = field(default_factory=Backoff)
    seed: int | None = None
    #: Where sub-agents run: `local` (this process) or `ray` (see `swarm.executors`).
    executor: str = "local"
    #: The Ray cluster to join (`auto`, `HOST:PORT`, `ray://…`); None: the running or a
    #: local one.
    ray_address: str | None = None
    #: Ray host actors (default: one per node with CPUs).
    ray_hosts: int | None = None

    def __post_init__(self) -> None:
        from swarm.executors import check_executor

        check_executor(self.executor)
        if self.ray_hosts is not None and (
            not isinstance(self.ray_hosts, int) or self.ray_hosts < 1
        ):
            raise ConfigError(f"ray_hosts must be an integer ≥ 1 or None, got {self.ray_hosts!r}")
        if not isinstance(self.max_concurrency, int) or self.max_concurrency < 1:
            raise ConfigError(
                f"max_concurrency must be an integer ≥ 1, got {self.max_concurrency!r}"
            )
        if not 0 < self.timeout_s < math.inf:  # an infinite timeout cannot be armed
            raise ConfigError(
                f"timeout must be a positive finite number of seconds, got {self.timeout_s!r}"
            )
        if not isinstance(self.max_retries, int) or self.max_retries < 0:
            raise ConfigError(f"max_retries must be an integer ≥ 0, got {self.max_retries!r}")
        if not isinstance(self.max_depth, int) or self.max_depth < 0:
            raise ConfigError(f"max_depth must be an integer ≥ 0, got {self.max_depth!r}")
        try:
            object.__setattr__(self, "failure_policy", FailurePolicy(self.failure_policy))
        except ValueError:
            allowed = ", ".join(p.value for p in FailurePolicy)
            raise ConfigError(
                f"unknown failure policy {self.failure_policy!r}; allowed: {allowed}"
            ) from None

    def settings(self) -> dict[str, Any]:
        """The settings as plain JSON, recorded with every run."""
        out = asdict(self)
        out["failure_policy"] = self.failure_policy.value
        return json.loads(json.dumps(out))


class Scheduler:
    """Runs plans with a fixed set of workers, model, schemas, store and sinks.

    `role_outputs` names the default output schema of a role; subtasks spawned at run time
    without an `output_schema` get their role's, as planned subtasks do in `Swarm`.
    """

    def __init__(
        self,
        config: SchedulerConfig,
        *,
        workers: Mapping[str, Worker],
        model: ChatModel | None = None,
        schemas: Mapping[str, type[BaseModel]] | None = None,
        store: RunStore | None = None,
        sinks: Sequence[EventSink] = (),
        role_outputs: Mapping[str, str] | None = None,
    ) -> None:
        self.config = config
        self.workers = dict(workers)
        self.model = model
        self.schemas = dict(schemas or {})
        self.store = store
        self.sinks = list(sinks)
        self.role_outputs = dict(role_outputs or {})

    async def run(
        self,
        plan: Plan,
        *,
        run_id: str,
        done: Mapping[str, SubtaskResult] | None = None,
        resumed: bool = False,
        seq_start: int = 0,
        settings: Mapping[str, Any] | None = None,
    ) -> RunResult:
        """Run `plan` (already validated) to the end; `done` results are reused, not re-run.

        Raises:
            asyncio.CancelledError: the run was cancelled; everything finished so far is
                recorded (and stored), so it can be resumed.
        """
        run = RunLoop(self, plan, run_id, done or {}, seq_start)
        settings = {**self.config.settings(), **(settings or {})}
        return await run.execute(resumed=resumed, settings=settings)


__all__ = ["EventSink", "Scheduler", "SchedulerConfig"]
