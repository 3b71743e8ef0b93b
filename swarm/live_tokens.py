"""What sub-agents are writing right now, for viewers in other processes.

`TokenDelta` events are never stored (the store keeps whole answers), so a viewer that is
not in the run's process — `kimmy show --follow`, the dashboard — reads them from the run's
*live file*, `RUNS_DIR/live/RUN.jsonl`. A viewer first says which sub-agent it watches
(`watch_live` adds its id to `RUN.want`); `LiveTokens`, part of a run that streams with a
store, reads the watched sub-agents' answers being written straight from the run's
`DeltaBatcher` every tenth of a second and appends their new pieces in one write: each
piece (`{"s": sub-agent, "c": call, "k": kind, "i": index, "t": text}`, the call's earlier
pieces too when the watch began mid-answer), and a mark when a call whose pieces the file
holds has ended (`{"s", "done": call}`: answered, and then in the store, or given up).
Nobody else's answers cost it anything (it takes no events): a run nobody watches writes
nothing. Past `ROTATE_BYTES` the file is replaced by one holding only the answers being
written; both files go when the run ends. `read_live` gives one sub-agent's text being
written.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kimmy_swarm.swarm.delta_batcher import DeltaBatcher
    from kimmy_swarm.swarm.llm.stream_chunks import Delta

#: Seconds between two writes of the pieces gathered.
FLUSH_S = 0.1
#: A live file past this size is rewritten with only the answers being written.
ROTATE_BYTES = 4 * 1024 * 1024
LIVE_DIR = "live"


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


class _Shown:
    """A watched sub-agent's call whose pieces the file holds: which, and how many."""

    __slots__ = ("call", "pieces", "written")

    def __init__(self, call: int, pieces: list[Delta]) -> None:
        self.call = call
        #: The call's pieces, as the batcher holds them (which call it is, across attempts).
        self.pieces = pieces
        self.written = 0


class LiveTokens:
    """Writes the watched sub-agents' answers being written to the run's live file.

    Args:
        runs_dir, run_id: the run (its live files are under `runs_dir/live/`).
        answers: the run's streamed calls.
        flush_s: seconds between two writes; `start` begins them (`flush` writes now).
    """

    def __init__(
        self,
        runs_dir: Path,
        run_id: str,
        answers: DeltaBatcher,
        *,
        flush_s: float = FLUSH_S,
        rotate_bytes: int = ROTATE_BYTES,
    ) -> None:
        self.path = live_file(runs_dir, run_id)
        self.want = want_file(runs_dir, run_id)
        self.answers: DeltaBatcher | None = answers
        self.flush_s = flush_s
        self.rotate_bytes = rotate_bytes
        self._shown: dict[str, _Shown] = {}
        self._watched: set[str] = set()
        self._want_mtime: float | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._size = 0

    def start(self) -> None:
        """Write every `flush_s` from now until `close` (call it on the run's event loop)."""
        if self._timer is None and self.answers is not None:
            self._timer = asyncio.get_running_loop().call_later(self.flush_s, self.flush)

    def close(self) -> None:
        """The run ended: stop, and remove its live files."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._shown.clear()
        self.answers = None
        for path in (self.path, self.want):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()

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
        """Write the watched sub-agents' new pieces and the ends of the calls shown, in one
        append (or rotate); then again in `flush_s` while the run goes on."""
        self._timer = None
        answers = self.answers
        if answers is None:
            return
        self.start()
        lines = []
        for subtask_id in self._watch_list():
            shown = self._shown.get(subtask_id)
            found = answers.answer(subtask_id)
            if shown is not None and (found is None or found[1] is not shown.pieces):
                # the call shown ended (or another began: a new attempt numbers from 1 again)
                lines.append(json.dumps({"s": subtask_id, "done": shown.call}))
                del self._shown[subtask_id]
                shown = None
            if found is None:
                continue
            call, pieces = found
            if shown is None:
                shown = self._shown[subtask_id] = _Shown(call, pieces)
            count = len(pieces)
            if count > shown.written:
                lines += [_piece_line(subtask_id, call, p) for p in pieces[shown.written : count]]
                shown.written = count
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
        assert self.answers is not None
        lines = []
        for subtask_id in self._watch_list():
            found = self.answers.answer(subtask_id)
            if found is None:
                self._shown.pop(subtask_id, None)
                continue
            call, pieces = found
            shown = self._shown[subtask_id] = _Shown(call, pieces)
            shown.written = len(pieces)
            lines += [_piece_line(subtask_id, call, p) for p in pieces[: shown.written]]
        text = "\n".join(lines) + "\n" if lines else ""
        fresh = self.path.with_suffix(".tmp")
        fresh.write_text(text, encoding="utf-8")
        os.replace(fresh, self.path)
        self._size = len(text)


def _piece_line(subtask_id: str, call: int, piece: Delta) -> str:
    item = {"s": subtask_id, "c": call, "k": piece.kind, "i": piece.index, "t": piece.text}
    return json.dumps(item)


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
        if "done" in item:
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
