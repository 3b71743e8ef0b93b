"""`EventFold`: the base class of everything that folds a run's event stream into state.

A fold is an `EventSink` whose state changes with each event: the progress counters, the
OpenTelemetry spans, the rewards' per-subtask accumulators, a transcript, the per-role
concurrency. A subclass defines one method per event kind it cares about, named `on_` + the
event's `type` and typed with its class:

    class Retries(EventFold):
        def __init__(self) -> None:
            self.n = 0

        def on_subtask_retrying(self, event: SubtaskRetrying) -> None:
            self.n += 1

`handle(event)` dispatches on the event's class through a table built once per subclass,
when the class is defined; an event the fold has no method for is ignored, so a new kind of
event needs its class in `swarm.events` and a method only in the folds that want it. A
method named `on_` + a name that is no event type is refused when the class is defined: a
misspelt handler would otherwise never run, silently.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, Final, get_args

from kimmy_swarm.swarm.events import Event

if TYPE_CHECKING:
    from pydantic import BaseModel


def _event_classes() -> tuple[type[BaseModel], ...]:
    """The classes of the `Event` union (`Annotated[A | B | …, Field(discriminator)]`)."""
    union = get_args(Event)[0]
    return get_args(union)


#: The handler method's name of each event class: `on_` + its `type`.
HANDLER_NAMES: Final[dict[type[Any], str]] = {
    cls: f"on_{cls.model_fields['type'].default}" for cls in _event_classes()
}
_KNOWN: Final = frozenset(HANDLER_NAMES.values())


class EventFold:
    """Folds events into the subclass's state by `on_<type>` methods (see the module
    docstring). Subclasses that override `handle` call `super().handle(event)`."""

    #: The subclass's handler of each event class it handles (built when it is defined).
    _handlers: ClassVar[dict[type[Any], Callable[[Any, Any], None]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        unknown = sorted(n for n in dir(cls) if n.startswith("on_") and n not in _KNOWN)
        if unknown:
            raise TypeError(
                f"{cls.__qualname__} defines {', '.join(unknown)}, which handle no event; "
                f"the handlers are on_<type> for the types of swarm.events: "
                f"{', '.join(sorted(_KNOWN))}"
            )
        cls._handlers = {
            event_cls: handler
            for event_cls, name in HANDLER_NAMES.items()
            if callable(handler := getattr(cls, name, None))
        }

    def wants(self, cls: type[Any]) -> bool:
        """Whether this fold has a use for events of type `cls` (a handler; a fold that
        overrides `handle` may look at any)."""
        return cls in self._handlers or type(self).handle is not EventFold.handle

    def handle(self, event: Event) -> None:
        """Fold one event in: its handler runs, if this fold has one."""
        handler = self._handlers.get(type(event))
        if handler is not None:
            handler(self, event)


__all__ = ["HANDLER_NAMES", "EventFold"]
