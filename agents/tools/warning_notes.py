"""`noted_warnings`: the numerical warnings of a model fit as notes for the report, not
stderr noise ("RuntimeWarning: divide by zero encountered …" between the progress lines).

`warnings.catch_warnings` swaps process-global state (the filters and `showwarning`), so
two analysis threads inside it at once could restore each other's state and let warnings
through (or swallow them for good); the capture windows therefore take one lock.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["noted_warnings"]

_LOCK = threading.RLock()
#: The categories turned into notes; any other warning is shown as it would have been.
_NOTED = (RuntimeWarning, UserWarning)


def _noted(message: warnings.WarningMessage) -> bool:
    module = message.category.__module__
    return issubclass(message.category, _NOTED) or module.startswith("statsmodels")


@contextmanager
def noted_warnings(what: str) -> Iterator[list[str]]:
    """Collect the numerical warnings raised inside as notes ("`what`: category: message",
    each once, in order); other warnings are shown afterwards as usual."""
    notes: list[str] = []
    try:
        with _LOCK, warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield notes
    finally:  # after an error too: what is no note is still shown
        _sort(caught, notes, what)


def _sort(caught: list[warnings.WarningMessage], notes: list[str], what: str) -> None:
    for message in caught:
        if not _noted(message):
            warnings.showwarning(
                message.message, message.category, message.filename, message.lineno
            )
            continue
        note = f"{what}: {message.category.__name__}: {' '.join(str(message.message).split())}"
        if note not in notes:
            notes.append(note)
