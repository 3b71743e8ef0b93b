"""`CallTimeouts`: read timeouts from a request's estimated prompt tokens, its `max_tokens`
and the speeds its server showed (the estimate is the client's: `test_server_profile.py`)."""

from __future__ import annotations

from typing import Any

import pytest

from kimmy_swarm.swarm.errors import ConfigError
from kimmy_swarm.swarm.llm.call_timeout import CallTimeoutPolicy, CallTimeouts, read_timeout
from kimmy_swarm.swarm.schema import Usage

#: floor 15 s, safety 2, first 120 s, ceiling 1800 s, priors 50 / 10 tokens/s.
POLICY = CallTimeoutPolicy()


def usage(prompt: int, completion: int) -> Usage:
    return Usage(prompt_tokens=prompt, completion_tokens=completion)


def taught(*calls: tuple[int, int, int, float]) -> CallTimeouts:
    """A `CallTimeouts` that saw `(estimated, prompt_tokens, completion_tokens, seconds)`
    calls."""
    timeouts = CallTimeouts(POLICY)
    for estimated, prompt, completion, seconds in calls:
        timeouts.observe(estimated, usage(prompt, completion), seconds)
    return timeouts


def test_the_limit_is_floor_plus_safety_times_the_expected_time() -> None:
    limit = read_timeout(POLICY, 2000, 200, 100.0, 10.0, observed=3)
    assert limit.expected_s == pytest.approx(2000 / 100 + 200 / 10)
    assert limit.seconds == pytest.approx(15 + 2 * 40)


def test_the_limit_grows_with_the_prompt_and_with_max_tokens() -> None:
    def seconds(prompt: int, max_tokens: int) -> float:
        return read_timeout(POLICY, prompt, max_tokens, 100.0, 10.0, observed=1).seconds

    assert seconds(1000, 100) < seconds(4000, 100) < seconds(4000, 400)
    assert seconds(4000, 400) - seconds(4000, 100) == pytest.approx(2 * 300 / 10)


def test_the_limit_is_clamped_between_floor_and_ceiling() -> None:
    assert read_timeout(POLICY, 1, 1, 1e6, 1e6, observed=1).seconds == pytest.approx(15.0)
    assert read_timeout(POLICY, 100_000, 8192, 10.0, 1.0, observed=1).seconds == 1800.0


def test_before_any_call_finished_the_limit_is_at_least_the_first_one() -> None:
    timeouts = CallTimeouts(POLICY)
    small = timeouts.limit(prompt_tokens=100, max_tokens=16)
    assert small.seconds == 120.0 and small.observed == 0
    assert (small.prefill_tps, small.decode_tps) == (50.0, 10.0)
    # a long planner prompt at the assumed speeds gets more: 15 + 2 × (1000/50 + 1024/10)
    big = timeouts.limit(prompt_tokens=1000, max_tokens=1024)
    assert big.seconds == pytest.approx(15 + 2 * (1000 / 50 + 1024 / 10))
    # no max_tokens: the policy's guess of what the call may generate
    assert timeouts.limit(prompt_tokens=100, max_tokens=None).max_tokens == 2048


def test_a_finished_call_bounds_each_speed_with_all_its_time() -> None:
    # 1,000 prompt + 100 generated tokens in 10 s: prefill >= 100/s, decode >= 10/s
    timeouts = taught((1300, 1000, 100, 10.0))  # the server's count, not the estimate
    limit = timeouts.limit(prompt_tokens=2000, max_tokens=200)
    assert (limit.prompt_tokens, limit.prefill_tps, limit.decode_tps) == (2000, 100.0, 10.0)
    assert limit.seconds == pytest.approx(15 + 2 * (2000 / 100 + 200 / 10))
    assert limit.observed == 1


def test_learned_speeds_shorten_the_limits_of_a_fast_server() -> None:
    fresh = CallTimeouts(POLICY).limit(prompt_tokens=1000, max_tokens=256)
    fast = taught((1000, 1000, 256, 2.0)).limit(prompt_tokens=1000, max_tokens=256)
    assert fast.seconds < fresh.seconds
    assert fast.seconds == pytest.approx(15 + 2 * (1000 / 500 + 256 / 128))


def test_the_median_ignores_one_cached_prompt() -> None:
    # the third call's prompt was cached by the server: 3,000 tokens "read" in 0.5 s
    timeouts = taught((1000, 1000, 100, 10.0), (1000, 1000, 100, 12.5), (3000, 3000, 5, 0.5))
    limit = timeouts.limit(prompt_tokens=3000, max_tokens=100)
    assert limit.prefill_tps == pytest.approx(100.0)  # median of 100, 80, 6000
    assert limit.decode_tps == pytest.approx(10.0)  # median of 10, 8, 10


def test_more_calls_in_flight_than_observed_slow_the_speeds_down_never_up() -> None:
    timeouts = CallTimeouts(POLICY)
    timeouts.observe(1000, usage(1000, 100), 10.0, load=2)
    alone = timeouts.limit(prompt_tokens=1000, max_tokens=100, load=1)
    assert (alone.prefill_tps, alone.decode_tps) == (100.0, 10.0)  # not faster when quieter
    busy = timeouts.limit(prompt_tokens=1000, max_tokens=100, load=8)
    assert (busy.prefill_tps, busy.decode_tps) == (25.0, 2.5)
    assert busy.seconds > alone.seconds


def test_a_timeout_forgets_the_speeds() -> None:
    timeouts = taught((1000, 1000, 100, 1.0))
    assert timeouts.limit(prompt_tokens=100, max_tokens=16).seconds < 120.0
    timeouts.timed_out()
    again = timeouts.limit(prompt_tokens=100, max_tokens=16)
    assert again.observed == 0 and again.seconds == 120.0


def test_usage_the_server_left_out_teaches_nothing_of_its_kind() -> None:
    timeouts = taught((1000, 0, 0, 2.0))
    limit = timeouts.limit(prompt_tokens=1000, max_tokens=100)
    assert limit.prefill_tps == pytest.approx(1000 / 2.0)  # the prompt as estimated
    assert limit.decode_tps == POLICY.prior_decode_tps  # no completion tokens reported


def test_the_reason_names_the_estimate() -> None:
    timeouts = taught((1000, 1000, 100, 10.0))
    limit = timeouts.limit(prompt_tokens=2900, max_tokens=512)
    assert limit.shown == f"{limit.seconds:,.0f} s"
    text = limit.reason(POLICY)
    assert text.startswith("adaptive: 15 s + 2 × 80 s expected")
    assert "~2,900 prompt tokens + 512 max tokens" in text
    assert "at 100 prompt / 10 generated tokens/s (median of 1 call observed)" in text
    first = CallTimeouts(POLICY).limit(prompt_tokens=10, max_tokens=8)
    assert "(assumed before any call finished); raised to 120 s" in first.reason(POLICY)
    huge = CallTimeouts(POLICY).limit(prompt_tokens=100_000, max_tokens=8192)
    assert huge.reason(POLICY).endswith("capped at 1,800 s")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"floor_s": 0},
        {"ceiling_s": float("inf")},
        {"safety": 0.5},
        {"prior_decode_tps": -1.0},
        {"window": 0},
        {"assumed_max_tokens": True},
        {"floor_s": 200.0},  # above first_s
        {"first_s": 2000.0},  # above ceiling_s
    ],
)
def test_bad_policies_are_config_errors(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigError) as info:
        CallTimeoutPolicy(**kwargs)
    [(name, value)] = kwargs.items()
    assert name in str(info.value) and repr(value) in str(info.value)
