"""A sandbox for analysis code a model wrote (pandas over a dataset), in a separate process.

`Sandbox.run` writes the input files into a fresh working dir, starts the venv's Python
(``python -I -u``) on `_sandbox_boot.py` and returns a `SandboxResult`: output, files written,
why it stopped. Containment, layer by layer (`Sandbox.mode` says which the host allows):

- **Namespaces** (``unshare``): a network namespace of its own (a loopback that is down: no
  network), a mount and a PID namespace: when the child's Python (PID 1 there) ends, the
  kernel kills everything it started.
- **Jail** (``jail``, ``userns-jail``): the child chroots into a tmpfs holding read-only binds
  of ``/usr``, ``/lib*`` and the Python installation, the null/random devices and its working
  dir (read-write, noexec). ``/etc``, ``/home``, ``/proc``, the project, other runs: absent.
- **Uid** (``jail``, parent is root): the child runs as a fresh uid of its own, without
  capabilities, with ``no_new_privs``.
- **Resource limits**: address space, CPU seconds, file size, open files, processes/threads.
- **Wall clock and output caps** in the parent: past ``timeout_s`` or ``output_bytes`` the
  child's process group is SIGKILLed and reaped.
- **Audit hook** (`_sandbox_hook.install_audit_hook`): refuses with a PermissionError (and a
  ``violation`` in the result) file access outside the working dir (reads are also allowed in
  the Python installation and the system library/share dirs), symlinks, processes, sockets,
  ctypes, and tampering with the hook or the limits.

What it does NOT protect against: it is defence in depth on one machine, not a VM. A kernel
bug or a runtime that lets namespaces be escaped defeats it. The audit hook is a Python-level
check that native code (``_posixsubprocess`` called directly, pyarrow opening a file) does not
pass; the kernel layers are what hold then, and in the modes without a jail (``net``,
``userns-net``, ``none``) the child keeps the parent's uid and file access, so only the hook
stands there. Nor does it stop CPU or disk-bandwidth hogging within the limits, or reading
the world-readable files under ``/usr`` and the Python installation. The total written is
capped by the parent, which looks at the working dir every 50 ms (``max_total_bytes``,
``max_entries``): a run may overshoot that cap by what it writes between two looks.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kimmy_swarm.agents.tools._sandbox_process import (
    DiskWatch,
    Pump,
    child_env,
    collect_files,
    kill,
    read_report,
    remove_tree,
    wait_unreaped,
)
from kimmy_swarm.swarm.errors import ConfigError, UserError

__all__ = [
    "Sandbox",
    "SandboxInputError",
    "SandboxLimits",
    "SandboxResult",
    "SandboxUnavailableError",
    "sandbox_available",
]

_BOOT = Path(__file__).with_name("_sandbox_boot.py")
_UID_BASE = 1_500_000_000  # the run's own uid is drawn from [_UID_BASE, _UID_BASE + 2**24)
_NAMESPACES = ("--mount", "--pid", "--fork", "--kill-child")
# isolation mode -> unshare options, strongest first (see the module docstring)
_MODES: dict[str, tuple[str, ...]] = {
    "jail": ("--net", *_NAMESPACES),
    "userns-jail": ("--map-root-user", "--net", *_NAMESPACES),
    "net": ("--net",),
    "userns-net": ("--map-root-user", "--net"),
    "none": (),
}


class SandboxUnavailableError(ConfigError):
    """The sandbox cannot isolate the network (no working ``unshare``): it refuses to run."""


class SandboxInputError(UserError):
    """An input file name or value the sandbox does not accept."""


@dataclass(frozen=True, slots=True)
class SandboxLimits:
    """Limits of one run.

    Attributes:
        timeout_s: wall-clock limit (the CPU-time limit is a little above it).
        memory_mb: address space of the child (RLIMIT_AS); pandas + scipy need ~800.
        output_bytes: cap on stdout and on stderr, each; past it the child is killed.
        max_files_bytes: largest file the child may write (RLIMIT_FSIZE); also the total of
            the files returned.
        max_total_bytes: the most the child may write in all (beyond its input files); past
            it the child is killed (``killed="disk"``).
        max_entries: the most files and dirs in the working dir (past it: killed, "disk").
        max_processes: processes and threads of the run's uid (RLIMIT_NPROC; mode ``jail``).
        max_open_files: RLIMIT_NOFILE.
    """

    timeout_s: float = 20.0
    memory_mb: int = 1024
    output_bytes: int = 64_000
    max_files_bytes: int = 8_000_000
    max_total_bytes: int = 64_000_000
    max_entries: int = 10_000
    max_processes: int = 8
    max_open_files: int = 256

    def __post_init__(self) -> None:
        for name in ("timeout_s", "memory_mb", "output_bytes", "max_files_bytes",
                     "max_total_bytes", "max_entries", "max_processes",
                     "max_open_files"):  # fmt: skip
            value = getattr(self, name)
            kinds = int | float if name == "timeout_s" else int
            if isinstance(value, bool) or not isinstance(value, kinds) or value <= 0:
                raise ConfigError(
                    f"SandboxLimits.{name} must be a positive "
                    f"{'number' if name == 'timeout_s' else 'int'}, got {value!r}"
                )


@dataclass(frozen=True, slots=True)
class SandboxResult:
    """What one run did.

    Attributes:
        ok: the code exited 0 within the limits, and did not try to add an audit hook
            (``sys.addaudithook``: refused, and fatal to the run even if the code caught it).
        returncode: exit status (negative: killed by that signal); None if the parent killed it.
        stdout: decoded (errors="replace"), at most ``output_bytes`` bytes of it.
        stderr: the same for stderr.
        truncated: some output was cut at ``output_bytes``.
        killed: None, "timeout" (wall clock or CPU limit), "memory" (MemoryError), "output"
            or "disk" (``max_total_bytes`` or ``max_entries`` passed).
        violation: the first access refused, e.g. ``"open('/etc/passwd') outside the sandbox"``.
        duration_s: wall-clock seconds the child ran.
        files: files written or changed in the working dir, by relative path (hidden top-level
            entries such as ``.tmp`` and unchanged inputs left out).
        files_skipped: files left out of `files` for lack of room (``max_files_bytes``, count).
    """

    ok: bool
    returncode: int | None
    stdout: str
    stderr: str
    truncated: bool
    killed: str | None
    violation: str | None
    duration_s: float
    files: dict[str, bytes] = field(default_factory=dict)
    files_skipped: tuple[str, ...] = ()


@functools.cache
def _probe(mode: str) -> str:
    """Why isolation `mode` does not work here ("" when it does)."""
    if not _MODES[mode]:
        return ""
    if mode in ("jail", "net") and os.geteuid() != 0:
        return "needs root"
    unshare = shutil.which("unshare")
    if unshare is None:
        return "the `unshare` command (util-linux) is not installed"
    try:
        done = subprocess.run(
            [unshare, *_MODES[mode], "--", "/bin/true"], capture_output=True, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    return "" if done.returncode == 0 else done.stderr.decode(errors="replace").strip() or "failed"


def _best_mode() -> tuple[str, str]:
    """The strongest isolation mode this host allows, and why the network ones do not work."""
    whys = []
    for mode in ("jail", "userns-jail", "net", "userns-net"):
        why = _probe(mode)
        if not why:
            return mode, ""
        whys.append(f"{mode}: {why}")
    return "none", "unshare cannot make a network namespace here (" + "; ".join(whys) + ")"


def sandbox_available() -> tuple[bool, str]:
    """Whether a network-isolated sandbox can run here, and if not, why not."""
    mode, why = _best_mode()
    return mode != "none", why


def _check_name(name: object) -> str:
    """`name` if it is a relative path that stays in the working dir, else SandboxInputError."""
    allowed = "a relative path such as 'data.csv' or 'in/data.csv' (no '..', not absolute)"
    if not isinstance(name, str) or not name or "\0" in name or "\\" in name:
        raise SandboxInputError(f"bad sandbox input file name {name!r}: use {allowed}")
    parts = name.split("/")
    if name.startswith("/") or any(part in ("", ".", "..") for part in parts):
        raise SandboxInputError(f"bad sandbox input file name {name!r}: use {allowed}")
    if parts[0].startswith("."):
        raise SandboxInputError(
            f"bad sandbox input file name {name!r}: top-level names starting with '.' are "
            f"reserved for the sandbox; use {allowed}"
        )
    return name


def _content(name: str, value: bytes | str | Path) -> bytes:
    if isinstance(value, bytes | bytearray):
        return bytes(value)
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, Path):
        return value.read_bytes()
    raise SandboxInputError(
        f"sandbox input {name!r} has a value of type {type(value).__name__}: "
        f"use bytes, str (text) or pathlib.Path (a file to copy)"
    )


class Sandbox:
    """Runs analysis code in a contained child process (see the module docstring).

    One instance may run many times, also concurrently: each run has its own dir, uid and
    namespaces.

    Args:
        limits: the limits of each run.
        python: the interpreter to run; by default the one running this (the venv's, where
            pandas, numpy, scipy, statsmodels and matplotlib are installed).
        require_network_isolation: refuse to work (SandboxUnavailableError) when ``unshare``
            cannot make a network namespace; with False, run with the audit hook and limits
            only (no namespaces, no jail, the parent's uid).
        isolation: "auto" (the strongest that works) or a mode: "jail", "userns-jail",
            "net", "userns-net" or "none"; the chosen one is `mode`.

    Raises:
        SandboxUnavailableError: no network isolation here and it is required.
        ConfigError: `python` is not an executable file, or `isolation` is unknown.
    """

    def __init__(
        self,
        limits: SandboxLimits = SandboxLimits(),
        *,
        python: str | None = None,
        require_network_isolation: bool = True,
        isolation: str = "auto",
    ) -> None:
        if not isinstance(limits, SandboxLimits):
            raise ConfigError(f"Sandbox limits must be SandboxLimits, got {limits!r}")
        self.limits = limits
        self.python = python or sys.executable
        if not (os.path.isfile(self.python) and os.access(self.python, os.X_OK)):
            raise ConfigError(f"sandbox python {self.python!r} is not an executable file")
        if isolation == "auto":
            self.mode, why = _best_mode()
        elif isolation in _MODES:
            self.mode, why = isolation, _probe(isolation)
            if why:
                raise SandboxUnavailableError(f"sandbox isolation {isolation!r} fails here: {why}")
        else:
            raise ConfigError(f"unknown sandbox isolation {isolation!r}; use 'auto' or one of "
                              f"{', '.join(map(repr, _MODES))}")  # fmt: skip
        if self.mode == "none" and require_network_isolation:
            raise SandboxUnavailableError(
                f"the sandbox cannot isolate the network ({why or 'isolation=none'}). Run as "
                f"root or allow user namespaces, or pass require_network_isolation=False to "
                f"rely on the audit hook and limits alone"
            )

    def run(
        self,
        code: str,
        *,
        files: Mapping[str, bytes | str | Path] = {},
        stdin: str | None = None,
    ) -> SandboxResult:
        """Run `code` in a fresh working dir holding `files`, and report what happened.

        Args:
            code: Python source, run as ``__main__`` with the working dir as cwd.
            files: input files by relative name: bytes, str (text, written as UTF-8) or a
                `Path` on this machine to copy in.
            stdin: text fed to the code's stdin (none: stdin is /dev/null).

        Raises:
            SandboxInputError: a bad file name (absolute, '..', hidden at top level) or value.
        """
        if not isinstance(code, str) or not (stdin is None or isinstance(stdin, str)):
            raise SandboxInputError(
                f"sandbox code and stdin must be str, got {type(code).__name__} and "
                f"{type(stdin).__name__}"
            )
        inputs = {_check_name(name): _content(name, value) for name, value in files.items()}
        root = Path(tempfile.mkdtemp(prefix="kimmy-sandbox-")).resolve()
        try:
            return self._run_in(root, code, inputs, stdin)
        finally:
            remove_tree(root)

    async def arun(self, code: str, **kw: Any) -> SandboxResult:
        """`run` in a worker thread, so the event loop keeps going (the run is not cancellable
        midway: a cancelled caller stops waiting, the run ends at its own limits)."""
        return await asyncio.to_thread(self.run, code, **kw)

    def _prepare(self, root: Path, code: str, inputs: Mapping[str, bytes]) -> list[str]:
        """Write the working dir, code and report file; return the command line."""
        work = root / "work"
        for folder in (work, work / ".tmp", work / ".matplotlib"):
            folder.mkdir(mode=0o700)
        for name, data in inputs.items():
            (work / name).parent.mkdir(parents=True, exist_ok=True)
            (work / name).write_bytes(data)
        (root / "code.py").write_text(code, encoding="utf-8")
        (root / "report").touch(mode=0o600)
        jail = root / "jail" if self.mode.endswith("jail") else None
        if jail is not None:
            jail.mkdir()
        uid = _UID_BASE + secrets.randbelow(2**24) if self.mode == "jail" else None
        if uid is not None:
            for top, dirs, names in os.walk(work):
                for name in [".", *dirs, *names]:
                    os.chown(os.path.join(top, name), uid, uid, follow_symlinks=False)
        limits = self.limits
        config = {
            "work": str(work),
            "code": str(root / "code.py"),
            "report": str(root / "report"),
            "jail": None if jail is None else str(jail),
            "uid": uid,
            "limits": {
                "as_bytes": limits.memory_mb * 2**20,
                "cpu_s": int(limits.timeout_s) + 2,
                "fsize_bytes": limits.max_files_bytes,
                "nofile": limits.max_open_files,
                "nproc": limits.max_processes if uid is not None else 0,
            },
        }
        unshare = shutil.which("unshare") or "unshare"
        prefix = [unshare, *_MODES[self.mode], "--"] if _MODES[self.mode] else []
        return [*prefix, self.python, "-I", "-u", str(_BOOT), json.dumps(config)]

    def _run_in(
        self, root: Path, code: str, inputs: Mapping[str, bytes], stdin: str | None
    ) -> SandboxResult:
        command = self._prepare(root, code, inputs)
        work = root / "work"
        start = time.monotonic()
        deadline = start + self.limits.timeout_s
        proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=work,
            env=child_env(work),
            start_new_session=True,
        )
        pump = Pump(proc, (stdin or "").encode("utf-8"), self.limits.output_bytes)
        watch = DiskWatch(
            work, max_bytes=self.limits.max_total_bytes, max_entries=self.limits.max_entries,
            base_bytes=sum(len(data) for data in inputs.values()),
        )  # fmt: skip
        killed: str | None = "timeout"  # until the child is known to have ended in time
        try:
            killed = pump.run(deadline, watch)
            if killed is None and not wait_unreaped(proc, deadline, watch):
                killed = "disk" if watch.tripped else "timeout"
        finally:
            kill(proc, forked="--fork" in _MODES[self.mode])  # and what it left in its group
            for stream in (proc.stdin, proc.stdout, proc.stderr):
                if stream is not None and not stream.closed:
                    stream.close()
        duration = time.monotonic() - start
        violation, memory, tampered = read_report(root / "report")
        returncode = None if killed else proc.returncode
        if killed is None and watch.over(now=True):  # wrote it all between two looks
            killed = "disk"
        if killed is None and memory:
            killed = "memory"
        elif killed is None and returncode in (-signal.SIGKILL, -signal.SIGXCPU):
            killed = "timeout"  # the CPU-time limit
        files, skipped = collect_files(work, inputs, self.limits.max_files_bytes)
        out, err = (bytes(buffer) for buffer in pump.out.values())
        return SandboxResult(
            ok=killed is None and returncode == 0 and not tampered,
            returncode=returncode,
            stdout=out.decode("utf-8", errors="replace"),
            stderr=err.decode("utf-8", errors="replace"),
            truncated=pump.truncated,
            killed=killed,
            violation=violation,
            duration_s=duration,
            files=files,
            files_skipped=skipped,
        )
