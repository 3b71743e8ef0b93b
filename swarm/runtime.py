"""`Swarm`: the Python entry point — register roles, then execute, stream or resume plans.

swarm = Swarm(max_concurrency=256, runs_dir="runs")

@swarm.role("summarizer", output=Summary)
async def summarize(ctx: SubtaskContext) -> Summary:
    ...

result = swarm.run_sync(plan)
"""

from __future__ import annotations

import asyncio
import re
import secrets
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from kimmy_swarm.swarm.approval_records import Approval, Decision
from kimmy_swarm.swarm.config import RunConfig
from kimmy_swarm.swarm.dag import check_plan, validate_plan
from kimmy_swarm.swarm.errors import ConfigError, UnknownRoleError
from kimmy_swarm.swarm.events import Event
from kimmy_swarm.swarm.journal import EventSink
from kimmy_swarm.swarm.planfile import load_plan, parse_plan
from kimmy_swarm.swarm.scheduler import Scheduler
from kimmy_swarm.swarm.schema import ROLE_PATTERN, Plan, RunResult
from kimmy_swarm.swarm.worker import Worker
from kimmy_swarm.swarm.workforce import RoleFactory, Workforce

if TYPE_CHECKING:
    import networkx as nx

    from kimmy_swarm.swarm.executors.ray import RayExecutor
    from kimmy_swarm.swarm.llm.protocol import ChatModel
    from kimmy_swarm.swarm.store import RunStore


def new_run_id() -> str:
    """A sortable, unique run id: `YYYYmmdd-HHMMSS-xxxxxx`."""
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


PlanLike = Plan | Mapping[str, Any] | str | Path


