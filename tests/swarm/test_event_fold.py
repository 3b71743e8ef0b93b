"""`EventFold`: `on_<type>` handlers dispatched by event class, unknown events ignored,
misspelt handlers refused when the class is defined."""

from __future__ import annotations

import typing

import pytest
from pydantic import BaseModel

from kimmy_swarm.swarm import EventFold
from kimmy_swarm.swarm import events as ev
from kimmy_swarm.swarm.event_fold import HANDLER_NAMES
from kimmy_swarm.swarm.schema import ErrorInfo, SubtaskResult, SubtaskStatus


def _started(sid: str = "a") -> ev.SubtaskStarted:
    return ev.SubtaskStarted(run_id="r", ts=1.0, subtask_id=sid, role="w", attempt=1)


def _retrying(sid: str = "a") -> ev.SubtaskRetrying:
    error = ErrorInfo(type="Boom", message="x")
    return ev.SubtaskRetrying(run_id="r", ts=2.0, subtask_id=sid, attempt=1, error=error, delay_s=0)


def _finished(sid: str = "a") -> ev.SubtaskFinished:
    result = SubtaskResult(id=sid, role="w", status=SubtaskStatus.DONE)
    return ev.SubtaskFinished(run_id="r", ts=3.0, result=result)


class _Starts(EventFold):
    def __init__(self) -> None:
        self.seen: list[str] = []

    def on_subtask_started(self, event: ev.SubtaskStarted) -> None:
        self.seen.append(f"started {event.subtask_id}")

    def on_subtask_finished(self, event: ev.SubtaskFinished) -> None:
        self.seen.append(f"finished {event.result.id}")


def test_a_fold_gets_exactly_the_events_it_has_handlers_for() -> None:
    fold = _Starts()
    for event in (_started("a"), _retrying("a"), _started("b"), _finished("a")):
        fold.handle(event)
    assert fold.seen == ["started a", "started b", "finished a"]  # the retry had no handler


def test_unknown_events_are_ignored() -> None:
    class Unknown(BaseModel):
        type: str = "something_new"
        run_id: str = "r"

    fold = _Starts()
    fold.handle(Unknown())  # type: ignore[arg-type]  # an event of a newer version
    fold.handle(object())  # type: ignore[arg-type]
    assert fold.seen == []


def test_a_subclass_inherits_and_overrides_handlers() -> None:
    class Retries(_Starts):
        def on_subtask_retrying(self, event: ev.SubtaskRetrying) -> None:
            self.seen.append(f"retrying {event.subtask_id}")

        def on_subtask_finished(self, event: ev.SubtaskFinished) -> None:
            self.seen.append("done")

    fold = Retries()
    for event in (_started(), _retrying(), _finished()):
        fold.handle(event)
    assert fold.seen == ["started a", "retrying a", "done"]
    assert _Starts._handlers.keys() == {ev.SubtaskStarted, ev.SubtaskFinished}  # untouched


def test_a_handler_for_no_event_type_is_refused_at_class_definition() -> None:
    with pytest.raises(TypeError, match="on_subtask_start, which handle no event"):

        class Typo(EventFold):
            def on_subtask_start(self, event: ev.SubtaskStarted) -> None: ...


def test_every_event_class_has_one_handler_name() -> None:
    classes = typing.get_args(typing.get_args(ev.Event)[0])
    assert set(HANDLER_NAMES) == set(classes)
    assert HANDLER_NAMES[ev.SubtasksSpawned] == "on_subtasks_spawned"
    assert len(set(HANDLER_NAMES.values())) == len(classes)
