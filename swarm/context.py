"""What a worker sees while it runs one subtask: its inputs, upstream outputs, a model, spawn.

The model is the swarm's `ChatModel` seen through `swarm.call_meter.MeteredModel`, so every
call a worker makes passes the run's limits and is counted. What the context records (steps,
tool calls, turns) goes to callables and a `TurnRecorder` the run loop hands it: the context
knows their shape, not the journal or the store behind them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import ValidationError

from kimmy_swarm.swarm.approval_policy import ApprovalPolicy
from kimmy_swarm.swarm.errors import ConfigError, SpawnError, validation_problems
from kimmy_swarm.swarm.events import AgentStep, ToolCalled
from kimmy_swarm.swarm.schema import NO_USAGE, Subtask, SubtaskResult, Usage

if TYPE_CHECKING:
    from kimmy_swarm.swarm.approval_records import Decision
    from kimmy_swarm.swarm.call_meter import MeteredModel
    from kimmy_swarm.swarm.events import AgentTurn
    from kimmy_swarm.swarm.transcript_capture import TranscriptCapture


class TurnRecorder(Protocol):
    """Where a subtask's turns (`AgentTurn` events) are recorded and read back from
    (`swarm.agent_turns.TurnLog` in a run)."""

    def of(self, subtask_id: str) -> tuple[AgentTurn, ...]:
        """The turns `subtask_id` recorded so far, oldest first."""
        ...

    def record(
        self,
        subtask_id: str,
        attempt: int,
        *,
        messages: Sequence[Any],
        spawned: Sequence[str] = (),
        state: Any = None,
        logprobs: Sequence[Any] | None = None,
    ) -> AgentTurn:
        """Record one turn of `subtask_id`'s attempt `attempt`; returns the event."""
        ...


SpawnFn = Callable[[Subtask, Sequence[Subtask], Sequence[str]], list[Subtask]]
#: Waits for subtasks a subtask spawned: `(waiter, ids, mode, timeout_s) -> results`.
WaitFn = Callable[
    [Subtask, Sequence[str], Literal["all", "any"], float | None],
    Awaitable[dict[str, SubtaskResult]],
]
#: Asks a person about one call of the subtask and waits: `(tool, arguments) -> Decision`.
ApproveFn = Callable[[str, Mapping[str, Any]], Awaitable["Decision"]]
#: Records one event of the run: `emit(EventClass, **fields)` (seq, run id, time added).
EmitFn = Callable[..., None]


_NO_APPROVALS = ApprovalPolicy()


