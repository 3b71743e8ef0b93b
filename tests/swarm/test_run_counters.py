"""`RunCounters`: each counter moved by one kind of event, and the two views that keep them
(the progress view from typed events, the dashboard from the stored JSON) counting a run
alike."""

from __future__ import annotations

from kimmy_swarm.swarm import events as ev
from kimmy_swarm.swarm.dashboard.state import RunView
from kimmy_swarm.swarm.progress import RunStats
from kimmy_swarm.swarm.run_counters import RunCounters
from kimmy_swarm.swarm.schema import ErrorInfo, Usage

ERROR = ErrorInfo(type="ModelServerError", message="busy")


def _events() -> list[ev.Event]:
    base = {"run_id": "r", "ts": 1.0}
    return [
        ev.RunStarted(**base, seq=0, goal="g", n_subtasks=1, settings={"max_concurrency": 8}),
        ev.SubtaskStarted(**base, seq=1, subtask_id="a", role="w", attempt=1),
        ev.ModelCalled(**base, seq=2, subtask_id="a", latency_s=0.1, error=ERROR),
        ev.SubtaskRetrying(**base, seq=3, subtask_id="a", attempt=1, error=ERROR, delay_s=0.0),
        ev.ModelCalled(**base, seq=4, subtask_id="a", latency_s=0.1, usage=Usage(total_tokens=30)),
        ev.ConcurrencyChanged(**base, seq=5, limit=4, previous=8, reason="latency"),
        ev.SpawnRefused(**base, seq=6, parent_id="a", error=ERROR),
    ]


def _counts(c: RunCounters) -> tuple[object, ...]:
    return (
        c.model_calls,
        c.failed_model_calls,
        c.tokens,
        c.retries,
        c.spawn_refused,
        c.concurrency_limit,
    )


def test_each_counter_moves_by_its_event() -> None:
    c = RunCounters()
    c.limit_from_settings({"max_concurrency": True})  # not an integer limit: ignored
    c.limit_from_settings({})
    assert _counts(c) == (0, 0, 0, 0, 0, None)
    c.limit_from_settings({"max_concurrency": 8})
    c.count_model_call(10, failed=False)
    c.count_model_call(0, failed=True)
    c.count_retry()
    c.count_spawn_refused()
    c.limit_changed(4)
    assert _counts(c) == (2, 1, 10, 1, 1, 4)


def test_the_progress_view_and_the_dashboard_count_a_run_alike() -> None:
    stats = RunStats()
    for event in _events():
        stats.handle(event)
    view = RunView("r", [{"id": "a", "role": "w"}], {})
    batch = ev.dump_events(_events())
    view.apply(0, len(_events()) - 1, batch)
    assert _counts(stats) == _counts(view) == (2, 1, 30, 1, 1, 4)
    counters = view.counters(now=1.0)
    assert (counters["model_calls"], counters["tokens"], counters["retries"]) == (2, 30, 1)
    assert counters["limit"] == 4
