"""Tests of the analysis sandbox's containment, layer by layer: reads, writes, network,
processes, the uid and capabilities, hook tampering, the weaker isolation modes, and the audit
hook's path checks on their own."""

from __future__ import annotations

import os
import secrets
import socket
from pathlib import Path

import pytest

from kimmy_swarm.agents.tools import _sandbox_boot as boot
from kimmy_swarm.agents.tools import _sandbox_hook as hook
from kimmy_swarm.agents.tools.sandbox import Sandbox, SandboxUnavailableError
from tests.agents.tools.conftest import new_sandbox, probe, watch


def leftover_processes(marker: str) -> list[str]:
    """Command lines of live processes that contain `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:  # not a process, or it just ended
            continue
        if marker in cmdline and entry.name != str(os.getpid()):
            found.append(cmdline)
    return found


def test_reads_outside_the_sandbox_are_refused(sandbox: Sandbox) -> None:
    body = f"""
probe("etc", lambda: open("/etc/passwd").read())
probe("climb", lambda: open("../../../../../etc/passwd").read())
probe("symlink", lambda: os.symlink("/etc", "etc_link"))
probe("via_symlink", lambda: open("etc_link/passwd").read())
probe("pathlib", lambda: pathlib.Path("/etc/hostname").read_text())
probe("listdir", lambda: os.listdir("/etc"))
probe("project", lambda: open({str(Path(__file__))!r}).read())
probe("proc", lambda: open("/proc/self/environ").read())
probe("exists", lambda: os.path.exists("/etc/passwd"))
"""
    out, result = probe(sandbox, body)
    assert result.violation == "open('/etc/passwd') outside the sandbox"
    for name in ("etc", "climb", "symlink", "pathlib", "listdir", "project", "proc"):
        assert out[name].startswith("PermissionError: [Errno 13] sandbox: "), (name, out[name])
    assert out["via_symlink"].startswith("FileNotFoundError")
    assert "root:" not in result.stdout
    if sandbox.mode.endswith("jail"):  # the kernel layer: /etc is not in the jail at all
        assert out["exists"] == "False"


def test_writes_outside_the_sandbox_are_refused(sandbox: Sandbox, tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("intact")
    body = f"""
outside = {str(tmp_path)!r}
open("inside.txt", "w").write("fine")
probe("open", lambda: open(outside + "/pwned.txt", "w").write("x"))
probe("mkdir", lambda: os.mkdir(outside + "/dir"))
probe("rename", lambda: os.rename("inside.txt", outside + "/moved.txt"))
probe("copy", lambda: shutil.copy("inside.txt", outside + "/copied.txt"))
probe("remove", lambda: os.remove(outside + "/victim.txt"))
probe("rmtree", lambda: shutil.rmtree(outside))
probe("chdir", lambda: os.chdir(outside))
probe("devnull", lambda: open(os.devnull, "w").write("ok"))
"""
    out, result = probe(sandbox, body)
    for name in ("open", "mkdir", "rename", "copy", "remove", "rmtree", "chdir"):
        assert out[name].startswith("PermissionError: [Errno 13] sandbox: "), (name, out[name])
    assert out["devnull"] == "2"
    assert result.violation == f"open('{tmp_path}/pwned.txt') for writing outside the sandbox"
    assert [p.name for p in tmp_path.iterdir()] == ["victim.txt"]
    assert victim.read_text() == "intact"
    assert result.files == {"inside.txt": b"fine"}


def test_network_is_refused_while_the_port_is_reachable_from_here(sandbox: Sandbox) -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
        body = f"""
import socket
probe("connect", lambda: socket.create_connection(("127.0.0.1", {port}), timeout=2))
probe("socket", lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM))
probe("interfaces", lambda: sorted(name for _, name in socket.if_nameindex()))
"""
        out, result = probe(sandbox, body)
    assert out["connect"].startswith("PermissionError: [Errno 13] sandbox: network")
    assert out["socket"].startswith("PermissionError: [Errno 13] sandbox: network")
    assert result.violation is not None and result.violation.startswith("network: ")
    assert out["interfaces"] == "['lo']"  # the kernel layer: a network namespace of its own


def test_processes_ctypes_and_hook_tampering_are_refused(sandbox: Sandbox) -> None:
    body = """
