"""The audit hook that confines the code run in the sandbox child (PEP 578).

`_sandbox_boot` loads this file by its path (``python -I`` leaves their dir off `sys.path`)
when it starts, before it chroots into the jail, which does not hold the project, and it
installs the hook (`install_audit_hook`) just before the untrusted code runs. The hook refuses
file access outside the working dir, processes, sockets, ctypes and a few ways to tamper with
the hook or the limits, records the first denials on the report fd and raises PermissionError.

It is a Python-level guard (PEP 578 says as much): code that reaches C without an audited
call (``_posixsubprocess``, native libraries such as pyarrow opening files) passes it. The
kernel layers (namespaces, chroot jail, uid, no capabilities, rlimits) are what hold then.
Every value the hook uses is captured as a positional default when it is defined (an
immutable tuple), so monkeypatching ``os``, ``builtins`` or this module from the checked code
does not change it.

Only the standard library is imported; this file must not import the project.
"""

from __future__ import annotations

import os
import pathlib
import posix
import sys

__all__ = ["HookRefusedError", "hook_context", "install_audit_hook", "resolve_path"]


class HookRefusedError(BaseException):
    """A refused ``sys.addaudithook``. CPython drops any `Exception` an audit hook raises for
    that event and returns as if the new hook were installed, so this one is not an
    `Exception`: the call fails where it is made, and the report says ``tamper``."""


def resolve_path(path, _lstat=posix.lstat, _readlink=posix.readlink, _getcwd=posix.getcwd,
                 _OSError=OSError):  # fmt: skip
    """Absolute, symlink-free form of `path` (a str), like `os.path.realpath`.

    Built from C primitives only: the hook cannot trust `os.path`, which checked code can
    monkeypatch. Components that do not exist are kept as written.
    """
    if not path.startswith("/"):
        path = _getcwd() + "/" + path
    pending = path.split("/")
    pending.reverse()
    done: list[str] = []
    hops = 0
    while pending:
        part = pending.pop()
        if part in ("", "."):
            continue
        if part == "..":
            if done:
                done.pop()
            continue
        candidate = "/" + "/".join([*done, part])
        try:
            mode = _lstat(candidate).st_mode
        except _OSError:
            done.append(part)
            continue
        if mode & 0o170000 != 0o120000:
            done.append(part)
            continue
        hops += 1
        if hops > 40:
            raise _OSError(40, "too many levels of symbolic links", path)
        target = _readlink(candidate)
        if target.startswith("/"):
            done.clear()
        parts = target.split("/")
        parts.reverse()
        pending.extend(parts)
    return "/" + "/".join(done)


def _deny(message, ctx, kind="violation", _write=posix.write, _fstat=posix.fstat,
          _OSError=OSError, _PermissionError=PermissionError,
          _Refused=HookRefusedError):  # fmt: skip
    """Record the first lines of denials on the report fd, then raise PermissionError
    (`HookRefusedError` for kind ``tamper``, which also has room of its own in the report:
    a flood of other denials cannot crowd it out, and the parent fails the run on it)."""
    line = (kind + "\t" + message.replace("\n", " ") + "\n").encode("utf-8", "replace")
    try:
        if _fstat(ctx[3]).st_size < (131072 if kind == "tamper" else 65536):
            _write(ctx[3], line)
    except _OSError:  # the code closed the report fd: the denial still stands
        message += " (unreported)"
    if kind == "tamper":
        raise _Refused("sandbox: " + message)
    raise _PermissionError(13, "sandbox: " + message)


def _path_text(obj, op, ctx, _type=type, _issubclass=issubclass, _str=str, _bytes=bytes,
               _int=int, _fspath=posix.fspath, _pure=pathlib.PurePosixPath,
               _concrete=pathlib.PosixPath, _full=slice(None), _repr=repr,
               _deny=_deny):  # fmt: skip
    """`obj` as an exact str; None for a file descriptor (already opened, so already checked).

    Types are tested on ``type(obj)``, which the object cannot fake (``isinstance`` believes a
    ``__class__`` property). Path-like objects other than pathlib's own are refused: their
    ``__fspath__`` could answer the hook differently from the call it guards.
    """
    kind = _type(obj)
    if kind is _pure or kind is _concrete:
        obj = _fspath(obj)
        kind = _type(obj)
    if obj is None:
        return "."
    if _issubclass(kind, _str):
        return _str.__getitem__(obj, _full)  # an exact str copy of a str subclass
    if _issubclass(kind, _bytes):
        return _bytes.__getitem__(obj, _full).decode("utf-8", "surrogateescape")
    if _issubclass(kind, _int):
        return None
    return _deny(op + ": path objects of type " + _repr(kind.__name__) + " are not allowed", ctx)


