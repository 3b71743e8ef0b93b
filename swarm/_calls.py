"""The run's side of every model call: admission, rate limit, accounting, adaptive limit.

`MeteredModel` (in `swarm.context`) calls these hooks around each call a sub-agent makes;
`RunLoop` mixes them in. Kept apart so the loop reads as scheduling and this as metering.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from swarm import events as ev
from swarm.context import overload_status
from swarm.schema import NO_USAGE, ErrorInfo

if TYPE_CHECKING:
    from asyncio_throttle import Throttler

    from swarm._admission import CallGate
    from swarm._journal import Journal
    from swarm.errors import ModelError
    from swarm.limits import AdaptiveLimit
    from swarm.llm.types import ChatResponse
    from swarm.scheduler import SchedulerConfig
    from swarm.schema import Subtask


class ModelCallHooks:
    """Admission, rate limiting and accounting of model calls (a mixin of `RunLoop`)."""

    cfg: SchedulerConfig
    limiter: AdaptiveLimit | None
    gate: CallGate | None
    throttler: Throttler | None
    journal: Journal
    tokens: int
    emit: Any

    def dispatch(self) -> None:  # provided by RunLoop
        raise NotImplementedError

    def exhaust(self, reason: str, *, cancels_in_flight: bool = False) -> bool:
        raise NotImplementedError

    def limit(self) -> int:
        if self.limiter is None:
            return self.cfg.max_concurrency
        return min(self.cfg.max_concurrency, self.limiter.limit)

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
            self.emit(
                ev.ModelCalled,
                subtask_id=st.id,
                latency_s=latency_s,
                usage=usage,
                error=ErrorInfo.from_exception(error) if error is not None else None,
                logprobs=logprobs,
            )
        if changed is not None and self.limit() != previous:
            self._limit_changed(previous, overloaded=response is None)
        cap = self.cfg.budget.max_total_tokens
        if cap is not None and self.tokens >= cap:
            self.exhaust(f"token budget of {cap} spent ({self.tokens} tokens used)")
        if self.gate is not None:  # after the limit moved: wake as many as it now allows
            self.gate.release()

    def _limit_changed(self, previous: int, *, overloaded: bool) -> None:
        now = self.limit()
        if overloaded:
            reason = "model server overloaded (429/503)"
        elif now < previous:
            reason = "model latency climbing"
        else:
            reason = "model server healthy: recovering"
        self.emit(ev.ConcurrencyChanged, limit=now, previous=previous, reason=reason)
        self.dispatch()


__all__ = ["ModelCallHooks"]
