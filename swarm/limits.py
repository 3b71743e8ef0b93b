"""Run limits: budgets, the retry backoff, and adaptive admission (AIMD).

Everything here is plain computation with an injectable clock and RNG, so the scheduler's
behaviour under overload can be tested deterministically.
"""

from __future__ import annotations

import math
import random
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from kimmy_swarm.swarm.errors import ConfigError


def _positive(name: str, value: float | None, *, allow_none: bool = True) -> None:
    if value is None and allow_none:
        return
    # `not 0 < v < inf` also refuses NaN, which every plain comparison lets through.
    if value is None or not 0 < value < math.inf:
        raise ConfigError(f"{name} must be a positive finite number, got {value!r}")


@dataclass(frozen=True, slots=True)
class Budget:
    """What one run may spend. None means unlimited.

    `max_subagents` caps the sub-agents started (planned and spawned; retries are not new
    sub-agents), `max_total_tokens` the model tokens, `deadline_s` the wall time.
    """

    max_subagents: int | None = None
    max_total_tokens: int | None = None
    deadline_s: float | None = None

    def __post_init__(self) -> None:
        _positive("max_subagents", self.max_subagents)
        _positive("max_total_tokens", self.max_total_tokens)
        _positive("deadline_s", self.deadline_s)


@dataclass(frozen=True, slots=True)
class RateLimit:
    """At most `calls` model calls per `period_s` seconds, across the whole swarm."""

    calls: int
    period_s: float = 1.0

    def __post_init__(self) -> None:
        _positive("rate limit calls", self.calls, allow_none=False)
        _positive("rate limit period", self.period_s, allow_none=False)

    @classmethod
    def parse(cls, text: str) -> RateLimit:
        """Read `N/s`, `N/m`, `N/h` or `N/SECONDS` (e.g. `600/m`, `20/2.5`)."""
        units = {"s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}
        calls, _, per = text.partition("/")
        try:
            n = int(calls)
            period = units[per] if per in units else float(per or 1.0)
            return cls(n, period)
        except (ValueError, ConfigError):
            raise ConfigError(
                f"bad rate limit {text!r}: write CALLS/PERIOD, e.g. 600/m, 10/s or 20/2.5"
            ) from None


@dataclass(frozen=True, slots=True)
class Backoff:
    """Exponential backoff with full jitter: delay ∈ [0, min(cap, base·2^(attempt-1))]."""

    base_s: float = 0.5
    cap_s: float = 30.0

    def __post_init__(self) -> None:
        _positive("backoff base", self.base_s, allow_none=False)
        _positive("backoff cap", self.cap_s, allow_none=False)

    def delay(
        self, attempt: int, rng: random.Random, retry_after: float | None = None
    ) -> float:
        """Seconds to wait before retry number `attempt` (1 = first retry).

        A server's `Retry-After` is honoured as a floor, plus up to 10% of it and up to 10%
        of the backoff ceiling as jitter, so a thousand sub-agents told "retry in 2 s" do not
        all return in the same millisecond.
        """
        ceiling = min(self.cap_s, self.base_s * 2 ** max(0, attempt - 1))
        jittered = rng.uniform(0.0, ceiling)
        if retry_after is not None and retry_after > 0:
            return min(self.cap_s, retry_after) * (1.0 + 0.1 * rng.random()) + jittered * 0.1
        return jittered


class AdaptiveLimit:
    """Additive-increase / multiplicative-decrease limit on in-flight sub-agents, moved by
    *sustained* overload only.

    Overload is judged over a window of the last calls' outcomes (`window`, default
    `max(32, 2 × max_limit)`): the limit is cut when 429/503 answers make at least
    `overload_rate` (15%) of them (counted over no fewer than `min_window` calls) and number at
    least `min_overloads`. An isolated 429 — a quota blip of a shared server — only delays
    its own call (its retry waits for `Retry-After`, see `Backoff`); the swarm keeps its
    pace. (Halving the limit on every 429 would hold it near 4 of 64 when 4% of calls are
    answered 429.) The cut is in proportion to the share refused — a server that refuses a share r
    of L calls takes about L·(1 − r) — but never deeper than `decrease_factor` at once; it
    happens at most once per cooldown (one observed round trip), and the window restarts
    after it (what it held was measured at the old limit).

    Model latency per completion token climbing past `latency_factor` × its baseline is
    overload too (a server that queues instead of refusing), and cuts by `decrease_factor`.
    Latency is judged per completion token (long answers are not congestion), and a call
    faster than `latency_floor_s` counts as taking that long: an in-process or cached model
    answers in microseconds, and the event loop's own jitter multiplies such latencies many
    times over without any server slowing down. The baseline
    is the mean of the first `min_samples` calls, then a slow average (α = 0.01) of the
    calls within `latency_factor` of it, updated only while not congested; recent latency
    is a faster average (α = 0.1). Means, not the minimum, because LLM latencies vary a lot
    from call to call: a minimum-based baseline reads ordinary variance as congestion.

    Healthy calls add 1 to the limit per `limit` successes (one step per round trip), up to
    `max_limit`. `reason` says why the limit last moved.
    """

    def __init__(
        self,
        max_limit: int,
        *,
        min_limit: int = 1,
        decrease_factor: float = 0.5,
        latency_factor: float = 2.5,
        latency_floor_s: float = 0.01,
        min_samples: int = 20,
        overload_rate: float = 0.15,
        min_overloads: int = 4,
        window: int | None = None,
        min_window: int = 24,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_limit < 1:
            raise ConfigError(f"max_concurrency must be at least 1, got {max_limit}")
        if not 0 < decrease_factor < 1:
            raise ConfigError(f"decrease_factor must be in (0, 1), got {decrease_factor}")
        if not latency_floor_s >= 0:
            raise ConfigError(f"latency_floor_s must be >= 0, got {latency_floor_s}")
        if not 0 < overload_rate <= 1:
            raise ConfigError(f"overload_rate must be in (0, 1], got {overload_rate}")
        if min_overloads < 1 or min_window < 1 or (window is not None and window < 1):
            raise ConfigError(
                "min_overloads, min_window and window must be at least 1, got "
                f"{min_overloads}, {min_window}, {window}"
            )
        self.max_limit = max_limit
        self.min_limit = max(1, min(min_limit, max_limit))
        self.limit = max_limit
        self.decrease_factor = decrease_factor
        self.latency_factor = latency_factor
        self.latency_floor_s = latency_floor_s
        self.min_samples = min_samples
        self.overload_rate = overload_rate
        self.min_overloads = min_overloads
        self.min_window = min_window
        self.window = window or max(32, 2 * max_limit)
        #: Why the limit last moved (for the `ConcurrencyChanged` event).
        self.reason = ""
        self._clock = clock
        self._credit = 0.0
        self._samples = 0
        self._ewma: float | None = None
        self._baseline: float | None = None
        self._warmup_sum = 0.0
        self._rtt = 0.0
        self._last_decrease = float("-inf")
        self._outcomes: deque[bool] = deque()  # the window: True for a 429/503
        self._overloads = 0  # True values in `_outcomes`

    @property
    def congested(self) -> bool:
        """Whether recent latency is past `latency_factor` × the baseline."""
        if self._samples < self.min_samples or self._ewma is None or self._baseline is None:
            return False
        return self._ewma > self.latency_factor * self._baseline

    @property
    def overload_share(self) -> float:
        """The share of 429/503 answers among the calls in the window (0 when empty)."""
        return self._overloads / len(self._outcomes) if self._outcomes else 0.0

    def _record(self, overloaded: bool) -> None:
        outcomes = self._outcomes
        if len(outcomes) >= self.window:
            self._overloads -= outcomes.popleft()
        outcomes.append(overloaded)
        self._overloads += overloaded

    def on_success(self, latency_s: float, completion_tokens: int = 0) -> int | None:
        """Record a healthy call; returns the new limit if it changed."""
        self._record(False)
        self._rtt = latency_s if self._rtt == 0 else 0.8 * self._rtt + 0.2 * latency_s
        timed = max(latency_s, self.latency_floor_s)  # below it: timing noise, not load
        cost = timed / completion_tokens if completion_tokens > 0 else timed
        self._samples += 1
        self._ewma = cost if self._ewma is None else 0.9 * self._ewma + 0.1 * cost
        if self._samples <= self.min_samples:
            self._warmup_sum += cost
            if self._samples == self.min_samples:
                self._baseline = self._warmup_sum / self.min_samples
                self._ewma = self._baseline
        elif self.congested:
            return self._decrease(self.decrease_factor, "model latency climbing")
        elif cost < self.latency_factor * self._baseline:  # type: ignore[operator]
            # a lasting change of workload slowly becomes the new normal; outliers do not
            self._baseline += (cost - self._baseline) * 0.01  # type: ignore[operator]
        if self.limit >= self.max_limit:
            return None
        self._credit += 1.0 / self.limit
        if self._credit >= 1.0:
            self._credit = 0.0
            self.limit += 1
            self.reason = "model server healthy: recovering"
            return self.limit
        return None

    def on_overload(self) -> int | None:
        """Record a 429/503 answer; returns the new limit if it changed (only when such
        answers are sustained: see the class)."""
        self._record(True)
        n, share = len(self._outcomes), self.overload_share
        if self._overloads < self.min_overloads:
            return None
        if self._overloads / max(n, self.min_window) < self.overload_rate:
            return None
        return self._decrease(
            max(self.decrease_factor, 1.0 - share),
            f"model server overloaded (429/503 on {share:.0%} of the last {n} calls)",
        )

    def _decrease(self, factor: float, reason: str) -> int | None:
        now = self._clock()
        if now - self._last_decrease < max(self._rtt, 0.05):
            return None
        self._last_decrease = now
        self._credit = 0.0
        self._outcomes.clear()  # measured at the old limit
        self._overloads = 0
        new = max(self.min_limit, min(self.limit - 1, int(self.limit * factor)))
        if new >= self.limit:
            return None
        self.limit = new
        self.reason = reason
        return new


__all__ = ["AdaptiveLimit", "Backoff", "Budget", "RateLimit"]
