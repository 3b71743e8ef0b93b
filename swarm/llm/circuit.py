"""A circuit breaker per model endpoint: a dead server is not hammered.

Killed at 30% of a 500-sub-agent run, a model server used to get every remaining sub-agent's
three attempts (~1,020 calls to a closed port) before the run failed them all. With the
breaker, each `OpenAIChat` (one endpoint) counts connection failures in a row:

- **closed** (healthy): calls go through; `failures` connection failures in a row open it.
- **open**: calls wait here — no request is sent, no attempt of theirs is spent (a call
  whose connection fails while the breaker is open, a probe's included, goes back to
  waiting instead of failing). After `first_probe_s` (doubling up to `max_probe_s`) one
  call goes through as a **probe**; its success closes the breaker and every waiting call
  proceeds; its failure opens it again, for longer.
- **given up**: open for `give_up_s` without a successful probe, every waiting call (and
  any later one) raises `ModelUnreachableError`. The run stops on it with one line
  (`swarm.subtask_runner`), what has not finished stays pending, and `kimmy resume`
  finishes it once the server is back.

Any answer from the server — a 500 or a 429 included — shows it is reachable and closes the
breaker; only refused, reset or unreachable connections count. The state is per client and
per process; a waiting call polls it (a client serves one event loop at a time, and events
would tie it to one).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from kimmy_swarm.swarm.errors import (
    ConfigError,
    ModelConnectionError,
    ModelError,
    ModelUnreachableError,
)

#: How often a waiting call looks at the breaker again.
POLL_S = 0.2


@dataclass(frozen=True)
class CircuitSettings:
    """When the breaker opens, probes and gives up.

    Attributes:
        failures: connection failures in a row that open it.
        first_probe_s: seconds from opening to the first probe (doubling after each failed
            probe, up to `max_probe_s`).
        max_probe_s: the longest wait between two probes.
        give_up_s: seconds open, without a successful probe, after which waiting calls fail
            with `ModelUnreachableError`.
    """

    failures: int = 5
    first_probe_s: float = 1.0
    max_probe_s: float = 15.0
    give_up_s: float = 60.0

    def __post_init__(self) -> None:
        if isinstance(self.failures, bool) or not isinstance(self.failures, int):
            raise ConfigError(
                f"CircuitSettings.failures must be an int >= 1, got {self.failures!r}"
            )
        if self.failures < 1:
            raise ConfigError(
                f"CircuitSettings.failures must be an int >= 1, got {self.failures!r}"
            )
        for name in ("first_probe_s", "max_probe_s", "give_up_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                raise ConfigError(f"CircuitSettings.{name} must be > 0 seconds, got {value!r}")


State = Literal["closed", "open", "probing"]


class CircuitBreaker:
    """The breaker of one endpoint (see the module's text).

    Args:
        endpoint: the server, as messages name it (credentials redacted).
        settings: when it opens, probes and gives up.
        clock: monotonic seconds (tests).
    """

    def __init__(
        self,
        endpoint: str,
        settings: CircuitSettings = CircuitSettings(),
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.endpoint, self.settings, self.clock = endpoint, settings, clock
        self.state: State = "closed"
        #: Connection failures in a row.
        self.failures = 0
        #: Requests sent while open (probes), for the record.
        self.probes = 0
        #: Connection failures in all (the server refused or dropped the connection).
        self.refused = 0
        self._down_since = 0.0
        self._delay = settings.first_probe_s
        self._next_probe = 0.0

    @property
    def closed(self) -> bool:
        return self.state == "closed"

    def unreachable(self) -> ModelUnreachableError:
        s = self.settings
        return ModelUnreachableError(
            f"model server at {self.endpoint} unreachable: {self.failures} connection "
            f"attempts failed in a row over {s.give_up_s:g} s; the run stops here "
            "(kimmy resume continues it once the server is back)"
        )

    async def admit(self) -> bool:
        """Wait until a call may be sent; returns whether it is the probe.

        Raises:
            ModelUnreachableError: the breaker has been open for `give_up_s`.
        """
        while True:
            if self.state == "closed":
                return False
            now = self.clock()
            if now - self._down_since >= self.settings.give_up_s:
                raise self.unreachable()
            if self.state == "open" and now >= self._next_probe:
                self.state = "probing"
                self.probes += 1
                return True
            await asyncio.sleep(POLL_S)

    def succeeded(self) -> None:
        """A call was answered (any status): the server is reachable."""
        self.state, self.failures = "closed", 0
        self._delay = self.settings.first_probe_s

    def failed(self, error: ModelError, *, probe: bool) -> None:
        """A call failed with `error`; only connection failures count against the server."""
        if not isinstance(error, ModelConnectionError) or isinstance(error, ModelUnreachableError):
            if error.status is not None:  # the server answered
                self.succeeded()
            elif probe:
                self.aborted(probe=True)
            return
        self.failures += 1
        self.refused += 1
        now = self.clock()
        if probe:  # still down: wait longer before the next probe
            self._delay = min(self._delay * 2, self.settings.max_probe_s)
            self.state, self._next_probe = "open", now + self._delay
        elif self.state == "closed" and self.failures >= self.settings.failures:
            self.state, self._down_since = "open", now
            self._delay = self.settings.first_probe_s
            self._next_probe = now + self._delay

    def aborted(self, *, probe: bool) -> None:
        """A call ended without an answer or a connection failure (cancelled): a probe's
        turn passes to the next waiting call."""
        if probe and self.state == "probing":
            self.state, self._next_probe = "open", self.clock()


__all__ = ["POLL_S", "CircuitBreaker", "CircuitSettings"]
