"""Process plumbing of `agents.tools.sandbox`: feeding and reading the child, killing and
reaping it, its environment, and collecting what it left in its working dir."""

from __future__ import annotations

import contextlib
import os
import selectors
import shutil
import signal
import stat
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "DiskWatch",
    "Pump",
    "child_env",
    "children",
    "collect_files",
    "kill",
    "read_report",
    "remove_tree",
    "wait_unreaped",
]

_PATH = "/usr/local/bin:/usr/bin:/bin"
_MAX_FILES = 1000  # files returned at most


class Pump:
    """Feeds stdin and collects stdout/stderr up to a cap, until EOF, the deadline or the cap."""

    def __init__(self, proc: subprocess.Popen[bytes], stdin: bytes, cap: int) -> None:
        self.proc, self.cap, self.pending = proc, cap, memoryview(stdin)
        assert proc.stdout is not None and proc.stderr is not None
        self.out = {proc.stdout.fileno(): bytearray(), proc.stderr.fileno(): bytearray()}
        self.truncated = False

    def run(self, deadline: float, watch: DiskWatch | None = None) -> str | None:
        """Pump until both outputs end; returns "timeout", "output", "disk" (`watch` found
        too much written) or None."""
        with selectors.DefaultSelector() as sel:
            for fd in self.out:
                sel.register(fd, selectors.EVENT_READ)
            if self.proc.stdin is not None:
                os.set_blocking(self.proc.stdin.fileno(), False)
                sel.register(self.proc.stdin.fileno(), selectors.EVENT_WRITE)
            while len(sel.get_map()) > 0:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return "timeout"
                if watch is not None and watch.over():
                    return "disk"
                wait = remaining if watch is None else min(remaining, watch.every_s)
                for key, _ in sel.select(wait):
                    if key.fd in self.out:
                        self._read(sel, key.fd)
                    else:
                        self._write(sel, key.fd)
                if self.truncated:
                    return "output"
        return None

    def _read(self, sel: selectors.BaseSelector, fd: int) -> None:
        chunk = os.read(fd, 65536)
        if not chunk:
            sel.unregister(fd)
            return
        buffer = self.out[fd]
        room = self.cap - len(buffer)
        buffer += chunk[:room]
        self.truncated = self.truncated or len(chunk) > room

    def _write(self, sel: selectors.BaseSelector, fd: int) -> None:
        try:
            written = os.write(fd, self.pending[:65536])
        except BrokenPipeError:
            written = len(self.pending)
        self.pending = self.pending[written:]
        if not self.pending:
            sel.unregister(fd)
            assert self.proc.stdin is not None
            self.proc.stdin.close()


class DiskWatch:
    """What the child has written in its working dir, looked at every `every_s` seconds: too
    much is more than `max_bytes` in all (beyond the inputs' own `base_bytes`) or more than
    `max_entries` files and dirs. The per-file cap is the kernel's (RLIMIT_FSIZE); this one
    is the parent's, so a run may overshoot it by what the child writes between two looks."""

    def __init__(
        self, work: Path, *, max_bytes: int, base_bytes: int, max_entries: int,
        every_s: float = 0.05,
    ) -> None:  # fmt: skip
        self.work, self.max_bytes, self.base_bytes = work, max_bytes, base_bytes
        self.max_entries, self.every_s = max_entries, every_s
        self._next = 0.0
        #: A look found too much written.
        self.tripped = False

    def used(self) -> tuple[int, int]:
        """(bytes of the regular files under `work`, entries under it), links not followed."""
        size = entries = 0
        for top, dirs, names in os.walk(self.work):
            entries += len(dirs) + len(names)
            for name in names:
                with contextlib.suppress(OSError):  # removed meanwhile
                    info = os.lstat(os.path.join(top, name))
                    if stat.S_ISREG(info.st_mode):
                        size += info.st_size
            if entries > self.max_entries:
                break
        return size, entries

    def over(self, *, now: bool = False) -> bool:
        """Whether too much is written (looked at once per `every_s`, or `now`; between two
        looks, what the last one found)."""
        moment = time.monotonic()
        if self.tripped or (moment < self._next and not now):
            return self.tripped
        self._next = moment + self.every_s
        size, entries = self.used()
        self.tripped = size - self.base_bytes > self.max_bytes or entries > self.max_entries
        return self.tripped


