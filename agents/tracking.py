"""`RoleConcurrency`: an event sink that measures how many sub-agents of each role ran at once;
`SpawnRefusals`: one that keeps the spawns the swarm refused.

The pipelines print them ("14 data_analyst sub-agents in flight at peak"; "the sub-agent
limit refused 5 spawns") so a user can see the swarm really ran in parallel, and why a run
stopped short; the figures come from the run's own events.
"""

from __future__ import annotations

from collections import Counter

from kimmy_swarm.swarm.event_fold import EventFold
from kimmy_swarm.swarm.events import SpawnRefused, SubtaskFinished, SubtaskStarted


class RoleConcurrency(EventFold):
    """Counts sub-agents in flight per role; `peak[role]` is the most at any moment."""

    def __init__(self) -> None:
        self.running: Counter[str] = Counter()
        self.peak: Counter[str] = Counter()
        self.started: Counter[str] = Counter()
        self._role_of: dict[str, str] = {}

    def on_subtask_started(self, event: SubtaskStarted) -> None:
        if event.subtask_id in self._role_of:  # a retry: still counted as running
            return
        self._role_of[event.subtask_id] = event.role
        self.started[event.role] += 1
        self.running[event.role] += 1
        self.peak[event.role] = max(self.peak[event.role], self.running[event.role])

    def on_subtask_finished(self, event: SubtaskFinished) -> None:
        role = self._role_of.pop(event.result.id, None)
        if role is not None:
            self.running[role] -= 1


class SpawnRefusals(EventFold):
    """The messages of the spawns the swarm refused (cycle, depth, the sub-agent limit), in
    order (a parent that asks again is refused again: each refusal counts)."""

    def __init__(self) -> None:
        self.messages: list[str] = []

    def on_spawn_refused(self, event: SpawnRefused) -> None:
        self.messages.append(event.error.message)


__all__ = ["RoleConcurrency", "SpawnRefusals"]
