"""`RunCounters`: the run-wide counters every view of a run keeps, defined once.

The progress views (`swarm.progress.RunStats`, fed the typed events) and the dashboard
(`swarm.dashboard.state.RunView`, which reads the stored JSON without building the event
models) both count model calls, tokens, retries and the concurrency limit. Each subclasses
this and moves the counters through its methods, so the two count alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class RunCounters:
    """Counters of one run, each moved by one kind of event.

    Attributes:
        model_calls: model calls made (`model_called`), failed ones included.
        failed_model_calls: of those, the ones that failed.
        tokens: tokens the calls used.
        retries: attempts that failed and will be retried (`subtask_retrying`).
        spawn_refused: spawns the runtime refused (`spawn_refused`).
        concurrency_limit: sub-agents allowed in flight: the run's `max_concurrency`, then
            wherever the adaptive limit moved it (`concurrency_changed`); None: not known.
    """

    def __init__(self) -> None:
        self.model_calls = 0
        self.failed_model_calls = 0
        self.tokens = 0
        self.retries = 0
        self.spawn_refused = 0
        self.concurrency_limit: int | None = None

    def count_model_call(self, tokens: int, *, failed: bool) -> None:
        """A `model_called` event: `tokens` used, `failed` when it carries an error."""
        self.model_calls += 1
        self.tokens += tokens
        if failed:
            self.failed_model_calls += 1

    def count_retry(self) -> None:
        """A `subtask_retrying` event."""
        self.retries += 1

    def count_spawn_refused(self) -> None:
        """A `spawn_refused` event."""
        self.spawn_refused += 1

    def limit_from_settings(self, settings: Mapping[str, Any]) -> None:
        """The limit a run starts with: its settings' `max_concurrency`, when an integer."""
        limit = settings.get("max_concurrency")
        if isinstance(limit, int) and not isinstance(limit, bool):
            self.concurrency_limit = limit

    def limit_changed(self, limit: int) -> None:
        """A `concurrency_changed` event."""
        self.concurrency_limit = limit


__all__ = ["RunCounters"]