import ctypes, pty, resource
probe("popen", lambda: subprocess.run(["id"]))
probe("system", lambda: os.system("id"))
probe("fork", lambda: os.fork())
probe("spawn", lambda: os.posix_spawn("/bin/true", ["true"], {}))
probe("exec", lambda: os.execv("/bin/true", ["true"]))
probe("pty", lambda: pty.spawn("/bin/true"))
probe("ctypes", lambda: ctypes.CDLL("libc.so.6"))
probe("peek", lambda: ctypes.string_at(id(0), 8))
probe("rlimit", lambda: resource.setrlimit(resource.RLIMIT_AS, (-1, -1)))
probe("kill", lambda: os.kill(2, 9))
"""
    out, result = probe(sandbox, body)
    for name in ("popen", "system", "fork", "spawn", "exec", "ctypes", "peek", "rlimit",
                 "kill"):  # fmt: skip
        assert out[name].startswith("PermissionError: [Errno 13] sandbox: "), (name, out[name])
    # pty.fork catches the refused os.forkpty and falls back to openpty + fork: refused too
    # (in the jail, openpty fails first: there is no /dev/ptmx)
    assert out["pty"].startswith(("PermissionError", "OSError: out of pty devices"))
    assert result.violation == "subprocess: subprocess.Popen is not allowed"


@pytest.mark.parametrize("catch", ["Exception", "BaseException"])
def test_adding_an_audit_hook_fails_the_run(sandbox: Sandbox, catch: str) -> None:
    # CPython swallows an Exception from a hook on sys.addaudithook: the call would "work"
    code = f"""
import sys
try:
    sys.addaudithook(lambda *args: None)
except {catch} as exc:
    print(type(exc).__name__, exc)
print("went on")
"""
    result = sandbox.run(code)
    assert not result.ok
    assert result.violation == "hook: sys.addaudithook is not allowed"
    assert "HookRefusedError" in result.stdout + result.stderr
    if catch == "BaseException":  # caught and ignored: the run still fails
        assert (result.returncode, result.stdout.splitlines()[-1]) == (0, "went on")
    else:
        assert result.returncode == 1 and "went on" not in result.stdout


def test_the_child_runs_without_uid_capabilities_or_new_privileges(sandbox: Sandbox) -> None:
    if sandbox.mode != "jail":
        pytest.skip(f"a uid of its own needs root; this runs in mode {sandbox.mode!r}")
    code = "import os, time\nwhile not os.path.exists('go'):\n    time.sleep(0.005)"
    (_, status, config), result = watch(sandbox, code)
    assert result.ok, result.stderr
    assert int(status["Uid"].split()[0]) == config["uid"] not in (0, os.getuid())
    for name in ("CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert int(status[name], 16) == 0, name
    assert status["NoNewPrivs"].strip() == "1"


def test_a_spawn_that_bypasses_the_hook_stays_contained(tmp_path: Path) -> None:
    sandbox = new_sandbox(max_processes=4)
    if sandbox.mode != "jail":
        pytest.skip(f"the kernel layers need root; this runs in mode {sandbox.mode!r}")
    nap = f"{secrets.randbelow(10**6) + 1000}.5"  # seconds, and a name for the process
    with socket.create_server(("127.0.0.1", 0)) as server:
        server.setblocking(False)
        port = server.getsockname()[1]
        shell = (
            f"id -u; cat /etc/passwd; echo > /dev/tcp/127.0.0.1/{port} && echo CONNECTED; "
            f"touch {tmp_path}/pwned; (sleep {nap} >/dev/null 2>&1 &); echo spawned"
        )
        code = f"""
import subprocess, sys
sys.audit = lambda *args: None  # Popen's audit event is raised from Python: this skips it
done = subprocess.run(["bash", "-c", {shell!r}], capture_output=True, text=True)
print(done.stdout + done.stderr)
"""
        result = sandbox.run(code)
        with pytest.raises(BlockingIOError):
            server.accept()
    assert result.ok, result.stderr
    uid, *_ = result.stdout.split()
    assert int(uid) not in (0, os.getuid())
    assert "spawned" in result.stdout and "CONNECTED" not in result.stdout
    assert "/etc/passwd: No such file or directory" in result.stdout
    assert "Network is unreachable" in result.stdout
    assert list(tmp_path.iterdir()) == []
    assert leftover_processes(f"sleep {nap}") == []  # the PID namespace ended with the child


@pytest.mark.parametrize("mode", ["userns-jail", "net", "userns-net", "none"])
def test_weaker_isolation_modes_still_confine(mode: str) -> None:
    try:
        sandbox = Sandbox(isolation=mode, require_network_isolation=False)
    except SandboxUnavailableError as exc:
        pytest.skip(str(exc))
    library = os.__file__  # the child runs this same Python
    mode_before = os.stat(library).st_mode
    body = f"""
