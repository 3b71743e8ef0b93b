"""`stop_on_signals`, the one SIGINT/SIGTERM path of `kimmy run`, `resume`, `swarm`, `review`
and `analyze`: the work's cleanup runs, then `Interrupted` with 128 + the signal."""

from __future__ import annotations

import asyncio
import os
import signal
import time

import pytest

from kimmy_swarm.cli.interrupts import Interrupted, stop_on_signals


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_cancels_the_running_loop_after_its_cleanup(signum: int, code: int) -> None:
    cleaned: list[str] = []

    async def work() -> None:
        try:
            os.kill(os.getpid(), signum)
            await asyncio.sleep(30)
        finally:
            cleaned.append("work")  # the run is stored as cancelled here

    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Interrupted) as info, stop_on_signals():
        asyncio.run(work())
    assert cleaned == ["work"]
    assert info.value.exit_code == code and info.value.signum == signum
    assert "kimmy resume" in str(info.value)
    assert signal.getsignal(signal.SIGTERM) is before  # restored


def test_sigterm_outside_an_event_loop_stops_like_ctrl_c() -> None:
    """Synchronous work (a pipeline between its runs) stops too, its `finally` run."""
    cleaned: list[str] = []
    with pytest.raises(Interrupted) as info, stop_on_signals():
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(30)
        finally:
            cleaned.append("sync")
    assert cleaned == ["sync"] and info.value.exit_code == 143
    assert "SIGTERM" in str(info.value)
