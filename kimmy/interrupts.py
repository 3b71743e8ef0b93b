"""Ctrl-C and SIGTERM: either one stops a command's work the same clean way.

SIGINT exits 130 and SIGTERM 143 (128 + the signal, as a shell reports a process a signal
ended); in both cases the running work is cancelled, everything finished so far is stored,
and the message says how to continue. No traceback.

asyncio's runner already turns a SIGINT into a cancel of the main task (whose cleanup then
runs: the run is stored as cancelled) followed by `KeyboardInterrupt`. `stop_on_signals`
sends SIGTERM down that same path, and maps the `KeyboardInterrupt` to the exit code of the
signal that caused it; `kimmy.app.main` prints the message and exits with it.

Only a command that runs a run says how to continue (`RESUME_HINT`, or its own hint, as
`kimmy demo` names each of its two runs); any other command stopped by Ctrl-C (`kimmy
dashboard`, `kimmy serve`) just says it was interrupted.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

__all__ = [
    "NOT_STORED_HINT",
    "RESUME_HINT",
    "Interrupted",
    "interrupted_message",
    "stop_on_signals",
]

#: What the message after an interrupted stored run adds: how to continue it.
RESUME_HINT = "finished work is stored: `kimmy resume latest` continues"
#: What it adds for a run made with `--no-store`.
NOT_STORED_HINT = "the run was not stored (--no-store), so it cannot be resumed"


class Interrupted(Exception):
    """A command's work was stopped by a signal, after its cleanup (what finished is stored).

    Attributes:
        signum: the signal.
        exit_code: 128 + signum, as a shell reports a process that signal ended.
        hint: what the message adds after saying what stopped the command (how to go on).
    """

    def __init__(self, signum: int, hint: str | None = RESUME_HINT) -> None:
        super().__init__(interrupted_message(signum, hint))
        self.signum = signum
        self.exit_code = 128 + signum
        self.hint = hint


def interrupted_message(signum: int = signal.SIGINT, hint: str | None = None) -> str:
    """What is printed on stderr when a command is stopped by `signum`: one line, then
    `hint` (how to continue; None for a command that ran no run)."""
    what = "interrupted" if signum == signal.SIGINT else f"stopped by {signal.Signals(signum).name}"
    return f"kimmy: {what}" + (f"; {hint}" if hint else "")


def _as_sigint(signum: int, frame: FrameType | None) -> None:
    """Handle a SIGTERM like the SIGINT handler in force now (asyncio's, inside
    `asyncio.run`: cancel the main task), or like Python's default one."""
    handler = signal.getsignal(signal.SIGINT)
    if callable(handler):
        handler(signal.SIGINT, frame)
    else:  # SIGINT ignored or default: still stop, as Ctrl-C would
        raise KeyboardInterrupt


@contextlib.contextmanager
def stop_on_signals(hint: str | None = RESUME_HINT) -> Iterator[None]:
    """Run the block so that SIGINT and SIGTERM both stop it the way Ctrl-C does.

    Args:
        hint: what the message says after "interrupted" (default: how to resume the run).

    Raises:
        Interrupted: a signal stopped the block (its cleanup has run).
    """
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread receives signals, and only it may set handlers
        return
    received: list[int] = []

    def on_term(signum: int, frame: FrameType | None) -> None:
        received.append(signum)
        _as_sigint(signum, frame)

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        yield
    except KeyboardInterrupt:
        raise Interrupted(received[0] if received else signal.SIGINT, hint) from None
    finally:
        signal.signal(signal.SIGTERM, previous)
