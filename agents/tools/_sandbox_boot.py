"""Bootstrap run inside the sandbox child, before the untrusted code.

`agents.tools.sandbox.Sandbox` starts ``python -I -u _sandbox_boot.py CONFIG_JSON`` (under
``unshare`` where it can). In order, this file:

1. loads the audit hook module, `_sandbox_hook.py` beside it, by its path (``-I`` leaves
   this dir off `sys.path`): at import time, before the jail, which does not hold the project;
   it is not added to `sys.path` or `sys.modules`, so the code run later does not see it;
2. reads the code to run and opens the report file, both outside the working dir;
3. builds the jail when asked: a private tmpfs root holding read-only bind mounts of the
   system library trees and the Python installation, the working dir bound read-write (noexec),
   the null/random devices, then ``chroot`` into it (needs the new mount namespace);
4. sets the resource limits, drops every capability, switches to the run's own uid when
   asked, and sets ``no_new_privs``;
5. installs the audit hook (`_sandbox_hook.install_audit_hook`), which refuses file access
   outside the working dir, processes, sockets, ctypes and a few ways to tamper with the
   hook; and
6. runs the code as ``__main__``.

Only the standard library and `_sandbox_hook` are imported; this file must not import the
project.
"""

from __future__ import annotations

import ctypes  # imported before the hook: its import calls dlopen, which the hook refuses
import importlib.util
import json
import linecache
import os
import resource
import sys
import traceback
import types
from collections.abc import Callable

__all__ = ["main"]

_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 1, 2, 4, 8
_MS_REMOUNT, _MS_NOATIME, _MS_NODIRATIME = 32, 1024, 2048
_MS_BIND, _MS_REC, _MS_PRIVATE, _MS_RELATIME = 4096, 16384, 1 << 18, 1 << 21
_PR_SET_NO_NEW_PRIVS, _PR_CAPBSET_DROP, _PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 38, 24, 47, 4
_CAP_VERSION_3 = 0x20080522
_SYSTEM_TREES = ("/usr", "/lib", "/lib64", "/lib32", "/libx32", "/bin", "/sbin", "/etc/ld.so.cache")
_DEVICES = ("/dev/null", "/dev/zero", "/dev/random", "/dev/urandom")
_SYSTEM_READ = (
    *("/usr/lib", "/usr/lib64", "/usr/share", "/usr/local/lib", "/lib", "/lib64"),
    *("/sys/fs/cgroup", "/sys/devices/system/cpu"),  # CPU quota probes (pandas' read_csv)
)
_CODE_NAME = "<analysis>"


