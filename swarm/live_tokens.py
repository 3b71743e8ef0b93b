"""What sub-agents are writing right now, for viewers in other processes.

`TokenDelta` events are never stored (the store keeps whole answers), so a viewer that is
not in the run's process — `kimmy show --follow`, the dashboard — reads them from the run's
*live file*, `RUNS_DIR/live/RUN.jsonl`. A viewer first says which sub-agent it watches
(`watch_live` adds its id to `RUN.want`); `LiveTokens`, a sink of a run that streams with a
store, writes only the watched sub-agents' answers, a tenth of a second's pieces at a time
in one append: each piece of an answer still being written (`{"s": sub-agent, "c": call,
"k": kind, "i": index, "t": text}`, the call's earlier pieces too when the watch began
mid-answer), and a mark when a call whose pieces the file holds is recorded in the store
(`{"s", "done": call}`) or its sub-agent starts again or ends (`{"s", "reset": true}`). A
run nobody watches writes nothing. Past `ROTATE_BYTES` the file is replaced by one holding
only the answers being written; both files go when the run ends. `read_live` gives one
sub-agent's text being written.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kimmy_swarm.swarm.event_fold import EventFold

if TYPE_CHECKING:
    from kimmy_swarm.swarm import events as ev

#: Seconds between two writes of the pieces gathered.
FLUSH_S = 0.1
#: A live file past this size is rewritten with only the answers being written.
ROTATE_BYTES = 4 * 1024 * 1024
LIVE_DIR = "live"

#: A piece: (call, kind, index, text).
_Piece = tuple[int, str, int, str]


def live_file(runs_dir: Path, run_id: str) -> Path:
    """The live file of a run."""
    return runs_dir / LIVE_DIR / f"{run_id}.jsonl"


def want_file(runs_dir: Path, run_id: str) -> Path:
    """The ids of the run's sub-agents somebody watches, a line each."""
    return runs_dir / LIVE_DIR / f"{run_id}.want"


def watch_live(runs_dir: Path, run_id: str, subtask_id: str) -> None:
    """Ask the run to write what `subtask_id` is writing to its live file (from the next
    tenth of a second on, its answer so far included)."""
    path = want_file(runs_dir, run_id)
    try:
        if subtask_id in path.read_text(encoding="utf-8").splitlines():
            return
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as out:
        out.write(subtask_id + "\n")


class _Agent:
    """One sub-agent streaming in this run."""

    __slots__ = ("current", "in_file", "recorded", "written")

    def __init__(self) -> None:
        #: Calls of the current attempt recorded in the store.
        self.recorded = 0
        #: The pieces of the call being written.
        self.current: list[_Piece] = []
        #: How many of `current` the file holds.
        self.written = 0
        #: The latest call whose pieces the file holds (0: none).
        self.in_file = 0


