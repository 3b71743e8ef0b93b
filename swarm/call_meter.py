"""The run's side of every model call: admission, rate limit, accounting, adaptive limit.

`MeteredModel` (in `swarm.context`) calls a `CallMeter` around each call a sub-agent makes.
The run loop owns one per run and hands it what it needs: the config, the journal, and two
callbacks — one when the concurrency limit moved (dispatch more, or fewer), one when the
token budget is spent.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from asyncio_throttle import Throttler

from swarm import events as ev
from swarm.call_gate import CallGate
from swarm.context import overload_status
from swarm.limits import AdaptiveLimit
from swarm.schema import NO_USAGE, ErrorInfo

if TYPE_CHECKING:
    from swarm.config import RunConfig
    from swarm.errors import ModelError
    from swarm.journal import Journal
    from swarm.llm.types import ChatResponse
    from swarm.schema import Subtask


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

    def close(self) -> None:
        """Break the reference cycles (the gate and the callbacks point back here)."""
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


__all__ = ["CallMeter"]
