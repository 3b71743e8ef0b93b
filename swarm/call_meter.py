"""The run's side of every model call: admission, rate limit, accounting, adaptive limit.

A worker's model is the swarm's `ChatModel` seen through `MeteredModel`: every call passes
the run's rate limit, is timed for adaptive admission, and is counted (usage, token budget,
a `ModelCalled` event), so workers cannot bypass the run's limits by accident.
`MeteredModel` reports each call to a `CallObserver`; `CallMeter` is the one the run loop
owns, one per run, handed what it needs: the config, the journal, and two callbacks — one
when the concurrency limit moved (dispatch more, or fewer), one when the token budget is
spent.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from asyncio_throttle import Throttler

from kimmy_swarm.swarm import events as ev
from kimmy_swarm.swarm.call_gate import CallGate
from kimmy_swarm.swarm.delta_batcher import DeltaBatcher
from kimmy_swarm.swarm.errors import ModelError, ModelRateLimitedError
from kimmy_swarm.swarm.limits import AdaptiveLimit
from kimmy_swarm.swarm.schema import NO_USAGE, ErrorInfo
from kimmy_swarm.swarm.transcript_capture import new_messages

if TYPE_CHECKING:
    from kimmy_swarm.swarm.config import RunConfig
    from kimmy_swarm.swarm.journal import Journal
    from kimmy_swarm.swarm.llm.capabilities import Capabilities
    from kimmy_swarm.swarm.llm.protocol import ChatModel
    from kimmy_swarm.swarm.llm.server_profile import ServerProfile
    from kimmy_swarm.swarm.llm.stream_chunks import DeltaFn
    from kimmy_swarm.swarm.llm.types import ChatResponse, MessageLike
    from kimmy_swarm.swarm.schema import Subtask
    from kimmy_swarm.swarm.transcript_capture import TranscriptCapture


class CallObserver(Protocol):
    """The scheduler side of a model call (rate limit, admission, accounting).

    Every `before_call` that returns is matched by exactly one `after_call` (the call
    answered or raised a `ModelError`) or `call_aborted` (anything else, cancellation
    included), so admission slots taken in `before_call` are always given back.
    """

    #: What to record of each call's conversation (None: nothing, nobody listens).
    capture: TranscriptCapture | None
    #: Whether calls stream their answers to `delta` (`RunConfig.stream`, and a sink listens).
    streaming: bool

    def stream(self, subtask: Subtask, call: int) -> DeltaFn:
        """`subtask`'s call number `call` (of this attempt) streams: where its pieces go."""
        ...

    def stream_ended(self, subtask: Subtask, call: int) -> None:
        """That streamed call ended (answered or not): its pieces are all delivered."""
        ...

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

    __slots__ = (
        "_calls",
        "_inner",
        "_observer",
        "_sent",
        "_subtask",
        "_temperature",
        "name",
        "usage",
    )

    def __init__(
        self,
        inner: ChatModel,
        observer: CallObserver,
        subtask: Subtask,
        *,
        temperature: float | None = None,
    ) -> None:
        self._inner = inner
        #: The temperature of a call that sets none (None: the server's default).
        self._temperature = temperature
        self._observer = observer
        self._subtask = subtask
        self.name = inner.name
        #: Usage of this subtask's calls so far (this attempt).
        self.usage = NO_USAGE
        #: The messages of the previous call (the transcript records only what follows).
        self._sent: list[Any] | None = None
        #: Streamed calls made so far (this attempt): numbers their pieces.
        self._calls = 0

    async def chat(self, messages: Sequence[MessageLike], **options: Any) -> ChatResponse:
        if self._temperature is not None and options.get("temperature") is None:
            options["temperature"] = self._temperature
        observer = self._observer
        if not observer.admit_now():
            await observer.before_call()
        t0 = time.perf_counter()
        try:
            if observer.streaming and getattr(self._inner, "streams", False):
                self._calls += 1
                call = self._calls
                on_delta = observer.stream(self._subtask, call)
                try:
                    response = await self._inner.chat(messages, **options, on_delta=on_delta)
                finally:
                    observer.stream_ended(self._subtask, call)
            else:
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


def overload_status(error: ModelError) -> bool:
    """Whether a model error is the server saying it is overloaded (429 / 503)."""
    return isinstance(error, ModelRateLimitedError) or error.status in (429, 503)


