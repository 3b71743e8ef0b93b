"""Per-call read timeouts that scale with the request and the server's observed speed.

One fixed limit fits no server: llama.cpp on a slow CPU needs minutes for a long planner
prompt, while a dead server should fail a short call in seconds. `CallTimeouts` gives each
call its own limit from what the client has seen of its server.

The model. A call takes about `P / prefill + C / decode` seconds: P prompt tokens read at
`prefill` tokens/s, C tokens generated at `decode` tokens/s. One latency per call cannot split
the two terms, so a finished call that took L seconds gives a *lower bound* on each speed
instead: all of its time charged to its prompt (`prefill >= P / L`) and, apart, all to its
answer (`decode >= C / L`). The speeds used are the median of those bounds over the recent
calls, which is never faster than the server under the model whatever mix of calls came
before, so the expected time is never short (at most about twice the real one for calls
like those seen). The median, not the best bound: a prompt the server had cached (prefix
caching) is read almost free, and its one call would show a prefill speed far above the real
one. A call observed with `k_i` of this client's calls in flight predicts, for a call sent with
`k > k_i` in flight, a speed `k_i / k` as high (the server's throughput shared by more
requests); never higher when the load drops.

The limit of a call of about P prompt tokens that may generate M tokens (its `max_tokens`)
is `floor + safety * (P / prefill + M / decode)`, at most `ceiling`; before any call has
finished, speeds are assumed (`prior_*_tps`) and the limit is at least `first_s`, 120 s. The
client estimates P with its server profile's learned `TokenEstimate`
(`swarm.llm.server_profile`), the one its token budget uses: a pessimistic estimate, which
here only makes a limit longer.
A call that times out makes the client forget the speeds (the server got slower than learned:
a longer queue, another load), so later calls get those untrained limits until calls finish
again.

Example:
    timeouts = CallTimeouts()
    limit = timeouts.limit(prompt_tokens=4_000, max_tokens=512)   # before learning: >= 120 s
    timeouts.observe(prompt_tokens=4_000, usage=usage, seconds=41.0)
    limit = timeouts.limit(prompt_tokens=4_000, max_tokens=512)   # from the speeds seen
"""

from __future__ import annotations

import math
import statistics
from collections import deque
from dataclasses import dataclass

from kimmy_swarm.swarm.errors import ConfigError
from kimmy_swarm.swarm.schema import Usage


@dataclass(frozen=True)
class CallTimeoutPolicy:
    """How `CallTimeouts` turns a request and the speeds seen into a read timeout.

    Attributes:
        floor_s: Added to every limit and its least value: connection set-up, queueing and
            the server's fixed cost per call. A dead server fails a short call about this fast.
        ceiling_s: The longest limit (a call that sets no `max_tokens` on a slow server).
        safety: The expected time is multiplied by this.
        first_s: The least limit while no call has finished.
        prior_prefill_tps: Prompt tokens/s assumed before any call has finished (a small
            model on a laptop CPU).
        prior_decode_tps: Generated tokens/s assumed likewise.
        assumed_max_tokens: What a call that sets no `max_tokens` is assumed to generate.
        window: How many recent calls the speeds are taken over.
    """

    floor_s: float = 15.0
    ceiling_s: float = 1800.0
    safety: float = 2.0
    first_s: float = 120.0
    prior_prefill_tps: float = 50.0
    prior_decode_tps: float = 10.0
    assumed_max_tokens: int = 2048
    window: int = 32

    def __post_init__(self) -> None:
        for name in (
            "floor_s", "ceiling_s", "safety", "first_s", "prior_prefill_tps",
            "prior_decode_tps",
        ):  # fmt: skip
            value = getattr(self, name)
            ok = isinstance(value, int | float) and not isinstance(value, bool)
            if not ok or not math.isfinite(value) or value <= 0:
                raise ConfigError(f"{name} {value!r} is not allowed; expected a number > 0")
        for name in ("assumed_max_tokens", "window"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} {value!r} is not an integer >= 1")
        if self.safety < 1:
            raise ConfigError(f"safety {self.safety!r} is not allowed; expected a number >= 1")
        if not self.floor_s <= self.first_s <= self.ceiling_s:
            raise ConfigError(
                f"floor_s {self.floor_s!r}, first_s {self.first_s!r} and ceiling_s "
                f"{self.ceiling_s!r} are not in increasing order"
            )