def _climbs(path):
    """True when a relative `path` climbs above the directory it starts from."""
    depth = 0
    for part in path.split("/"):
        if part == "..":
            depth -= 1
            if depth < 0:
                return True
        elif part not in ("", "."):
            depth += 1
    return False


def _check_path(op, obj, access, ctx, _text=_path_text, _climbs=_climbs,
                _resolve=resolve_path, _deny=_deny, _lstat=posix.lstat, _OSError=OSError,
                _repr=repr, _readlink=posix.readlink, _int=int):  # fmt: skip
    """Allow `access` ("read", "list", "write" or "enter": chdir) to `obj`, or deny it.

    ctx: see `install_audit_hook`; the roots in it end in "/".
    """
    text = _text(obj, op, ctx)
    if text is None and access == "write":  # chmod & co. on an fd: check the file behind it
        try:
            text = _readlink("/proc/self/fd/" + _int.__repr__(obj))
        except _OSError:  # no /proc (the jail: the kernel guards there) or a bad fd
            return
        if not text.startswith("/"):  # a pipe or socket
            return
    if text is None:
        return
    shown = op + "(" + _repr(text) + ")"
    if not text.startswith("/") and access != "enter" and _climbs(text):
        _deny(shown + ": relative paths may not climb out of the current directory", ctx)
    real = _resolve(text) + "/"
    if real.startswith(ctx[1]) or real.startswith(ctx[4]):
        return
    if access == "list" and real.startswith(ctx[6]):
        return
    if access == "read" and real.startswith(ctx[2]):
        try:
            is_dir = _lstat(real).st_mode & 0o170000 == 0o040000
        except _OSError:
            is_dir = False
        if not is_dir:  # a dir fd from outside could serve as dir_fd of a relative open
            return
    _deny(shown + (" for writing" if access == "write" else "") + " outside the sandbox", ctx)


# event -> (access, indices of path arguments, indices of dir_fd arguments). Most shutil and
# tempfile events need no rule: the os calls they make are audited themselves.
_PATH_RULES = (
    ("os.listdir", "list", (0,), ()),
    ("os.scandir", "list", (0,), ()),
    ("os.walk", "list", (0,), ()),
    ("os.chdir", "enter", (0,), ()),
    ("os.mkdir", "write", (0,), (2,)),
    ("os.rmdir", "write", (0,), (1,)),
    ("os.remove", "write", (0,), (1,)),
    ("os.chmod", "write", (0,), (2,)),
    ("os.chown", "write", (0,), (3,)),
    ("os.utime", "write", (0,), (3,)),
    ("os.truncate", "write", (0,), ()),
    ("os.setxattr", "write", (0,), ()),
    ("os.removexattr", "write", (0,), ()),
    ("os.rename", "write", (0, 1), (2, 3)),
    ("os.link", "write", (0, 1), (2, 3)),
    ("sqlite3.connect", "write", (0,), ()),
    ("shutil.rmtree", "write", (0,), (1,)),  # it starts with an os.lstat, which is not audited
    ("shutil.move", "write", (0, 1), ()),
)


def _names(prefix, names):
    return frozenset(prefix + name for name in names.split())


# (events, message) pairs: these are always refused
_DENIED = (
    (_names("", "subprocess.Popen os.system os.exec os.posix_spawn os.spawn os.fork os.forkpty"
                " os.startfile webbrowser.open"), "subprocess: {} is not allowed"),
    (_names("socket.", "__new__ bind connect getaddrinfo gethostbyaddr gethostbyname"
                       " gethostname getnameinfo getservbyname getservbyport sendmsg sendto"
                       " sethostname")
     | _names("", "http.client.connect urllib.Request ftplib.connect smtplib.connect"
                  " poplib.connect imaplib.open nntplib.connect telnetlib.Telnet.open"),
     "network: {} is not allowed (no network in the sandbox)"),
    (_names("ctypes.", "addressof call_function cdata cdata/buffer create_string_buffer"
                       " create_unicode_buffer dlopen dlsym dlsym/handle get_errno"
                       " get_last_error set_errno set_exception set_last_error seh_exception"
                       " string_at wstring_at PyObj_FromPtr"), "ctypes: {} is not allowed"),
    (_names("", "os.symlink"), "{}: symlinks are not allowed in the sandbox"),
    (_names("", "cpython.PyInterpreterState_New"), "{}: subinterpreters are not allowed"),
    (_names("resource.", "setrlimit prlimit"), "limits: {} is not allowed"),
    (_names("gc.", "get_referents get_referrers"), "introspection: {} is not allowed"),
)  # fmt: skip
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
_EVENTS = frozenset(
    {"open", "os.kill", "os.killpg", "object.__setattr__", "object.__delattr__"}
    | {"sys.addaudithook"}
    | {rule[0] for rule in _PATH_RULES}
).union(*(events for events, _ in _DENIED))