import socket
probe("etc", lambda: open("/etc/passwd").read())
probe("write", lambda: open({library!r}, "a"))
probe("fchmod", lambda: os.chmod(os.open({library!r}, os.O_RDONLY), 0o777))
probe("socket", lambda: socket.socket())
probe("interfaces", lambda: sorted(name for _, name in socket.if_nameindex()))
"""
    out, result = probe(sandbox, body)
    for name in ("etc", "write", "socket"):
        assert out[name].startswith("PermissionError: [Errno 13] sandbox: "), (name, out[name])
    # refused by the hook, or where there is no /proc to name the fd, by the read-only mount
    assert out["fchmod"].startswith(
        ("PermissionError: [Errno 13] sandbox: ", "OSError: [Errno 30]")
    )
    assert os.stat(library).st_mode == mode_before
    assert result.violation == "open('/etc/passwd') outside the sandbox"
    if mode != "none":
        assert out["interfaces"] == "['lo']"


def test_resolve_path_matches_realpath(tmp_path: Path) -> None:
    (tmp_path / "real" / "deep").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    (tmp_path / "real" / "up").symlink_to("..")
    (tmp_path / "etc").symlink_to("/etc")
    for path in ["link/deep", "link/up/link/deep/../x", "etc/passwd", "link/missing/../y", "."]:
        full = f"{tmp_path}/{path}"
        assert hook.resolve_path(full) == os.path.realpath(full), path


def test_the_hook_checks_the_resolved_path(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "etc").symlink_to("/etc")
    (work / "data.csv").write_text("a\n1\n")
    read_fd, write_fd = os.pipe()
    ctx = hook.hook_context(str(work), ("/usr/lib",), write_fd)
    hook._check_path("open", str(work / "data.csv"), "read", ctx)
    hook._check_path("open", Path("/usr/lib/os-release"), "read", ctx)
    with pytest.raises(PermissionError, match="outside the sandbox"):
        hook._check_path("open", str(work / "etc" / "passwd"), "read", ctx)
    with pytest.raises(PermissionError, match="for writing outside the sandbox"):
        hook._check_path("open", b"/usr/lib/os-release", "write", ctx)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as report:
        lines = report.read().decode().splitlines()
    assert lines == [
        f"violation\topen('{work}/etc/passwd') outside the sandbox",
        "violation\topen('/usr/lib/os-release') for writing outside the sandbox",
    ]


def test_the_hook_holds_when_its_module_is_tampered_with(sandbox: Sandbox) -> None:
    hook_dir = str(Path(boot.__file__).parent)  # where `_sandbox_hook.py` was loaded from
    body = f"""
frame = sys._getframe()
while "_hook" not in frame.f_globals:  # up to the boot's frames, which hold the hook module
    frame = frame.f_back
module = frame.f_globals["_hook"]
probe("seen", lambda: (module.__name__, "_sandbox_hook" in sys.modules, {hook_dir!r} in sys.path))
probe("defaults", lambda: setattr(module._check_path, "__defaults__", None))
probe("code", lambda: setattr(module._on_event, "__code__", (lambda *args: None).__code__))
probe("globals", lambda: setattr(module, "_check_path", lambda *args: None))
probe("etc", lambda: open("/etc/passwd").read())
"""
    out, result = probe(sandbox, body)
    assert out["seen"] == "('_sandbox_hook', False, False)"  # loaded, but not importable
    for name in ("defaults", "code"):  # the functions the hook holds are frozen
        assert out[name].startswith("PermissionError: [Errno 13] sandbox: hook: "), out[name]
    assert out["globals"] == "None"  # allowed, and of no use: the hook took its values before
    assert (
        out["etc"] == "PermissionError: [Errno 13] sandbox: open('/etc/passwd') outside the sandbox"
    )
    assert result.violation == "hook: changing '__defaults__' of the sandbox is not allowed"
