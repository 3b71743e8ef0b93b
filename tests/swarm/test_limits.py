"""Run limits as plain computation: AIMD admission, backoff delays, rate-limit parsing."""

from __future__ import annotations

import math
import random

import pytest

from kimmy_swarm.swarm.errors import ConfigError
from kimmy_swarm.swarm.limits import AdaptiveLimit, Backoff, Budget, RateLimit


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


# --- adaptive admission ----------------------------------------------------------------


def _burst(lim: AdaptiveLimit, n: int = 4) -> list[int | None]:
    """`n` overload answers in a row (a burst of simultaneous 429s)."""
    return [lim.on_overload() for _ in range(n)]


def test_isolated_overloads_do_not_move_the_limit() -> None:
    """4% of calls answered 429 at random is a quota blip, not overload: each such call
    waits out its Retry-After, the swarm keeps its pace. (Before, every 429 halved the
    limit, and it hovered near 4 of 64.)"""
    clock, rng = Clock(), random.Random(3)
    lim = AdaptiveLimit(64, clock=clock)
    changes = []
    for _ in range(5000):
        clock.now += 0.002
        changed = lim.on_overload() if rng.random() < 0.04 else lim.on_success(0.1)
        changes += [changed] if changed is not None else []
    assert lim.limit == 64 and changes == []


def test_sustained_overload_cuts_once_per_cooldown() -> None:
    clock = Clock()
    lim = AdaptiveLimit(16, clock=clock)
    assert _burst(lim) == [None, None, None, 8]  # the 4th in a row is sustained: halved
    assert lim.reason == "model server overloaded (429/503 on 100% of the last 4 calls)"
    # More of the same burst: the window restarted, and the cooldown holds
    assert _burst(lim, 10) == [None] * 10
    assert lim.limit == 8
    clock.now += 0.051  # past the 50 ms floor of the cooldown
    assert lim.on_overload() == 4  # the window is full of overloads again


def test_the_cut_is_in_proportion_to_the_share_refused() -> None:
    lim = AdaptiveLimit(64, clock=Clock())
    cuts = [
        (i, changed)
        for i in range(16)
        if (changed := lim.on_overload() if i % 4 == 3 else lim.on_success(0.01)) is not None
    ]
    assert cuts == [(15, 48)]  # 4 of 16 refused (25%): 64 x 0.75, not halved


def test_cooldown_follows_the_round_trip_time() -> None:
    clock = Clock()
    lim = AdaptiveLimit(64, clock=clock)
    for _ in range(30):
        lim.on_success(0.5)
    # the 6th refusal makes 6 of 36 calls (17%): sustained; cut by that share, 64 → 53
    assert [c for c in _burst(lim, 20) if c is not None] == [53]
    clock.now += 0.3
    assert _burst(lim) == [None] * 4  # within one round trip (~0.5 s)
    clock.now += 0.3
    assert lim.on_overload() == 26  # all refused since the last cut: halved (the deepest cut)


def test_limit_never_goes_below_min() -> None:
    clock = Clock()
    lim = AdaptiveLimit(4, min_limit=2, clock=clock)
    for _ in range(5):
        _burst(lim)
        clock.now += 1
    assert lim.limit == 2
    assert _burst(lim) == [None] * 4


def test_additive_recovery_one_step_per_limit_successes() -> None:
    clock = Clock()
    lim = AdaptiveLimit(8, clock=clock)
    _burst(lim)
    clock.now += 1
    _burst(lim)
    assert lim.limit == 2
    steps = []
    for _ in range(2 + 3 + 4 + 5 + 6 + 7 + 10):
        if (new := lim.on_success(0.01)) is not None:
            steps.append(new)
    assert steps == [3, 4, 5, 6, 7, 8]  # after 2, 3, 4, 5, 6 and 7 successes
    assert lim.limit == lim.max_limit == 8  # and never above the maximum
    assert lim.reason == "model server healthy: recovering"


def test_latency_climb_cuts_the_limit_and_recovery_follows() -> None:
    clock = Clock()
    lim = AdaptiveLimit(32, min_samples=20, clock=clock)
    for _ in range(20):
        assert lim.on_success(1.0, completion_tokens=100) is None  # 10 ms per token
    assert not lim.congested
    cut = None
    for _ in range(5):  # 50 ms per token: 5x the baseline
        cut = cut or lim.on_success(5.0, completion_tokens=100)
    assert cut == 16 and lim.congested
    clock.now += 10
    for _ in range(20):
        lim.on_success(1.0, completion_tokens=100)
    assert not lim.congested
    before = lim.limit
    for _ in range(before * 2):
        lim.on_success(1.0, completion_tokens=100)
    assert lim.limit > before


def test_latency_is_judged_per_token() -> None:
    # Long answers take longer; that alone is not congestion.
    lim = AdaptiveLimit(32, min_samples=5, clock=Clock())
    for tokens in [10, 10, 10, 10, 10, 100, 1000, 1000, 1000]:
        assert lim.on_success(0.01 * tokens, completion_tokens=tokens) is None
    assert not lim.congested


