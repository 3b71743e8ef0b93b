"""A run's `--out` folder: checked before anything runs, created, and held by one run at a time.

`hold_out(path)` is how `kimmy review`, `analyze`, `demo`, `swarm` and `resume` take their
output folder: a path that cannot be a folder (a file on the way, a place no folder can be
made in, one that cannot be written) is refused with one line (exit 2) before any work
starts, and a folder another run is writing into is refused the same way, naming its
process. The hold is a `fcntl.flock` on `OUT/.kimmy-out.lock`, which holds the pid and the
command: the kernel lets go of it when its process ends, however it ends, so the file a
killed run leaves behind is simply taken over. On leaving, the lock file goes, and so do the
folders `hold_out` made if nothing was written into them (bad input leaves no empty folder).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from kimmy_swarm.cli.options import fail

__all__ = ["LOCK_NAME", "check_out", "hold_out"]

#: The lock file a run keeps in its output folder while it runs.
LOCK_NAME = ".kimmy-out.lock"


def check_out(path: Path, label: str = "--out", hint: str = "") -> None:
    """Refuse (one line, exit 2) a path that cannot be a writable folder; creates nothing.

    Args:
        path: the folder (it need not exist).
        label: how the message names it (`--out`, `run R's --out`).
        hint: what to do instead, ending the message.

    Raises:
        typer.Exit: code 2, after the line naming the path and why.
    """
    end = f"; {hint}" if hint else ""
    target = path.expanduser()
    for part in [*reversed(target.parents), target]:  # from the root down
        try:
            if not part.exists():
                break
        except OSError as exc:  # e.g. a folder on the way that may not be read
            raise fail(f"{label} {path}: {part} cannot be read ({exc.strerror}){end}") from None
        if not part.is_dir():
            what = "a file" if part.is_file() else "something else"
            raise fail(f"{label} {path}: {part} is {what}, not a folder{end}")
        if part == target and not os.access(part, os.W_OK | os.X_OK):
            raise fail(f"{label} {path}: the folder is not writable{end}")


@contextlib.contextmanager
def hold_out(path: Path, label: str = "--out", hint: str = "") -> Iterator[Path]:
    """The output folder, checked, created and locked for the block's duration (`label`
    and `hint` as for `check_out`).

    Raises:
        typer.Exit: code 2, after one line: the path cannot be a writable folder
            (`check_out`), cannot be created, or another live run holds it.
    """
    check_out(path, label, hint)
    end = f"; {hint}" if hint else ""
    target = path.expanduser()
    made = [p for p in [target, *target.parents] if not p.exists()]  # deepest first
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise fail(f"{label} {path}: the folder cannot be created ({exc.strerror}){end}") from None
    try:
        fd = _lock(target, f"{label} {path}", end)
    except BaseException:
        _remove_empty(made)
        raise
    try:
        yield target
    finally:
        _unlock(target, fd)
        _remove_empty(made)


def _lock(folder: Path, named: str, end: str) -> int:
    """Take `folder`'s lock file (a descriptor holding the flock), or refuse in one line
    (`named`: how it starts, `end`: how it ends)."""
    import fcntl

    lock = folder / LOCK_NAME
    while True:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise fail(f"{named}: the folder is not writable ({exc.strerror}){end}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 4096).decode("utf-8", "replace").split("\n", 1)
            os.close(fd)
            who = f"process {holder[0]}" if holder[0] else "another process"
            command = f": {holder[1].strip()}" if len(holder) > 1 and holder[1].strip() else ""
            raise fail(
                f"{named}: another run ({who}{command}) is writing into this folder; "
                "wait for it to end, or give another --out"
            ) from None
        if _same_file(fd, lock):
            break
        os.close(fd)  # its holder removed it as we opened it: take the one there now
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n{' '.join(sys.argv)}\n".encode())
    return fd


def _same_file(fd: int, path: Path) -> bool:
    try:
        return os.path.samestat(os.fstat(fd), os.stat(path))
    except FileNotFoundError:
        return False


def _unlock(folder: Path, fd: int) -> None:
    # removed while still held: a run waiting on this file sees it is gone and makes another
    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
        (folder / LOCK_NAME).unlink()
    os.close(fd)


def _remove_empty(made: list[Path]) -> None:
    """Remove the folders `hold_out` made (deepest first) that nothing was written into."""
    for folder in made:
        try:
            folder.rmdir()
        except OSError:  # not empty (the run wrote there), or gone: keep what is there
            return