def _on_path_event(event, args, ctx, _rules=_PATH_RULES, _check=_check_path, _text=_path_text,
                   _deny=_deny, _type=type, _int=int, _len=len):  # fmt: skip
    """Check the path arguments of a file-system event (see `_PATH_RULES`).

    With a dir_fd the path must be a plain name: dir fds can only be had for directories in
    the working dir, and a plain name cannot climb out of one.
    """
    for name, access, paths, dirfds in _rules:
        if name != event:
            continue
        for index in dirfds:
            fd = args[index] if index < _len(args) else None
            if _type(fd) is not _int or fd < 0:
                continue
            for path_index in paths:
                text = _text(args[path_index], event, ctx)
                if text is None or "/" in text or text in ("", ".", ".."):
                    _deny(event + ": with dir_fd, a path must be a plain name", ctx)
        for index in paths:
            if access == "write" and args[index] == ":memory:" and event == "sqlite3.connect":
                return
            _check(event, args[index], access, ctx)
        return


def _on_event(event, args, ctx, _check=_check_path, _deny=_deny, _on_path=_on_path_event,
              _denied=_DENIED, _write_flags=_WRITE_FLAGS, _getpid=posix.getpid, _id=id,
              _repr=repr, _type=type, _FileNotFoundError=FileNotFoundError,
              _pathtypes=(pathlib.PurePath, pathlib.PurePosixPath, pathlib.Path,
                          pathlib.PosixPath)):  # fmt: skip
    """Dispatch one audited event that `_EVENTS` names: return to allow, raise to deny."""
    if event == "open":
        access = "write" if args[2] & _write_flags else "read"
        return _check("open", args[0], access, ctx)
    if event == "sys.addaudithook":
        return _deny("hook: sys.addaudithook is not allowed", ctx, "tamper")
    if event == "subprocess.Popen" and args[0] == "fc-list":
        # matplotlib asks fontconfig for fonts when it builds its font cache: "not installed"
        raise _FileNotFoundError(2, "sandbox: no fc-list", "fc-list")
    for events, message in _denied:
        if event in events:
            return _deny(message.format(event), ctx)
    if event in ("os.kill", "os.killpg"):
        if args[0] == _getpid():
            return None
        return _deny("signal: " + event + "(" + _repr(args[0]) + ") is not allowed", ctx)
    if event in ("object.__setattr__", "object.__delattr__"):
        target = args[0]
        if _id(target) in ctx[5] or (_type(target) is _type and target in _pathtypes):
            return _deny("hook: changing " + _repr(args[1]) + " of the sandbox is not allowed", ctx)
        return None
    return _on_path(event, args, ctx)


def hook_context(
    work: str, read_roots: tuple[str, ...], report_fd: int, protected: frozenset[int] = frozenset()
) -> tuple:
    """The immutable context the hook's checks take (see `install_audit_hook`)."""
    read = tuple(root.rstrip("/") + "/" for root in read_roots)
    # (work, its roots, read roots, report fd, devices open to all, protected ids, list roots)
    return (work, (work + "/",), read, report_fd, ("/dev/null/",), protected, (*read, "/usr/"))


def install_audit_hook(work: str, read_roots: tuple[str, ...], report_fd: int) -> None:
    """Install the audit hook that confines the code run after it (for good: hooks stay).

    Args:
        work: the working dir (a real path): the only place it may write, list or enter.
        read_roots: real paths it may also read (the Python installation, system libraries);
            it may list these and ``/usr``.
        report_fd: where denials are recorded (``violation<TAB>message`` lines).
    """

    def hook(event, args, _ctx=None, _events=_EVENTS, _on=_on_event):
        if event in _events:
            _on(event, args, _ctx)

    checks = (hook, resolve_path, _deny, _path_text, _climbs, _check_path, _on_path_event)
    protected = frozenset(map(id, (*checks, _on_event, HookRefusedError)))
    hook.__defaults__ = (hook_context(work, read_roots, report_fd, protected), _EVENTS, _on_event)
    sys.addaudithook(hook)
