"""`RoleConcurrency`: sub-agents in flight per role, at peak, counted from the run's events
(a retried subtask stays one sub-agent in flight)."""

from __future__ import annotations

from kimmy_swarm.agents.tracking import RoleConcurrency
from kimmy_swarm.swarm import events as ev
from kimmy_swarm.swarm.schema import SubtaskResult, SubtaskStatus


def _started(sid: str, role: str, attempt: int = 1) -> ev.SubtaskStarted:
    return ev.SubtaskStarted(run_id="r", ts=0.0, subtask_id=sid, role=role, attempt=attempt)


def _finished(sid: str, role: str) -> ev.SubtaskFinished:
    result = SubtaskResult(id=sid, role=role, status=SubtaskStatus.DONE)
    return ev.SubtaskFinished(run_id="r", ts=1.0, result=result)


def test_peak_in_flight_per_role() -> None:
    seen = RoleConcurrency()
    events = [
        _started("a", "researcher"),
        _started("b", "researcher"),
        _started("a", "researcher", attempt=2),  # a retry: still one in flight
        _finished("a", "researcher"),
        _started("c", "researcher"),
        _started("w", "writer"),
        _finished("never-started", "writer"),  # skipped: never counted
        _finished("b", "researcher"),
    ]
    for event in events:
        seen.handle(event)
    assert seen.peak == {"researcher": 2, "writer": 1}
    assert seen.started == {"researcher": 3, "writer": 1}
    assert seen.running == {"researcher": 1, "writer": 1}
