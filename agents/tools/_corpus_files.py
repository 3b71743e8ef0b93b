"""Listing and opening the files of a corpus folder without leaving it (for `corpus.py`).

The walk lists files by name and checks symlinks; the read happens later. Between the two a
file or folder can be swapped for a symlink to something outside the root, so files are not
opened by path: `open_under` opens each path component relative to a file descriptor of the
root with ``O_NOFOLLOW`` (``O_DIRECTORY`` for folders), and `read_capped` reads from that
descriptor. What is read is therefore a regular file inside the root, whatever happened to
the names in between. Notes are ``(source, reason)`` pairs; `corpus.py` turns them into
`Skipped` entries.
"""

from __future__ import annotations

import errno
import os
import stat
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from kimmy_swarm.agents.tools._readers import SUPPORTED_SUFFIXES

__all__ = [
    "FileRef",
    "HardLinks",
    "open_reason",
    "open_under",
    "read_capped",
    "resolve_link",
    "walk",
]

OUTSIDE = "outside the corpus root"
FileRef = tuple[str, str]  # (path of the real file relative to the root, source shown)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: opening a FIFO named x.txt must not wait for a writer
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def resolve_link(path: Path) -> tuple[Path | None, str]:
    """The real path `path` leads to, or None and why not (a loop, a broken link)."""
    try:
        return Path(os.path.realpath(path, strict=True)), ""
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return None, "symlink loop"
        if exc.errno == errno.ENOENT:
            return None, "broken symlink"
        return None, f"cannot resolve symlink: {exc.strerror or exc}"


def _supported_types() -> str:
    return ", ".join(SUPPORTED_SUFFIXES)


def _link_note(link: Path, root: Path, *, folder: bool) -> tuple[Path | None, str]:
    target, why = resolve_link(link)
    if target is None:
        return None, why
    if not target.is_relative_to(root):
        return None, OUTSIDE
    return target, "symlink to a folder inside the corpus root" if folder else ""


def walk(root: Path) -> tuple[list[FileRef], list[tuple[str, str]]]:
    """Supported files under the resolved folder `root`, sorted by source; and skip notes.

    Symlinked folders are never entered (a loop or an escape otherwise); a symlinked file is
    read through its target when that is inside the root and not read under its own name.
    """
    regular: list[FileRef] = []
    links: list[tuple[Path, str]] = []
    others: list[str] = []
    notes: list[tuple[str, str]] = []

    def on_error(exc: OSError) -> None:
        where = Path(exc.filename).relative_to(root).as_posix() if exc.filename else "."
        notes.append((where, f"cannot list folder: {exc.strerror or exc}"))

    for dirpath, dirnames, filenames in os.walk(root, onerror=on_error, followlinks=False):
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in list(dirnames):
            if (here / name).is_symlink():
                dirnames.remove(name)
                rel = (here / name).relative_to(root).as_posix()
                notes.append((rel, _link_note(here / name, root, folder=True)[1]))
        for name in filenames:
            path = here / name
            rel = path.relative_to(root).as_posix()
            if name.startswith("."):
                continue
            if path.suffix.lower() not in SUPPORTED_SUFFIXES:
                others.append(rel)
            elif path.is_symlink():
                links.append((path, rel))
            else:
                regular.append((rel, rel))
    real = {target: rel for target, rel in regular}
    for path, rel in links:
        target, why = _link_note(path, root, folder=False)
        if target is None:
            notes.append((rel, why))
        elif (target_rel := target.relative_to(root).as_posix()) in real:
            notes.append((rel, f"symlink to {real[target_rel]}, which is read itself"))
        else:
            regular.append((target_rel, rel))
    if not regular:  # say why an otherwise non-empty folder gave nothing
        reason = f"unsupported file type; supported: {_supported_types()}"
        notes += [(rel, reason) for rel in others]
    return sorted(regular, key=lambda ref: ref[1]), notes


def open_under(root_fd: int, rel: str) -> int:
    """A read-only descriptor of the file `rel` (a relative POSIX path without ``..``) in
    the folder open as `root_fd`, following no symlink on the way (not even the last one).

    Raises:
        OSError: a component is missing, not a folder, or a symlink (ELOOP), or `rel` is not
            a plain relative path (EINVAL).
    """
    parts = rel.split("/")
    if not rel or any(part in ("", ".", "..") for part in parts):
        raise OSError(errno.EINVAL, "not a plain relative path", rel)
    fd = root_fd
    try:
        for part in parts[:-1]:
            parent, fd = fd, os.open(part, _DIR_FLAGS, dir_fd=fd)
            if parent != root_fd:
                os.close(parent)
        found = os.open(parts[-1], _FILE_FLAGS, dir_fd=fd)
    finally:
        if fd != root_fd:
            os.close(fd)
    return found


def open_reason(exc: OSError) -> str:
    """Why `open_under` failed, for a skip note."""
    if isinstance(exc, PermissionError):
        return "permission denied"
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        return "changed into a symlink (or a file) after the folder was listed; not followed"
    return f"cannot read: {exc.strerror or exc}"


def read_capped(fd: int, room: int) -> bytes | int:
    """The content of the file open as `fd` (closed here) if it is regular and fits `room`.

    Returns:
        The bytes; or, without reading them, the size of a file over `room` bytes
        (`room` + 1 when it grew past `room` while being read); or -1 for a file that is
        not regular (a FIFO, a device, a folder).

    Raises:
        OSError: the read failed.
    """
    try:
        info = os.fstat(fd)
    except OSError:
        os.close(fd)
        raise
    if not stat.S_ISREG(info.st_mode) or info.st_size > room:
        os.close(fd)
        return info.st_size if stat.S_ISREG(info.st_mode) else -1
    with os.fdopen(fd, "rb") as handle:  # a regular file: fdopen takes it over
        data = handle.read(room + 1)
    return len(data) if len(data) > room else data


#: Why a hard-linked file of a corpus folder is not read.
HARD_LINK = (
    "a hard link ({links} names for one file, {inside} in the corpus): it may be a file outside "
    "the corpus root; not read (copy it into the folder, or allow it: "
    "CorpusLimits(allow_hard_links=True))"
)


class HardLinks:
    """Files of a corpus folder with more than one name (hard links), checked on the open file.

    A file whose names are all among the folder's walked files is read once (its other names
    noted as read under the first); one with a name elsewhere may be a file outside the root
    (`ln ~/.ssh/id_rsa corpus/x.txt`: no symlink to see) and is not read. The names inside
    are counted from the walk; a name swapped since can only lower that count, so it cannot
    make an outside file pass.
    """

    def __init__(self, root: Path, targets: Iterable[str]) -> None:
        self.inside: Counter[tuple[int, int]] = Counter()
        for target in set(targets):
            try:
                info = os.lstat(root / target)
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
                self.inside[(info.st_dev, info.st_ino)] += 1
        self.first: dict[tuple[int, int], str] = {}

    def refusal(self, fd: int, rel: str) -> str | None:
        """Why the file open as `fd` (shown as `rel`) is not read, or None to read it."""
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink < 2:
            return None
        key = (info.st_dev, info.st_ino)
        if info.st_nlink > self.inside[key]:
            return HARD_LINK.format(links=info.st_nlink, inside=self.inside[key])
        if key in self.first:
            return f"a hard link to {self.first[key]}, which is read itself"
        self.first[key] = rel
        return None