def test_sub_millisecond_timing_noise_is_not_congestion() -> None:
    # An in-process or cached model answers in microseconds; the event loop's own jitter
    # (a GC pause, a busy loop) multiplies such latencies many times over. Before, that read
    # as a server slowing down: the limit was cut every cooldown down to 1, and a 1,000-agent
    # run behind it took 100 s instead of 1 s.
    clock = Clock()
    lim = AdaptiveLimit(200, min_samples=20, clock=clock)
    rng = random.Random(3)
    for i in range(2_000):
        clock.now += 0.001
        latency = rng.uniform(5e-6, 3e-5) if i < 100 else rng.uniform(5e-6, 4e-3)
        assert lim.on_success(latency, completion_tokens=rng.choice([0, 1, 7])) is None
    assert lim.limit == 200 and not lim.congested


def test_no_latency_verdict_before_min_samples() -> None:
    lim = AdaptiveLimit(8, min_samples=20, clock=Clock())
    lim.on_success(0.01)
    for _ in range(10):
        assert lim.on_success(10.0) is None
    assert not lim.congested


@pytest.mark.parametrize("kw", [{"max_limit": 0}, {"max_limit": 4, "decrease_factor": 1.0},
                                {"max_limit": 4, "decrease_factor": 0.0},
                                {"max_limit": 4, "overload_rate": 0.0},
                                {"max_limit": 4, "overload_rate": 1.5},
                                {"max_limit": 4, "min_overloads": 0},
                                {"max_limit": 4, "window": 0}])  # fmt: skip
def test_adaptive_limit_rejects_bad_settings(kw: dict[str, float]) -> None:
    with pytest.raises(ConfigError):
        AdaptiveLimit(**kw)  # type: ignore[arg-type]


# --- backoff ---------------------------------------------------------------------------


def test_backoff_grows_exponentially_within_the_cap() -> None:
    b = Backoff(base_s=0.5, cap_s=4.0)
    rng = random.Random(1)
    for attempt, ceiling in [(1, 0.5), (2, 1.0), (3, 2.0), (4, 4.0), (5, 4.0), (60, 4.0)]:
        delays = [b.delay(attempt, rng) for _ in range(300)]
        assert all(0.0 <= d <= ceiling for d in delays), attempt
        assert max(delays) > 0.8 * ceiling  # full jitter uses the whole range
        assert min(delays) < 0.2 * ceiling


def test_backoff_is_reproducible_with_a_seed() -> None:
    b = Backoff()
    first = [b.delay(i, random.Random(7)) for i in range(1, 5)]
    assert first == [b.delay(i, random.Random(7)) for i in range(1, 5)]


def test_retry_after_is_a_floor_with_a_little_jitter() -> None:
    b = Backoff(base_s=0.5, cap_s=30.0)
    rng = random.Random(3)
    delays = [b.delay(1, rng, retry_after=2.0) for _ in range(300)]
    assert all(2.0 <= d <= 2.0 * 1.1 + 0.05 for d in delays)
    assert max(delays) - min(delays) > 0.1  # spread, so retries do not return together
    capped = [b.delay(1, rng, retry_after=600.0) for _ in range(50)]
    assert all(30.0 <= d <= 30.0 * 1.1 + 0.05 for d in capped)
    assert all(0 <= b.delay(1, rng, retry_after=0.0) <= 0.5 for _ in range(50))


@pytest.mark.parametrize("kw", [{"base_s": 0}, {"cap_s": -1}, {"base_s": math.nan}])
def test_backoff_rejects_bad_settings(kw: dict[str, float]) -> None:
    with pytest.raises(ConfigError):
        Backoff(**kw)


# --- rate limit and budgets ------------------------------------------------------------


@pytest.mark.parametrize(
    "text, calls, period",
    [("600/m", 600, 60.0), ("10/s", 10, 1.0), ("20/2.5", 20, 2.5), ("5/0.2", 5, 0.2),
     ("3/h", 3, 3600.0), ("7/min", 7, 60.0), ("9/sec", 9, 1.0), ("4", 4, 1.0)],
)  # fmt: skip
def test_rate_limit_parse_accepts(text: str, calls: int, period: float) -> None:
    assert RateLimit.parse(text) == RateLimit(calls, period)


@pytest.mark.parametrize(
    "text", ["", "x", "0/s", "-1/s", "1.5/s", "5/0", "5/-1", "5/d", "5/nan", "5/inf", "/s"]
)
def test_rate_limit_parse_rejects(text: str) -> None:
    with pytest.raises(ConfigError, match="bad rate limit") as info:
        RateLimit.parse(text)
    assert repr(text) in str(info.value)


def test_budget_validation() -> None:
    assert Budget() == Budget(None, None, None)
    for kw in ({"max_subagents": 0}, {"max_total_tokens": -5}, {"deadline_s": 0.0},
               {"deadline_s": math.nan}, {"deadline_s": math.inf}):  # fmt: skip
        with pytest.raises(ConfigError, match=next(iter(kw))):
            Budget(**kw)  # type: ignore[arg-type]


def test_ordinary_latency_variance_is_not_congestion() -> None:
    # LLM calls vary a lot (here 5x between fastest and slowest); that alone must not
    # shrink the limit, or a healthy server would be starved.
    import random

    rng = random.Random(7)
    lim = AdaptiveLimit(32, clock=Clock())
    for _ in range(2000):
        tokens = rng.randint(5, 400)
        lim.on_success(rng.uniform(0.2, 1.0) * tokens / 100, completion_tokens=tokens)
    assert lim.limit == 32 and not lim.congested
