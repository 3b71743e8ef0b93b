"""What sub-agents are writing right now, for viewers in other processes.

`TokenDelta` events are never stored (the store keeps whole answers), so a viewer that is
not in the run's process — `kimmy show --follow`, the dashboard — reads them from the run's
*live file*, `RUNS_DIR/live/RUN.jsonl`. `LiveTokens`, a sink of a run that streams with a
store, appends to it a tenth of a second's pieces at a time, in one write: each piece of an
answer still being written (`{"s": sub-agent, "c": call, "k": kind, "i": index, "t": text}`),
and a mark when a call whose pieces the file holds is recorded in the store (`{"s", "done":
call}`) or its sub-agent starts again or ends (`{"s", "reset": true}`). Pieces of a call
recorded before they were written are never written at all. When the file has grown past
`ROTATE_BYTES` it is replaced by one holding only the answers being written. It goes when
the run ends. `read_live` gives one sub-agent's text being written.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from dataclasses import dataclass, field
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


@dataclass
class _Agent:
    #: Calls of the current attempt recorded in the store.
    recorded: int = 0
    #: The pieces of the call being written (what a rotation keeps).
    current: list[_Piece] = field(default_factory=list)
    #: The latest call whose pieces the file holds (0: none).
    in_file: int = 0


class LiveTokens(EventFold):
    """Appends the pieces of the answers being written to the run's live file."""

    def __init__(
        self,
        runs_dir: Path,
        run_id: str,
        *,
        flush_s: float = FLUSH_S,
        rotate_bytes: int = ROTATE_BYTES,
    ) -> None:
        self.path = live_file(runs_dir, run_id)
        self.flush_s = flush_s
        self.rotate_bytes = rotate_bytes
        self._agents: dict[str, _Agent] = {}
        #: Lines to write: a piece (subtask, piece) or a mark (subtask, {"done"|"reset": …}).
        self._pending: list[tuple[str, _Piece | dict[str, Any]]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._size = 0

    def _later(self) -> None:
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self.flush_s, self.flush)

    def on_token_delta(self, e: ev.TokenDelta) -> None:
        agent = self._agents.get(e.subtask_id)
        if agent is None:
            agent = self._agents[e.subtask_id] = _Agent()
        piece = (e.call, e.kind, e.index, e.text)
        if agent.current and agent.current[0][0] != e.call:
            agent.current = []
        agent.current.append(piece)
        self._pending.append((e.subtask_id, piece))
        self._later()

    def on_model_called(self, e: ev.ModelCalled) -> None:
        agent = self._agents.get(e.subtask_id)
        if agent is None:
            return
        agent.recorded += 1
        if agent.current and agent.current[0][0] <= agent.recorded:
            agent.current = []
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
        self._pending.clear()
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    def _mark(self, subtask_id: str, agent: _Agent, mark: dict[str, Any]) -> None:
        agent.in_file = 0
        self._pending.append((subtask_id, mark))
        self._later()

    def flush(self) -> None:
        """Write what was gathered since the last flush, in one append (or rotate)."""
        self._timer = None
        pending, self._pending = self._pending, []
        lines: list[str] = []
        for subtask_id, item in pending:
            if isinstance(item, dict):
                lines.append(json.dumps({"s": subtask_id, **item}))
                continue
            agent = self._agents.get(subtask_id)
            if agent is None or item[0] <= agent.recorded:
                continue  # its call is in the store already
            agent.in_file = item[0]
            lines.append(_piece_line(subtask_id, item))
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
        """Replace the file by one holding only the answers being written."""
        lines = [
            _piece_line(subtask_id, piece)
            for subtask_id, agent in self._agents.items()
            for piece in agent.current
        ]
        text = "\n".join(lines) + "\n" if lines else ""
        fresh = self.path.with_suffix(".tmp")
        fresh.write_text(text, encoding="utf-8")
        os.replace(fresh, self.path)
        self._size = len(text)
        for agent in self._agents.values():
            agent.in_file = agent.current[0][0] if agent.current else 0


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


__all__ = ["FLUSH_S", "LIVE_DIR", "ROTATE_BYTES", "LiveTokens", "live_file", "read_live"]