def _load_hook() -> types.ModuleType:
    """`_sandbox_hook.py`, the file beside this one, loaded by its path (see step 1 above)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_sandbox_hook.py")
    spec = importlib.util.spec_from_file_location("_sandbox_hook", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"sandbox: cannot load the audit hook from {path!r}", path=path)
    module = importlib.util.module_from_spec(spec)
    saved, sys.dont_write_bytecode = sys.dont_write_bytecode, True  # no .pyc into the project
    try:
        spec.loader.exec_module(module)
    finally:
        sys.dont_write_bytecode = saved
    return module


_hook = _load_hook()  # now, while the project is still in reach: main() chroots


# --- setting up the child -----------------------------------------------------------------


def _mount(libc, source: str | None, target: str, fstype: str | None, flags: int,
           data: str | None = None) -> None:  # fmt: skip
    def enc(text: str | None) -> bytes | None:
        return None if text is None else os.fsencode(text)

    if libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)):
        err = ctypes.get_errno()
        raise OSError(err, f"mount {source} on {target}: {os.strerror(err)}")


def _locked_flags(path: str) -> int:
    """The mount flags of `path` a remount must keep (in a user namespace it may not drop them)."""
    have = os.statvfs(path).f_flag
    flags = have & (_MS_RDONLY | _MS_NOSUID | _MS_NODEV | _MS_NOEXEC | _MS_NOATIME)
    flags |= _MS_NODIRATIME if have & os.ST_NODIRATIME else 0
    return flags | (_MS_RELATIME if have & os.ST_RELATIME else 0)


def _bind(libc, source: str, new_root: str, flags: int) -> None:
    """Bind `source` at the same path under `new_root`, then remount it with `flags`."""
    target = new_root + source
    if os.path.islink(source) and os.path.dirname(source) == "/":
        os.symlink(os.readlink(source), target)  # merged /usr: /lib -> usr/lib and the like
        return
    real = os.path.realpath(source)
    if os.path.isdir(real):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "ab"):
            pass
    _mount(libc, real, target, None, _MS_BIND | _MS_REC)
    _mount(libc, None, target, None, _MS_BIND | _MS_REMOUNT | flags | _locked_flags(real))


def _inside(path: str, roots: list[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


def _python_trees() -> list[str]:
    """The Python installation as named here: the prefixes and the `sys.path` folders in them.

    The names may run through symlinks (a venv reached by a linked folder, a linked
    site-packages): the jail binds their real paths and links these names to them, and the
    hook allows the real paths, so both sides agree on what is inside (see `_enter_jail`).
    """
    prefixes = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix]
    entries = [os.path.abspath(entry) for entry in sys.path if entry and os.path.isdir(entry)]
    return sorted({*prefixes, *(entry for entry in entries if _inside(entry, prefixes))})


def _link_names(new_root: str, names: list[str], bound: list[str]) -> None:
    """In the jail, make each of `names` whose real path differs a symlink to the real path.

    A name inside a bound tree or under a link made here already leads where it should.
    """
    made: list[str] = []
    for name in sorted(set(names)):
        real = os.path.realpath(name)
        if real == name or _inside(name, bound) or _inside(name, made):
            continue
        os.makedirs(new_root + os.path.dirname(name), exist_ok=True)  # in the tmpfs only
        os.symlink(real, new_root + name)
        made.append(name)


def _enter_jail(new_root: str, work: str) -> None:
    """Make `new_root` a read-only view of what Python needs plus `work`, and chroot into it.

    The Python trees are bound at their real paths, and the names this process knows them
    by (`sys.prefix`, `sys.path`, perhaps through symlinks) become symlinks to those, so a
    path resolves inside the jail to the same real path the hook allows (`_read_roots`).
    """
    libc = ctypes.CDLL(None, use_errno=True)
    _mount(libc, None, "/", None, _MS_REC | _MS_PRIVATE)
    _mount(libc, "tmpfs", new_root, "tmpfs", _MS_NOSUID | _MS_NODEV, "size=1m,mode=0755")
    done: list[str] = []
    trees = [tree for tree in _python_trees() if os.path.exists(tree)]
    for source in [*_SYSTEM_TREES, *sorted({os.path.realpath(tree) for tree in trees})]:
        if not os.path.lexists(source) or _inside(source, done):
            continue
        _bind(libc, source, new_root, _MS_RDONLY | _MS_NOSUID | _MS_NODEV)
        done.append(source)
    _link_names(new_root, trees, done)
    for device in _DEVICES:
        if os.path.exists(device):
            _bind(libc, device, new_root, _MS_NOSUID | _MS_NOEXEC)
    _bind(libc, work, new_root, _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
    _mount(libc, None, new_root, None, _MS_REMOUNT | _MS_RDONLY | _MS_NOSUID | _MS_NODEV)
    os.chroot(new_root)


def _set_limits(limits: dict[str, int]) -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_AS, (limits["as_bytes"],) * 2)
    resource.setrlimit(resource.RLIMIT_CPU, (limits["cpu_s"], limits["cpu_s"] + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits["fsize_bytes"],) * 2)
    resource.setrlimit(resource.RLIMIT_NOFILE, (limits["nofile"],) * 2)
    if limits.get("nproc"):
        resource.setrlimit(resource.RLIMIT_NPROC, (limits["nproc"],) * 2)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint32) for name in ("effective", "permitted", "inheritable")]


def _drop_privileges(libc, uid: int | None) -> None:
    """Give up every capability, switch to `uid` when given, and set ``no_new_privs``.

    Without capabilities even a root (or user-namespace root) child cannot mount, chroot out,
    make device nodes or override file permissions.
    """
    for cap in range(64):  # the bounding set first: dropping from it needs CAP_SETPCAP
        if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            break  # past the last capability (or not allowed: then there is none to drop)
    if uid is not None:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    if libc.capset(ctypes.byref(_CapHeader(_CAP_VERSION_3, 0)), (_CapData * 2)()) != 0:
        raise OSError(ctypes.get_errno(), "capset: cannot drop the capabilities")
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl: cannot set no_new_privs")


def _read_roots() -> tuple[str, ...]:
    roots = [*_python_trees(), *_SYSTEM_READ, *_DEVICES]
    return tuple(sorted({os.path.realpath(root) for root in roots}))


def _run_code(code: str, report_fd: int, hook: Callable[[], None]) -> int:
    """Run `code` as ``__main__`` under the hook; print its traceback without our frames."""
    compiled = compile(code, _CODE_NAME, "exec")
    linecache.cache[_CODE_NAME] = (len(code), None, code.splitlines(True), _CODE_NAME)
    module = types.ModuleType("__main__")
    sys.modules["__main__"] = module
    hook()
    try:
        exec(compiled, module.__dict__)
    except SystemExit:
        raise
    except BaseException as exc:  # noqa: BLE001 - reported like the interpreter would
        if isinstance(exc, MemoryError):
            os.write(report_fd, b"memory\tMemoryError\n")
        report = traceback.TracebackException(type(exc), exc, exc.__traceback__.tb_next)
        ours = (__file__, _hook.__file__)  # the boot's and the hook's frames
        frames = [frame for frame in report.stack if frame.filename not in ours]
        report.stack = traceback.StackSummary.from_list(frames)
        print("".join(report.format()), end="", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str]) -> int:
    """Set the child up as `argv[1]` (JSON) says, then run the code. Returns the exit code."""
    config = json.loads(argv[1])
    work: str = config["work"]
    with open(config["code"], encoding="utf-8") as handle:
        code = handle.read()
    report_fd = os.open(config["report"], os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
    os.umask(0o022)
    read_roots = _read_roots()
    if config["jail"]:
        _enter_jail(config["jail"], work)
    os.chdir(work)
    _set_limits(config["limits"])
    _drop_privileges(ctypes.CDLL(None, use_errno=True), config["uid"])
    os.umask(0o077)
    return _run_code(code, report_fd, lambda: _hook.install_audit_hook(work, read_roots, report_fd))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