class CallMeter:
    """Admission, rate limiting and accounting of one run's model calls (a `CallObserver`).

    Args:
        config: the run's settings (concurrency, adaptive, rate limit, token budget).
        journal: where `ModelCalled` / `ConcurrencyChanged` events go.
        on_limit_changed: called after the concurrency limit moved.
        on_tokens_spent: called with the reason once the token budget is spent.
    """

    def __init__(
        self,
        config: RunConfig,
        journal: Journal,
        *,
        on_limit_changed: Callable[[], None],
        on_tokens_spent: Callable[[str], object],
    ) -> None:
        self.config = config
        self.journal = journal
        self.on_limit_changed = on_limit_changed
        self.on_tokens_spent = on_tokens_spent
        #: Tokens used by the run's calls so far (this session).
        self.tokens = 0
        self.limiter = AdaptiveLimit(config.max_concurrency) if config.adaptive else None
        self.gate: CallGate | None = CallGate(self.call_limit) if self.limiter is not None else None
        rl = config.rate_limit
        self.throttler = Throttler(rl.calls, rl.period_s) if rl is not None else None
        #: What each call records of its conversation (nothing when nobody listens).
        self.capture = config.transcripts if journal.listened else None
        #: Calls stream their answers (`RunConfig.stream`) where somebody may watch: a sink
        #: that handles `TokenDelta` events, or a viewer of the store's live file
        #: (`swarm.delta_batcher`).
        self.streaming = config.stream and (
            journal.store is not None or journal.wants(ev.TokenDelta)
        )
        self.deltas = DeltaBatcher(journal) if self.streaming else None

    def stream(self, subtask: Subtask, call: int) -> DeltaFn:
        assert self.deltas is not None
        return self.deltas.open(subtask.id, call)

    def stream_ended(self, subtask: Subtask, call: int) -> None:
        if self.deltas is not None:
            self.deltas.end(subtask.id, call)

    def close(self) -> None:
        """Break the reference cycles (the gate and the callbacks point back here)."""
        if self.deltas is not None:
            self.deltas.close()
        self.gate = None
        self.on_limit_changed = _nothing
        self.on_tokens_spent = _nothing

    def limit(self) -> int:
        """Sub-agents allowed in flight now."""
        if self.limiter is None:
            return self.config.max_concurrency
        return min(self.config.max_concurrency, self.limiter.limit)

    def call_limit(self) -> float:
        """Model calls allowed in flight: unlimited while healthy, the limit once backed off.

        (A sub-agent may make several calls at once; only a back-off should hold them.)
        """
        limiter = self.limiter
        if limiter is None or limiter.limit >= limiter.max_limit:
            return math.inf
        return limiter.limit

    def admit_now(self) -> bool:
        if self.throttler is not None:
            return False
        gate = self.gate
        if gate is None:
            return True
        return gate.try_acquire()

    async def before_call(self) -> None:
        # Admission first, then the rate limit: a call is made right after it is counted.
        if self.gate is not None:
            await self.gate.acquire()
        if self.throttler is not None:
            try:
                await self.throttler.acquire()
            except BaseException:
                self.call_aborted()
                raise

    def call_aborted(self) -> None:
        if self.gate is not None:
            self.gate.release()

    def after_call(
        self,
        st: Subtask,
        latency_s: float,
        response: ChatResponse | None,
        error: ModelError | None,
        transcript: dict[str, Any] | None = None,
    ) -> None:
        previous = self.limit()
        changed: int | None = None
        usage = response.usage if response is not None else NO_USAGE
        if response is not None:
            self.tokens += usage.total_tokens
            if self.limiter is not None:
                changed = self.limiter.on_success(latency_s, usage.completion_tokens)
        elif error is not None and self.limiter is not None and overload_status(error):
            changed = self.limiter.on_overload()
        if self.journal.listened:
            logprobs = None
            if response is not None and response.logprobs:
                logprobs = [lp.model_dump() for lp in response.logprobs]
            self.journal.emit(
                ev.ModelCalled,
                subtask_id=st.id,
                latency_s=latency_s,
                usage=usage,
                error=ErrorInfo.from_exception(error) if error is not None else None,
                logprobs=logprobs,
                **(transcript or {}),
            )
        if changed is not None and self.limit() != previous:
            self._limit_changed(previous)
        cap = self.config.max_total_tokens
        if cap is not None and self.tokens >= cap:
            self.on_tokens_spent(f"token budget of {cap} spent ({self.tokens} tokens used)")
        if self.gate is not None:  # after the limit moved: wake as many as it now allows
            self.gate.release()

    def _limit_changed(self, previous: int) -> None:
        assert self.limiter is not None  # only an adaptive limit moves
        self.journal.emit(
            ev.ConcurrencyChanged, limit=self.limit(), previous=previous, reason=self.limiter.reason
        )
        self.on_limit_changed()


def _nothing(*_: object) -> None:
    """A callback arriving after its run ended has nothing left to do."""


__all__ = ["CallMeter", "CallObserver", "MeteredModel", "overload_status"]