def children(pid: int) -> list[int]:
    """The pids whose parent is `pid` (from /proc)."""
    found = []
    for entry in os.scandir("/proc"):
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()  # after "pid (comm)"
        except (OSError, IndexError):  # not a process, or it just ended
            continue
        if int(fields[1]) == pid:
            found.append(int(entry.name))
    return found


def kill(proc: subprocess.Popen[bytes], forked: bool) -> None:
    """SIGKILL the child's process group (it leads its own session), then reap the child.

    With ``unshare --fork`` the child is unshare and the code runs in its child, the PID
    namespace's init: that one is killed first (the kernel then kills the rest of the
    namespace) so that unshare reaps it and no zombie is left to the host's init.
    """
    if proc.returncode is None:  # not yet reaped: its pid (= the group id) is still ours
        if forked:
            for pid in children(proc.pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            wait_unreaped(proc, time.monotonic() + 2)
        with contextlib.suppress(ProcessLookupError):  # the group may be gone already
            os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def collect_files(
    work: Path, inputs: Mapping[str, bytes], budget: int
) -> tuple[dict[str, bytes], tuple[str, ...]]:
    """The regular files under `work` that are new or changed, up to `budget` bytes in all."""
    files: dict[str, bytes] = {}
    skipped: list[str] = []
    for top, dirs, names in os.walk(work):  # does not follow symlinks
        if Path(top) == work:
            dirs[:] = [name for name in dirs if not name.startswith(".")]
            names = [name for name in names if not name.startswith(".")]
        dirs.sort()
        for name in sorted(names):
            path = Path(top) / name
            rel = path.relative_to(work).as_posix()
            info = os.lstat(path)
            if not stat.S_ISREG(info.st_mode):
                continue
            if info.st_size > budget or len(files) >= _MAX_FILES:
                skipped.append(rel)
                continue
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            with os.fdopen(fd, "rb") as handle:
                data = handle.read(budget + 1)
            if inputs.get(rel) == data:
                continue
            files[rel] = data[:budget]
            budget -= len(files[rel])
    return files, tuple(skipped)


def read_report(path: Path) -> tuple[str | None, bool, bool]:
    """(first violation, whether a MemoryError ended the code, whether the code tampered
    with the audit hook) from the boot's report file."""
    violation, memory, tampered = None, False, False
    for line in path.read_bytes().decode("utf-8", errors="replace").splitlines():
        kind, _, message = line.partition("\t")
        if kind in ("violation", "tamper") and violation is None:
            violation = message
        memory = memory or kind == "memory"
        tampered = tampered or kind == "tamper"
    return violation, memory, tampered


def wait_unreaped(
    proc: subprocess.Popen[bytes], deadline: float, watch: DiskWatch | None = None
) -> bool:
    """Wait until the child exits, leaving it unreaped (its group id stays ours to kill).

    Returns False at the deadline, or once `watch` finds too much written.
    """
    delay = 0.001
    while os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
        if time.monotonic() >= deadline or (watch is not None and watch.over()):
            return False
        time.sleep(delay)
        delay = min(delay * 2, 0.05)
    return True


def remove_tree(root: Path) -> None:
    """Delete the run's dir `root`, also the dirs in it that the code made read-only."""

    def unlock(func: Any, path: str, _exc: Any) -> None:  # a dir the code made read-only
        os.chmod(os.path.dirname(path), 0o700)
        func(path)

    shutil.rmtree(root, onerror=unlock)


def child_env(work: Path) -> dict[str, str]:
    """The child's whole environment: nothing of the parent's, home and temp in `work`."""
    env = {"PATH": _PATH, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TZ": "UTC", "HOME": str(work)}
    env |= {"TMPDIR": str(work / ".tmp"), "USER": "sandbox", "LOGNAME": "sandbox"}
    env |= {"MPLBACKEND": "Agg", "MPLCONFIGDIR": str(work / ".matplotlib")}
    env["JOBLIB_MULTIPROCESSING"] = "0"  # no processes anyway; spares a warning on stderr
    threads = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS")
    return env | dict.fromkeys(threads, "1")