class LiveTokens(EventFold):
    """Writes the watched sub-agents' answers being written to the run's live file."""

    def __init__(
        self,
        runs_dir: Path,
        run_id: str,
        *,
        flush_s: float = FLUSH_S,
        rotate_bytes: int = ROTATE_BYTES,
    ) -> None:
        self.path = live_file(runs_dir, run_id)
        self.want = want_file(runs_dir, run_id)
        self.flush_s = flush_s
        self.rotate_bytes = rotate_bytes
        self._agents: dict[str, _Agent] = {}
        #: Marks to write: (subtask, {"done"|"reset": …}).
        self._marks: list[tuple[str, dict[str, Any]]] = []
        self._watched: set[str] = set()
        self._want_mtime: float | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._size = 0

    def _later(self) -> None:
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self.flush_s, self.flush)

    def on_token_delta(self, e: ev.TokenDelta) -> None:
        agent = self._agents.get(e.subtask_id)
        if agent is None:
            agent = self._agents[e.subtask_id] = _Agent()
        if agent.current and agent.current[0][0] != e.call:
            agent.current, agent.written = [], 0
        agent.current.append((e.call, e.kind, e.index, e.text))
        if self._timer is None:
            self._later()

    def on_model_called(self, e: ev.ModelCalled) -> None:
        agent = self._agents.get(e.subtask_id)
        if agent is None:
            return
        agent.recorded += 1
        if agent.current and agent.current[0][0] <= agent.recorded:
            agent.current, agent.written = [], 0
        if agent.in_file and agent.in_file <= agent.recorded:
            self._mark(e.subtask_id, agent, {"done": agent.recorded})

    def on_subtask_started(self, e: ev.SubtaskStarted) -> None:
        agent = self._agents.get(e.subtask_id)
        if agent is not None:  # a new attempt: its calls are counted again
            self._agents[e.subtask_id] = _Agent()
            if agent.in_file:
                self._mark(e.subtask_id, agent, {"reset": True})

    def on_subtask_finished(self, e: ev.SubtaskFinished) -> None:
        agent = self._agents.pop(e.result.id, None)
        if agent is not None and agent.in_file:
            self._mark(e.result.id, agent, {"reset": True})

    def on_run_finished(self, e: ev.RunFinished) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._agents.clear()
        self._marks.clear()
        for path in (self.path, self.want):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()

    def _mark(self, subtask_id: str, agent: _Agent, mark: dict[str, Any]) -> None:
        agent.in_file = 0
        self._marks.append((subtask_id, mark))
        self._later()

    def _watch_list(self) -> set[str]:
        """The watched sub-agents (`RUN.want`, read again when it changed)."""
        try:
            mtime = self.want.stat().st_mtime_ns
        except FileNotFoundError:
            return self._watched
        if mtime != self._want_mtime:
            self._want_mtime = mtime
            self._watched = set(self.want.read_text(encoding="utf-8").splitlines())
        return self._watched

    def flush(self) -> None:
        """Write the watched sub-agents' new pieces and the marks, in one append (or rotate)."""
        self._timer = None
        lines = [json.dumps({"s": s, **mark}) for s, mark in self._marks]
        self._marks = []
        for subtask_id in self._watch_list():
            agent = self._agents.get(subtask_id)
            if agent is None or len(agent.current) <= agent.written:
                continue
            lines += [_piece_line(subtask_id, p) for p in agent.current[agent.written :]]
            agent.written = len(agent.current)
            agent.in_file = agent.current[0][0]
        if self._agents and not self._timer:  # watch for new watchers while answers stream
            self._later()
        if not lines:
            return
        text = "\n".join(lines) + "\n"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self._size + len(text) > self.rotate_bytes:
            self._rotate()
            return
        with self.path.open("a", encoding="utf-8") as out:
            out.write(text)
        self._size += len(text)

    def _rotate(self) -> None:
        """Replace the file by one holding only the watched answers being written."""
        watched = self._watch_list()
        lines = [
            _piece_line(subtask_id, piece)
            for subtask_id, agent in self._agents.items()
            if subtask_id in watched
            for piece in agent.current
        ]
        text = "\n".join(lines) + "\n" if lines else ""
        fresh = self.path.with_suffix(".tmp")
        fresh.write_text(text, encoding="utf-8")
        os.replace(fresh, self.path)
        self._size = len(text)
        for subtask_id, agent in self._agents.items():
            held = subtask_id in watched and agent.current
            agent.in_file = agent.current[0][0] if held else 0
            agent.written = len(agent.current) if held else 0


def _piece_line(subtask_id: str, piece: _Piece) -> str:
    call, kind, index, text = piece
    return json.dumps({"s": subtask_id, "c": call, "k": kind, "i": index, "t": text})


def read_live(runs_dir: Path, run_id: str, subtask_id: str) -> str:
    """What the sub-agent is writing now: the text of its answer so far, and each tool call
    as `→ name(arguments…` ("" when it writes nothing now, or its run does not stream)."""
    try:
        lines = live_file(runs_dir, run_id).read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return ""
    needle = json.dumps(subtask_id)
    pieces: list[dict[str, Any]] = []
    for line in lines:
        if needle not in line:
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError:  # a line being written
            continue
        if item.get("s") != subtask_id:
            continue
        if "reset" in item:
            pieces = []
        elif "done" in item:
            pieces = [p for p in pieces if p["c"] > item["done"]]
        else:
            if pieces and pieces[-1]["c"] != item["c"]:
                pieces = []  # a new call
            pieces.append(item)
    content = [p["t"] for p in pieces if p["k"] == "content"]
    calls: dict[int, list[str]] = {}
    for p in pieces:
        if p["k"] == "tool_name":
            calls.setdefault(p["i"], []).append(f"\n→ {p['t']}(")
        elif p["k"] == "tool_arguments":
            calls.setdefault(p["i"], []).append(p["t"])
    return "".join(content) + "".join("".join(parts) for _, parts in sorted(calls.items()))


__all__ = [
    "FLUSH_S",
    "LIVE_DIR",
    "ROTATE_BYTES",
    "LiveTokens",
    "live_file",
    "read_live",
    "want_file",
    "watch_live",
]
