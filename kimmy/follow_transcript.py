"""`kimmy show RUN --agent ID --follow`: a sub-agent's conversation as it happens.

What the store holds is printed as `kimmy show --agent` prints it, entry by entry as they
are recorded; in between, the answer the sub-agent's model is writing is printed as it
arrives (from the run's live files, `swarm.live_tokens`: runs started with streaming on).
It ends when the sub-agent has finished, or its run is no longer running.
"""

from __future__ import annotations

import time
from pathlib import Path

from rich.console import Console
from rich.text import Text

from kimmy_swarm.cli.show_transcript import print_entries, print_heading
from kimmy_swarm.swarm.live_tokens import read_live, watch_live
from kimmy_swarm.swarm.schema import RunStatus, SubtaskStatus
from kimmy_swarm.swarm.store import RunStore
from kimmy_swarm.swarm.transcripts import read_transcript

#: Seconds between two looks at the store and the live file.
POLL_S = 0.2
_OPEN = (SubtaskStatus.PENDING, SubtaskStatus.RUNNING)


def follow_transcript(
    runs_dir: Path, run_id: str, subtask_id: str, *, poll_s: float = POLL_S
) -> None:
    """Print the sub-agent's conversation, then what it writes, until it is over."""
    console = Console()
    shown: dict[int, int] = {}  # entries printed, by attempt position
    writing = ""  # the text printed of the answer being written
    with RunStore(runs_dir, create=False) as store:
        run_id = store.resolve(run_id)
        watch_live(runs_dir, run_id, subtask_id)  # the run writes its answers for us from now
        heading = False
        while True:
            t = read_transcript(store, run_id, subtask_id)
            if not heading:
                print_heading(console, t)
                heading = True
            for position, attempt in enumerate(t.attempts):
                done = shown.get(position, -1)
                if done < 0:
                    shown[position] = done = 0
                if len(attempt.entries) > done:
                    if writing:
                        console.print()  # the stored answer follows its preview
                        writing = ""
                    print_entries(console, attempt, start=done, rule=done == 0)
                    shown[position] = len(attempt.entries)
            live = read_live(runs_dir, run_id, subtask_id)
            if live.startswith(writing) and len(live) > len(writing):
                if not writing:
                    console.print(Text("writing: ", style="bold magenta"), end="")
                console.print(Text(live[len(writing) :]), end="", soft_wrap=True)
                writing = live
            elif live and not live.startswith(writing):  # a new answer
                console.print()
                console.print(Text("writing: ", style="bold magenta"), Text(live), end="")
                writing = live
            (run,) = store.list_runs(run_id=run_id)
            if t.status not in _OPEN or run.status is not RunStatus.RUNNING or run.interrupted:
                if writing:
                    console.print()
                state = "interrupted" if run.interrupted else run.status.value
                why = t.status.value if t.status not in _OPEN else f"the run is {state}"
                console.print(Text(f"(followed to the end: {why})", style="dim"))
                return
            time.sleep(poll_s)


__all__ = ["follow_transcript"]