class SubtaskContext:
    """Everything a worker gets for one attempt of one subtask.

    Attributes:
        subtask: the subtask to run.
        run_id: the run it belongs to.
        attempt: 1 for the first try, 2 for the first retry, …
        retries_left: retries of a retryable error that remain after this attempt (0: the
            last attempt; a worker may then handle an error it would otherwise leave to a
            retry, e.g. a sub-agent falling back to its offline procedure).
        upstream: the outputs of the subtasks it depends on, by id (None for a failed
            dependency under the `continue` policy; see `upstream_results`).
        upstream_results: the full results of those dependencies.
    """

    __slots__ = (
        "_approve",
        "_capture",
        "_emit",
        "_model",
        "_spawn",
        "_turns",
        "_wait",
        "approval_policy",
        "attempt",
        "retries_left",
        "run_id",
        "subtask",
        "upstream_results",
    )

    def __init__(
        self,
        subtask: Subtask,
        *,
        run_id: str,
        attempt: int,
        upstream_results: Mapping[str, SubtaskResult],
        model: MeteredModel | None,
        spawn: SpawnFn,
        emit: EmitFn | None = None,
        wait: WaitFn | None = None,
        turns: TurnRecorder | None = None,
        capture: TranscriptCapture | None = None,
        retries_left: int = 0,
        approve: ApproveFn | None = None,
        approval_policy: ApprovalPolicy | None = None,
    ) -> None:
        self.subtask = subtask
        self.run_id = run_id
        self.attempt = attempt
        self.retries_left = retries_left
        self.upstream_results = upstream_results
        self._model = model
        self._spawn = spawn
        self._emit = emit
        self._wait = wait
        self._turns = turns
        #: What tool calls record of their arguments and results (None: nothing).
        self._capture = capture
        self._approve = approve
        #: Which calls of the run wait for a person (`needs_approval`).
        self.approval_policy = approval_policy or _NO_APPROVALS

    @property
    def id(self) -> str:
        return self.subtask.id

    @property
    def role(self) -> str:
        return self.subtask.role

    @property
    def instructions(self) -> str:
        return self.subtask.instructions

    @property
    def inputs(self) -> dict[str, Any]:
        return self.subtask.inputs

    @property
    def upstream(self) -> dict[str, Any]:
        return {k: r.output for k, r in self.upstream_results.items()}

    @property
    def has_model(self) -> bool:
        return self._model is not None

    @property
    def model(self) -> MeteredModel:
        """The run's model, metered. Raises `ConfigError` when the swarm has none."""
        if self._model is None:
            raise ConfigError(
                f"subtask {self.subtask.id!r} (role {self.subtask.role!r}) needs a model, "
                "but none is configured: pass --base-url or set KIMMY_BASE_URL "
                "(Python: Swarm(model=OpenAIChat(...)))"
            )
        return self._model

    @property
    def usage(self) -> Usage:
        return self._model.usage if self._model is not None else NO_USAGE

    def spawn(
        self, subtasks: Sequence[Subtask | Mapping[str, Any]], *, feeds: Sequence[str] = ()
    ) -> list[Subtask]:
        """Add subtasks to the live DAG; they run when their dependencies are done.

        Args:
            subtasks: new subtasks (models or dicts); their `depends_on` may name existing
                subtasks (this one included: they then wait for it to finish) or each other.
            feeds: pending subtasks that must also wait for the new ones (e.g. the writer
                that synthesizes what the new researchers find).

        Returns:
            The subtasks added (with `parent` and `depth` set); none when the very same
            spawn was made before (by an earlier attempt, or before a resume).

        Raises:
            SpawnError: the spawn would create a cycle, reuses an id, names an unknown
                dependency, or passes `max_depth` / `max_subagents`. Nothing is added then.
        """
        parsed = []
        for item in subtasks:
            if isinstance(item, Subtask):
                parsed.append(item)
                continue
            try:
                parsed.append(Subtask.model_validate(item))
            except ValidationError as exc:
                problem = validation_problems(exc, limit=1, root="(subtask)")
                raise SpawnError(f"spawn from {self.subtask.id!r}: bad subtask {problem}") from None
        return self._spawn(self.subtask, parsed, feeds)

    async def wait(
        self,
        ids: Sequence[str],
        *,
        mode: Literal["all", "any"] = "all",
        timeout_s: float | None = None,
    ) -> dict[str, SubtaskResult]:
        """Wait for subtasks this one spawned; their results by id.

        `mode="all"` returns once every one of `ids` has a result, `"any"` once at least
        one has (all that have are returned). After `timeout_s` it returns what has
        finished so far (possibly nothing). While it waits, the sub-agent does not count
        against the run's concurrency, so the subtasks it waits for can start.

        Raises:
            WaitError: an id is unknown, was not spawned by this subtask, or depends on it.
        """
        if self._wait is None:
            raise ConfigError(f"subtask {self.subtask.id!r}: this executor cannot wait")
        return await self._wait(self.subtask, list(ids), mode, timeout_s)

    def needs_approval(self, tool: str, *, asks: bool = False) -> bool:
        """Whether a call of `tool` by this sub-agent waits for a person: the tool (or the
        role) asks itself (`asks`), or the run's `ApprovalPolicy` names the tool or role."""
        return asks or self.approval_policy.covers(tool, self.subtask.role)

    async def approval(self, tool: str, arguments: Mapping[str, Any]) -> Decision:
        """Ask a person about a call of `tool` with `arguments`, and wait for the answer.

        While it waits the sub-agent does not count against the run's concurrency and its
        deadline stops (`swarm.approvals`). A call answered before (the same tool and
        arguments, in this run) gets that answer at once.

        Raises:
            ConfigError: this executor cannot ask (no run loop behind the context).
            ApprovalTimeoutError: nobody answered in the policy's time, which says `fail`.
        """
        if self._approve is None:
            raise ConfigError(
                f"subtask {self.subtask.id!r}: tool {tool!r} needs approval, but this "
                "executor cannot ask for it"
            )
        return await self._approve(tool, arguments)

    @property
    def history(self) -> tuple[AgentTurn, ...]:
        """The turns this subtask recorded before (earlier attempts and sessions)."""
        return self._turns.of(self.subtask.id) if self._turns is not None else ()

    def record_turn(
        self,
        messages: Sequence[Any],
        *,
        spawned: Sequence[str] = (),
        state: Any = None,
        logprobs: Sequence[Any] | None = None,
    ) -> AgentTurn | None:
        """Record one turn of the agent's conversation (`AgentTurn`): the messages it added,
        what it spawned, and the state to resume from (see `history`)."""
        if self._turns is None:
            return None
        return self._turns.record(
            self.subtask.id,
            self.attempt,
            messages=messages,
            spawned=spawned,
            state=state,
            logprobs=logprobs,
        )

    # --- the agent's trace (call from the event loop's thread) ---------------------------

    def record_step(
        self,
        step: int,
        *,
        policy: str,
        tools: Sequence[str] = (),
        outcome: str,
        error: str | None = None,
    ) -> None:
        """Record one step of the sub-agent (`AgentStep`): a model turn or procedure stage.

        Args:
            step: 1 for the first step of this attempt.
            policy: `model` or `offline`.
            tools: the tools called in the step.
            outcome: `tools`, `answer`, `invalid` or `fallback`.
            error: why the model failed, on a `fallback` step.
        """
        if self._emit is not None:
            self._emit(
                AgentStep,
                subtask_id=self.subtask.id,
                policy=policy,
                step=step,
                tools=list(tools),
                outcome=outcome,
                error=error,
            )

    def record_tool(
        self,
        tool: str,
        *,
        step: int,
        latency_s: float,
        error: str | None = None,
        call_id: str | None = None,
        arguments: Any = None,
        result: Any = None,
    ) -> None:
        """Record one tool call of the sub-agent (`ToolCalled`).

        `arguments` and `result` (any values; text is kept as it is) go into the transcript
        as the run's `transcripts` setting says: cut at its size, or left out.
        """
        if self._emit is None:
            return
        capture = self._capture
        self._emit(
            ToolCalled,
            subtask_id=self.subtask.id,
            tool=tool,
            step=step,
            latency_s=latency_s,
            ok=error is None,
            error=error,
            call_id=call_id,
            arguments=capture.value(arguments) if capture and arguments is not None else None,
            result=capture.value(result) if capture and result is not None else None,
        )


__all__ = ["EmitFn", "SpawnFn", "SubtaskContext", "TurnRecorder", "WaitFn"]