class Swarm:
    """A configured swarm: roles (workers), a model, run settings, and where runs are stored.

    Args:
        config: how runs are executed (`RunConfig`: concurrency, timeouts, retries,
            failure policy, rate limit, budgets, executor, …).
        model: the `ChatModel` sub-agents call (None: workers must not need one).
        roles: workers by role name; more can be added with `role` / `add_role`.
        schemas: output schemas by name, for plans that name them.
        runs_dir: where runs are stored durably (SQLite); None keeps nothing on disk.
        sinks: receivers of every event (progress views, streams).
        **settings: `RunConfig` fields, as a shortcut: `Swarm(max_concurrency=8)` is
            `Swarm(config=RunConfig(max_concurrency=8))`; with `config` they change it.

    Raises:
        ConfigError: a setting that is not a `RunConfig` field, or a bad value.
    """

    def __init__(
        self,
        *,
        config: RunConfig | None = None,
        model: ChatModel | None = None,
        roles: Mapping[str, Worker] | None = None,
        schemas: Mapping[str, type[BaseModel]] | None = None,
        runs_dir: str | Path | None = None,
        sinks: Sequence[EventSink] = (),
        **settings: Any,
    ) -> None:
        base = config if config is not None else RunConfig()
        self.config = base.replace(**settings) if settings else base
        self.model = model
        self._executor: RayExecutor | None = None
        self.workers: dict[str, Worker] = {}
        self.role_outputs: dict[str, str] = {}
        self.schemas: dict[str, type[BaseModel]] = dict(schemas or {})
        for name, worker in (roles or {}).items():
            self.add_role(name, worker)
        self.runs_dir = Path(runs_dir) if runs_dir is not None else None
        self._store: RunStore | None = None
        self.sinks = list(sinks)
        #: Extra settings recorded with each run (the CLI records how to reach the model).
        self.settings: dict[str, Any] = {}
        #: Builds workers for roles made at run time (subtasks with a `role_spec`).
        self.role_factory: RoleFactory | None = None

    @property
    def max_subtasks(self) -> int:
        """The most subtasks a plan may have (`config.max_subtasks`)."""
        return self.config.max_subtasks

    # --- roles ------------------------------------------------------------------------

    def add_role(self, name: str, worker: Worker, *, output: type[BaseModel] | None = None) -> None:
        """Register `worker` for role `name`; `output` becomes the role's default schema."""
        if not re.fullmatch(ROLE_PATTERN, name):
            raise ConfigError(
                f"bad role name {name!r}: start with a letter; letters, digits, _ . - only"
            )
        if not callable(worker):
            raise ConfigError(f"worker for role {name!r} is not callable: {worker!r}")
        self.workers[name] = worker
        if output is not None:
            known = self.schemas.get(output.__name__)
            if known is not None and known is not output:
                raise ConfigError(
                    f"role {name!r}: another output schema is already registered as "
                    f"{output.__name__!r} ({known.__module__}.{known.__qualname__}); "
                    "give the model class a distinct name"
                )
            self.schemas[output.__name__] = output
            self.role_outputs[name] = output.__name__

    def role(
        self, name: str | None = None, *, output: type[BaseModel] | None = None
    ) -> Callable[[Worker], Worker]:
        """Decorator: register an async function as the worker of a role (default: its name)."""

        def register(fn: Worker) -> Worker:
            self.add_role(name or fn.__name__, fn, output=output)
            return fn

        return register

    # --- plans ------------------------------------------------------------------------

    def _coerce(self, plan: PlanLike) -> Plan:
        if isinstance(plan, Plan):
            return plan
        if isinstance(plan, str | Path):
            return load_plan(plan)
        return parse_plan(dict(plan))

    def _with_role_outputs(self, plan: Plan) -> Plan:
        if not self.role_outputs:
            return plan
        subtasks = [
            s.model_copy(update={"output_schema": self.role_outputs[s.role]})
            if s.output_schema is None and s.role in self.role_outputs
            else s
            for s in plan.subtasks
        ]
        return plan.model_copy(update={"subtasks": subtasks})

    def set_role_factory(self, factory: RoleFactory | None) -> None:
        """Let subtasks name roles made at run time: `factory(subtask)` builds the worker of
        a subtask whose role is not registered from its `role_spec` (None: it cannot)."""
        self.role_factory = factory

    def _role_names(self, plan: Plan) -> set[str]:
        """The registered roles, and the run-time roles the plan defines that can be built."""
        names = set(self.workers)
        if self.role_factory is not None:
            workforce = self._workforce()
            names |= {
                s.role
                for s in plan.subtasks
                if s.role not in names and workforce.worker_for(s) is not None
            }
        return names

    def check(self, plan: Plan) -> None:
        """Check a plan against this swarm's roles and schemas (raises on the first defect)."""
        check_plan(
            plan, roles=self._role_names(plan), schemas=self.schemas, max_subtasks=self.max_subtasks
        )

    def validate(self, plan: PlanLike) -> nx.DiGraph:
        """Check a plan against this swarm's roles and schemas; returns its DAG."""
        parsed = self._coerce(plan)
        return validate_plan(
            parsed,
            roles=self._role_names(parsed),
            schemas=self.schemas,
            max_subtasks=self.max_subtasks,
        )

    async def _run_workers(self) -> Mapping[str, Worker]:
        """The workers a run uses: the roles' own, or Ray proxies of them.

        The Ray hosts are started on first use and kept for later runs; they are rebuilt
        when the roles or the model changed (`close()` stops them).
        """
        if self.config.executor == "local":
            return self.workers
        ex = self._executor
        if ex is None or ex.workers != self.workers or ex.model is not self.model:
            from kimmy_swarm.swarm.executors import make_executor

            if ex is not None:
                ex.shutdown()
            ex = self._executor = make_executor(
                self.workers,
                self.model,
                address=self.config.ray_address,
                hosts=self.config.ray_hosts,
            )
        await ex.start()
        return ex.proxies()

    @property
    def executor(self) -> RayExecutor | None:
        """The Ray executor once a run has started it (None for the local executor)."""
        return self._executor

    def _scheduler(
        self,
        store: RunStore | None,
        sinks: Sequence[EventSink],
        workers: Mapping[str, Worker] | None = None,
    ) -> Scheduler:
        workforce = self._workforce(workers)
        return Scheduler(self.config, workforce, store=store, sinks=[*self.sinks, *sinks])

    def _workforce(self, workers: Mapping[str, Worker] | None = None) -> Workforce:
        return Workforce(
            workers=self.workers if workers is None else workers,
            schemas=self.schemas,
            role_outputs=self.role_outputs,
            model=self.model,
            role_factory=self.role_factory,
        )

    def _open_store(self) -> RunStore | None:
        """The swarm's store, opened on first use and kept open for its later runs.

        Opening (and, on close, checkpointing) SQLite per run would cost more than running
        a hundred sub-agents; `close()` (or `with Swarm(...) as swarm:`) releases it.
        """
        if self.runs_dir is None:
            return None
        if self._store is None:
            from kimmy_swarm.swarm.store import RunStore

            self._store = RunStore(self.runs_dir)
        return self._store

    # --- approvals (see `swarm.approvals`) ----------------------------------------------

    def _approval_store(self) -> RunStore:
        store = self._open_store()
        if store is None:
            raise ConfigError(
                "approvals are kept in the run store: give the swarm a runs directory "
                "(Swarm(runs_dir=…))"
            )
        return store

    def approvals(self, run_id: str, *, pending: bool = False) -> list[Approval]:
        """The calls of a stored run that asked a person (only those waiting: `pending`).

        Raises:
            ConfigError: the swarm has no runs directory.
            RunNotFoundError: no such run.
        """
        return self._approval_store().approvals(run_id, pending=pending)

    def approve(
        self,
        run_id: str,
        call_id: str,
        *,
        arguments: Mapping[str, Any] | None = None,
        reason: str | None = None,
        by: str = "python",
    ) -> Approval:
        """Approve a waiting call (with edited `arguments`, or as asked); its sub-agent goes
        on within `swarm.approvals.POLL_S`, in this process or the one running the run.

        Raises:
            ApprovalError: no such call waits (the message names those that do).
        """
        edited = dict(arguments) if arguments is not None else None
        return self._approval_store().decide(
            run_id, call_id, Decision("approve", edited, reason, by)
        )

    def deny(self, run_id: str, call_id: str, reason: str, *, by: str = "python") -> Approval:
        """Deny a waiting call; its sub-agent is told `reason` and goes on without it.

        Raises:
            ApprovalError: no such call waits.
        """
        return self._approval_store().decide(run_id, call_id, Decision("deny", None, reason, by))

    def close(self) -> None:
        """Close the run store and stop Ray hosts (both restart if the swarm runs again)."""
        if self._executor is not None:
            self._executor.shutdown()
            self._executor = None
        if self._store is not None:
            self._store.close()
            self._store = None

    def __enter__(self) -> Swarm:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- running ----------------------------------------------------------------------

    async def execute(
        self, plan: PlanLike, *, run_id: str | None = None, sinks: Sequence[EventSink] = ()
    ) -> RunResult:
        """Validate and run a plan to the end.

        Raises:
            PlanValidationError: the plan is not a valid DAG for this swarm.
            asyncio.CancelledError: the run was cancelled; what finished is stored.
        """
        plan = self._with_role_outputs(self._coerce(plan))
        self.check(plan)
        run_id = run_id or new_run_id()
        settings = {**self.config.to_settings(), **self.settings}
        workers = await self._run_workers()
        store = self._open_store()
        if store is not None:
            store.create_run(run_id, plan, settings)
            store.begin_session(run_id)
        return await self._scheduler(store, sinks, workers).run(
            plan, run_id=run_id, settings=settings
        )

    async def resume(self, run_id: str, *, sinks: Sequence[EventSink] = ()) -> RunResult:
        """Continue a stored run: finished (`done`) results are reused, the rest runs.

        It runs with this swarm's `config`; to continue with the settings the run was made
        with, build the swarm from them:
        `Swarm(config=RunConfig.from_settings(store.load_run(id).settings), …)` (`kimmy
        resume` does). The `run_started` event records the config that runs.

        Raises:
            ConfigError: this swarm has no `runs_dir`.
            RunNotFoundError: no such run.
            UnknownRoleError: the run needs roles this swarm does not have.
        """
        store = self._open_store()
        if store is None:
            raise ConfigError("resume needs a runs directory: Swarm(runs_dir=...)")
        stored = store.load_run(run_id)
        missing = sorted({s.role for s in stored.plan.subtasks} - self._role_names(stored.plan))
        if missing:
            raise UnknownRoleError(
                f"run {stored.run_id!r} needs roles {missing} that this swarm does not "
                f"have; known roles: {', '.join(sorted(self.workers)) or '(none)'}",
                ids=[s.id for s in stored.plan.subtasks if s.role in missing],
            )
        workers = await self._run_workers()
        store.begin_session(stored.run_id)
        return await self._scheduler(store, sinks, workers).run(
            stored.plan,
            run_id=stored.run_id,
            done=stored.results,
            resumed=True,
            seq_start=stored.next_seq,
            settings={**stored.settings, **self.settings},  # the config's own win there
            history=stored.turns,
        )

    def run_sync(self, plan: PlanLike, **kwargs: Any) -> RunResult:
        """`execute` for synchronous callers (starts and closes an event loop)."""
        box: list[RunResult] = []

        async def main() -> None:
            # Not returned from the main task: Python 3.11's asyncio.run formats the main
            # task (result included) when it restores the SIGINT handler, and formatting a
            # 10,000-subtask result takes longer than running it.
            box.append(await self.execute(plan, **kwargs))

        asyncio.run(main())
        return box[0]

    def resume_sync(self, run_id: str, **kwargs: Any) -> RunResult:
        """`resume` for synchronous callers (starts and closes an event loop)."""
        box: list[RunResult] = []

        async def main() -> None:
            # Not returned from the main task: see `run_sync`.
            box.append(await self.resume(run_id, **kwargs))

        asyncio.run(main())
        return box[0]

    async def stream(self, plan: PlanLike, *, run_id: str | None = None) -> AsyncIterator[Event]:
        """Run a plan and yield its events as they happen (the last is `run_finished`).

        Errors of the run (a bad plan, a store failure) are raised from the iteration.
        Leaving the loop early cancels the run.
        """
        from kimmy_swarm.swarm.progress import EventStream

        events = EventStream()
        task = asyncio.create_task(self.execute(plan, run_id=run_id, sinks=[events]))
        # A run that raised never emits run_finished: end the iteration so the error shows.
        task.add_done_callback(
            lambda t: events.close() if t.cancelled() or t.exception() is not None else None
        )
        try:
            async for event in events:
                yield event
            await task
        finally:
            if not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)


__all__ = ["PlanLike", "Swarm", "new_run_id"]
