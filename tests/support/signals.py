"""Child processes that take Ctrl-C the way they would from a terminal."""

from __future__ import annotations

import signal


def default_sigint() -> None:
    """`preexec_fn` for a child that a test interrupts with SIGINT.

    A test run started in the background from a non-interactive shell (`cmd &`, `nohup`)
    has SIGINT ignored, and children inherit an ignored signal: Python then never installs
    its KeyboardInterrupt handler and the child runs on through the test's SIGINT.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)
