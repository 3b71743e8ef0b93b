"""Prometheus metrics of `kimmy serve` (`GET /metrics`, text format).

The engine already counts everything cumulatively (`EngineStats`), so the gauges and
counters are read from one `stats()` snapshot when scraped rather than updated on the hot
path; only the HTTP status counts and the tokens/s window live here. Each app gets its own
`CollectorRegistry`, so several servers in one process (tests, `LocalModel`) never share or
collide on metric names.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Counter, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from kimmy_swarm.model.serve.types import EngineStats

__all__ = ["CONTENT_TYPE", "ServerMetrics"]

#: The Prometheus text exposition format, version 0.0.4.
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class _TokenRate:
    """Generated tokens per second over the last `window_s` seconds, from samples of the
    engine's cumulative count (taken at each scrape and after each request)."""

    def __init__(self, window_s: float, clock: Callable[[], float]) -> None:
        self.window_s = window_s
        self._clock = clock
        self._samples: deque[tuple[float, int]] = deque()
        self._lock = threading.Lock()

    def sample(self, generated: int) -> float:
        now = self._clock()
        with self._lock:
            self._samples.append((now, generated))
            # keep one sample at or before the window's start as the baseline
            while len(self._samples) > 2 and self._samples[1][0] <= now - self.window_s:
                self._samples.popleft()
            (t0, g0), (t1, g1) = self._samples[0], self._samples[-1]
        return (g1 - g0) / (t1 - t0) if t1 > t0 else 0.0


class _EngineCollector(Collector):
    """Reads one `EngineStats` per scrape."""

    def __init__(self, stats: Callable[[], EngineStats], rate: _TokenRate) -> None:
        self._stats = stats
        self._rate = rate

    def collect(self) -> Iterator[Metric]:
        s = self._stats()
        gauges = [
            ("kimmy_num_requests_running", "Requests being decoded or prefilled.", s.running),
            ("kimmy_num_requests_waiting", "Requests queued for admission.", s.waiting),
            ("kimmy_kv_pages_used", "MLA KV-cache pages held by requests.", s.pages_used),
            ("kimmy_kv_pages_total", "MLA KV-cache pages in the pool.", s.pages_total),
            ("kimmy_state_slots_used", "KDA state slots in use (requests and prefix "
             "checkpoints).", s.slots_used),
            ("kimmy_state_slots_total", "KDA state slots in the pool.", s.slots_total),
            ("kimmy_prefix_cache_hit_rate", "Share of prompt tokens reused from the prefix "
             "cache since start.", s.prefix_hit_rate),
            ("kimmy_generation_tokens_per_second", "Generated tokens per second over the last "
             f"{self._rate.window_s:g} s.", self._rate.sample(s.generated_tokens)),
        ]  # fmt: skip
        for name, doc, value in gauges:
            yield GaugeMetricFamily(name, doc, value=value)
        counters = [
            ("kimmy_prompt_tokens", "Prompt tokens of admitted requests.", s.prompt_tokens),
            ("kimmy_cached_prompt_tokens", "Prompt tokens reused from the prefix cache.",
             s.cached_prompt_tokens),
            ("kimmy_prefill_tokens_computed", "Prompt tokens run through the model.",
             s.prefill_tokens_computed),
            ("kimmy_generation_tokens", "Tokens generated.", s.generated_tokens),
            ("kimmy_preemptions", "Requests preempted to free cache (recomputed later).",
             s.preemptions),
        ]  # fmt: skip
        for name, doc, value in counters:
            yield CounterMetricFamily(name, doc, value=value)


class ServerMetrics:
    """The metrics of one server.

    Args:
        stats: the engine's snapshot function (`AsyncEngine.stats`).
        window_s: the window of the tokens/s gauge.
        clock: monotonic seconds (tests pass their own).
    """

    def __init__(
        self,
        stats: Callable[[], EngineStats],
        *,
        window_s: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._stats = stats
        self.rate = _TokenRate(window_s, clock)
        self.registry.register(_EngineCollector(stats, self.rate))
        self.requests = Counter(
            "kimmy_requests",
            "HTTP requests to /v1 by status code.",
            ["status"],
            registry=self.registry,
        )

    def record_request(self, status: int) -> None:
        self.requests.labels(status=str(status)).inc()

    def sample_tokens(self) -> None:
        """Add a tokens/s sample (after a request ends), so the window sees bursts."""
        self.rate.sample(self._stats().generated_tokens)

    def render(self) -> bytes:
        return generate_latest(self.registry)