@dataclass(frozen=True)
class CallLimit:
    """The read timeout of one call, with what it was estimated from (for its error message).

    Attributes:
        seconds: The limit.
        prompt_tokens: The request's prompt tokens, as estimated.
        max_tokens: The tokens it may generate (its `max_tokens`, else the policy's guess).
        prefill_tps: Prompt tokens/s used.
        decode_tps: Generated tokens/s used.
        observed: How many finished calls the speeds come from (0: assumed).
        expected_s: The time expected at those speeds, before the safety factor.
        load: This client's calls in flight when it was sent, itself included.
    """

    seconds: float
    prompt_tokens: int
    max_tokens: int
    prefill_tps: float
    decode_tps: float
    observed: int
    expected_s: float
    load: int = 1

    @property
    def shown(self) -> str:
        """The limit as a person reads it: `312 s`, `0.25 s`."""
        return f"{_num(self.seconds)} s"

    def reason(self, policy: CallTimeoutPolicy) -> str:
        """Why the limit is what it is, e.g. `adaptive: 15 s + 2 × 148 s expected for ~2,900
        prompt tokens + 512 max tokens at 95 prompt / 21 generated tokens/s (median of 12
        calls observed)`."""
        speeds = f"{_num(self.prefill_tps)} prompt / {_num(self.decode_tps)} generated tokens/s"
        seen = (
            f"median of {self.observed} call{'s' * (self.observed != 1)} observed"
            if self.observed
            else "assumed before any call finished"
        )
        if self.load > 1:
            seen += f", {self.load} calls in flight"
        text = (
            f"adaptive: {_num(policy.floor_s)} s + {_num(policy.safety)} × "
            f"{_num(self.expected_s)} s expected for ~{self.prompt_tokens:,} prompt tokens + "
            f"{self.max_tokens:,} max tokens at {speeds} ({seen})"
        )
        raw = policy.floor_s + policy.safety * self.expected_s
        if self.seconds > raw:
            text += f"; raised to {_num(self.seconds)} s until a call has finished"
        elif self.seconds < raw:
            text += f"; capped at {_num(self.seconds)} s"
        return text


def read_timeout(
    policy: CallTimeoutPolicy,
    prompt_tokens: int,
    max_tokens: int,
    prefill_tps: float,
    decode_tps: float,
    *,
    observed: int,
    load: int = 1,
) -> CallLimit:
    """The limit for a call of `prompt_tokens` that may generate `max_tokens`, at these speeds.

    `floor + safety * (prompt_tokens / prefill_tps + max_tokens / decode_tps)`, at most
    `ceiling_s`, and at least `first_s` while `observed` is 0.
    """
    expected = prompt_tokens / prefill_tps + max_tokens / decode_tps
    least = policy.floor_s if observed else policy.first_s
    seconds = min(policy.ceiling_s, max(least, policy.floor_s + policy.safety * expected))
    return CallLimit(
        seconds, prompt_tokens, max_tokens, prefill_tps, decode_tps, observed, expected, load
    )


@dataclass(frozen=True, slots=True)
class _Seen:
    """One finished call: the lower bounds on each speed it gives, and its load."""

    prefill_tps: float  # prompt tokens / seconds
    decode_tps: float  # generated tokens / seconds (0.0: it reported none)
    load: int


class CallTimeouts:
    """One client's read timeouts: the speeds its server showed, and the limits they give.

    Not thread-safe: one per client, used from its event loop.
    """

    def __init__(self, policy: CallTimeoutPolicy | None = None) -> None:
        self.policy = policy or CallTimeoutPolicy()
        self._seen: deque[_Seen] = deque(maxlen=self.policy.window)

    @property
    def observed(self) -> int:
        """How many finished calls the speeds now come from."""
        return len(self._seen)

    def limit(self, prompt_tokens: int, max_tokens: int | None, *, load: int = 1) -> CallLimit:
        """The limit for a request of about `prompt_tokens` prompt tokens that may generate
        `max_tokens` (None: the policy's `assumed_max_tokens`), sent with `load` of this
        client's calls in flight (itself included)."""
        policy = self.policy
        prefill = self._median([s.prefill_tps * min(1.0, s.load / load) for s in self._seen])
        decode = self._median([s.decode_tps * min(1.0, s.load / load) for s in self._seen])
        return read_timeout(
            policy,
            prompt_tokens,
            policy.assumed_max_tokens if max_tokens is None else max_tokens,
            prefill or policy.prior_prefill_tps,
            decode or policy.prior_decode_tps,
            observed=len(self._seen),
            load=load,
        )

    def observe(self, prompt_tokens: int, usage: Usage, seconds: float, *, load: int = 1) -> None:
        """Learn from a call estimated at `prompt_tokens` that finished in `seconds` with
        `usage` (`load`: as given to `limit`). Usage the server left out (zeros) teaches
        nothing of its kind; the prompt then counts as estimated."""
        if seconds <= 0 or not math.isfinite(seconds):
            return
        prompt = usage.prompt_tokens or prompt_tokens
        self._seen.append(_Seen(prompt / seconds, usage.completion_tokens / seconds, load))

    def timed_out(self) -> None:
        """A call ran past its limit: forget the speeds, back to the untrained limits."""
        self._seen.clear()

    @staticmethod
    def _median(speeds: list[float]) -> float | None:
        known = [s for s in speeds if s > 0]
        return statistics.median(known) if known else None


def _num(value: float) -> str:
    """A number as a person reads it: 312, 21, 4.2, 0.35."""
    return f"{value:,.0f}" if value >= 10 else f"{value:.2g}"


__all__ = ["CallLimit", "CallTimeoutPolicy", "CallTimeouts", "read_timeout"]
