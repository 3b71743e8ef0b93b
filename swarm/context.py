"""What a worker sees while it runs one subtask: its inputs, upstream outputs, a model, spawn.

The model handed to workers is the swarm's `ChatModel` seen through `MeteredModel`: every
call passes the run's rate limit, is timed for adaptive admission, and is counted (usage,
tokens budget, a `ModelCalled` event), so workers cannot bypass the run's limits by accident.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import ValidationError

from swarm.errors import (
    ConfigError,
    ModelError,
    ModelRateLimitedError,
    SpawnError,
    validation_problems,
)
from swarm.events import AgentStep, ToolCalled
from swarm.llm.types import ChatResponse, MessageLike
from swarm.schema import NO_USAGE, Subtask, SubtaskResult, Usage
from swarm.transcript_capture import new_messages

if TYPE_CHECKING:
    from swarm.agent_turns import TurnLog
    from swarm.events import AgentTurn
    from swarm.llm.capabilities import Capabilities
    from swarm.llm.protocol import ChatModel
    from swarm.llm.server_profile import ServerProfile
    from swarm.transcript_capture import TranscriptCapture


class CallObserver(Protocol):
    """The scheduler side of a model call (rate limit, admission, accounting).

    Every `before_call` that returns is matched by exactly one `after_call` (the call
    answered or raised a `ModelError`) or `call_aborted` (anything else, cancellation
    included), so admission slots taken in `before_call` are always given back.
    """

    #: What to record of each call's conversation (None: nothing, nobody listens).
    capture: TranscriptCapture | None

    async def before_call(self) -> None: ...

    def after_call(
        self,
        subtask: Subtask,
        latency_s: float,
        response: ChatResponse | None,
        error: ModelError | None,
        transcript: dict[str, Any] | None = None,
    ) -> None:
        """`transcript`: the call's `ModelCalled` transcript fields, when captured."""
        ...

    def call_aborted(self) -> None: ...

    def admit_now(self) -> bool:
        """Admit a call without waiting if nothing needs awaiting (the common case)."""
        ...


class MeteredModel:
    """A `ChatModel` that reports each call of one subtask to the scheduler."""

    __slots__ = ("_inner", "_observer", "_sent", "_subtask", "name", "usage")

    def __init__(self, inner: ChatModel, observer: CallObserver, subtask: Subtask) -> None:
        self._inner = inner
        self._observer = observer
        self._subtask = subtask
        self.name = inner.name
        #: Usage of this subtask's calls so far (this attempt).
        self.usage = NO_USAGE
        #: The messages of the previous call (the transcript records only what follows).
        self._sent: list[Any] | None = None

    async def chat(self, messages: Sequence[MessageLike], **options: Any) -> ChatResponse:
        observer = self._observer
        if not observer.admit_now():
            await observer.before_call()
        t0 = time.perf_counter()
        try:
            response = await self._inner.chat(messages, **options)
        except ModelError as exc:
            latency = time.perf_counter() - t0
            observer.after_call(
                self._subtask, latency, None, exc, self._transcript(messages, options, None)
            )
            raise
        except BaseException:  # cancelled (timeout, deadline) or a bug in the client
            observer.call_aborted()
            raise
        self.usage = self.usage + response.usage
        observer.after_call(
            self._subtask,
            time.perf_counter() - t0,
            response,
            None,
            self._transcript(messages, options, response),
        )
        return response

    def _transcript(
        self,
        messages: Sequence[MessageLike],
        options: Mapping[str, Any],
        response: ChatResponse | None,
    ) -> dict[str, Any] | None:
        """The call's transcript fields (`ModelCalled`): new messages, request, answer."""
        capture = self._observer.capture
        if capture is None:
            return None
        first, new = new_messages(self._sent, messages)
        self._sent = list(messages)
        return {
            "first_message": first,
            "messages": [capture.message(m) for m in new],
            "request": capture.request(options),
            "response": capture.response(response) if response is not None else None,
        }

    async def record_remote_call(
        self, latency_s: float, response: ChatResponse | None, error: ModelError | None
    ) -> None:
        """Account a call this subtask made elsewhere (on a Ray host) as if made here.

        Usage, the token budget, the `ModelCalled` event and the adaptive limit see it as
        a local call; it takes and gives back an admission slot, and passes the rate
        limit, so a backed-off run also slows the replay (and with it new dispatches).
        """
        if not self._observer.admit_now():
            await self._observer.before_call()
        if response is not None:
            self.usage = self.usage + response.usage
        self._observer.after_call(self._subtask, latency_s, response, error)

    async def aclose(self) -> None:  # the swarm owns the inner model's lifetime
        return None

    @property
    def context_length(self) -> int | None:
        """The inner model's context length, when it knows it."""
        return getattr(self._inner, "context_length", None)

    @property
    def capabilities(self) -> Capabilities | None:
        """What the inner model's server honours, when it says (`swarm.llm.capabilities`)."""
        return getattr(self._inner, "capabilities", None)

    @property
    def profile(self) -> ServerProfile | None:
        """The inner model's server profile, when it has one (`swarm.llm.server_profile`)."""
        return getattr(self._inner, "profile", None)


SpawnFn = Callable[[Subtask, Sequence[Subtask], Sequence[str]], list[Subtask]]
#: Waits for subtasks a subtask spawned: `(waiter, ids, mode, timeout_s) -> results`.
WaitFn = Callable[
    [Subtask, Sequence[str], Literal["all", "any"], float | None],
    Awaitable[dict[str, SubtaskResult]],
]
#: Records one event of the run: `emit(EventClass, **fields)` (seq, run id, time added).
EmitFn = Callable[..., None]


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
        "_capture",
        "_emit",
        "_model",
        "_spawn",
        "_turns",
        "_wait",
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
        turns: TurnLog | None = None,
        capture: TranscriptCapture | None = None,
        retries_left: int = 0,
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


#: A worker runs one subtask and returns its output (JSON-compatible, or a pydantic model).
Worker = Callable[[SubtaskContext], Awaitable[Any]]


def overload_status(error: ModelError) -> bool:
    """Whether a model error is the server saying it is overloaded (429 / 503)."""
    return isinstance(error, ModelRateLimitedError) or error.status in (429, 503)


__all__ = [
    "CallObserver",
    "EmitFn",
    "MeteredModel",
    "SpawnFn",
    "SubtaskContext",
    "WaitFn",
    "Worker",
    "overload_status",
]
