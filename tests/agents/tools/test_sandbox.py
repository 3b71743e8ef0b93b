"""Tests of the analysis sandbox: each containment layer, a real pandas job, the input checks.

Most runs share one `Sandbox` and use plain Python (a child starts in ~0.1 s); one run
imports pandas, statsmodels and matplotlib.
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import os
import re
import secrets
import socket
import statistics
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from agents.tools import _sandbox_boot as boot
from agents.tools.sandbox import (
    Sandbox,
    SandboxInputError,
    SandboxLimits,
    SandboxResult,
    SandboxUnavailableError,
    sandbox_available,
)
from swarm.errors import ConfigError, UserError

DATA = Path(__file__).resolve().parents[3] / ".." / "shared" / "data" / "papers"
PAPERS = DATA / "iclr2017_citations_in_2018.json"
AVAILABLE, WHY = sandbox_available()
pytestmark = pytest.mark.skipif(not AVAILABLE, reason=f"no isolated sandbox here: {WHY}")

# Runs each denied operation, printing {name: "ExceptionType: message" or the result}.
PROBE = """
import json, os, pathlib, shutil, subprocess, sys
out = {}
def probe(name, action):
    try:
        out[name] = repr(action())
    except BaseException as exc:
        out[name] = type(exc).__name__ + ": " + str(exc)
"""


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    return Sandbox(SandboxLimits(timeout_s=10))


def probe(sandbox: Sandbox, body: str, **kw: object) -> tuple[dict[str, str], SandboxResult]:
    result = sandbox.run(PROBE + body + "\nprint(json.dumps(out))", **kw)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout), result


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


def sandbox_child(marker: str) -> tuple[int, dict[str, str], dict] | None:
    """(pid, /proc status fields, boot config) of the running sandbox child (the Python, not
    the unshare that started it) whose working dir holds the input file `marker`."""
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().decode().split("\0")
            status = (entry / "status").read_text()
        except OSError:  # not a process, or it just ended
            continue
        if boot.__file__ not in argv or "unshare" in argv[0]:
            continue
        config = json.loads(argv[argv.index(boot.__file__) + 1])
        if Path(config["work"], marker).exists():
            fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
            return int(entry.name), fields, config
    return None


def watch(sandbox: Sandbox, code: str, ready: str = "") -> tuple[tuple, SandboxResult]:
    """Run `code`, and find its child while it runs (once its status shows `ready`)."""
    marker = f"marker-{secrets.token_hex(8)}"
    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(sandbox.run, code, files={marker: b""})
        child = None
        while child is None and not running.done():
            child = sandbox_child(marker)
            if child is not None and ready not in "".join(child[1].values()):
                child = None
        if child is not None:
            Path(child[2]["work"], "go").touch()  # the code may wait for this
        result = running.result()
    assert child is not None, "the child was not seen running"
    return child, result


def test_analysis_job_with_pandas_statsmodels_and_matplotlib(sandbox: Sandbox) -> None:
    papers = json.loads(PAPERS.read_text(encoding="utf-8"))
    table = io.StringIO()
    writer = csv.writer(table)
    writer.writerow(["decision", "rating", "citations"])
    writer.writerows([p["decision"], p["rating"], p["citations"]] for p in papers)
    code = """
import json, sys
import pandas as pd
import matplotlib.pyplot as plt
from statsmodels.regression.linear_model import OLS
from statsmodels.tools import add_constant
column = sys.stdin.read().strip()
df = pd.read_csv("data.csv")
fit = OLS(df[column], add_constant(df["rating"])).fit()
means = df.groupby("decision")[column].mean().to_dict()
fig, ax = plt.subplots()
ax.scatter(df["rating"], df[column])
fig.savefig("plots/fig.png")
with open("result.json", "w") as handle:
    json.dump({"slope": fit.params["rating"], "means": means}, handle)
print(json.dumps({"describe": json.loads(df[column].describe().to_json()),
                  "papers": len(pd.read_json("papers.json"))}))
"""
    result = sandbox.run(
        code,
        files={"data.csv": table.getvalue(), "papers.json": PAPERS, "plots/.keep": b""},
        stdin="citations\n",
    )
    assert result.ok, result.stderr
    assert (result.killed, result.violation, result.truncated) == (None, None, False)
    printed = json.loads(result.stdout)
    citations = [p["citations"] for p in papers]
    assert printed["papers"] == len(papers)
    assert printed["describe"]["count"] == len(papers)
    assert printed["describe"]["mean"] == pytest.approx(statistics.fmean(citations))
    assert sorted(result.files) == ["plots/fig.png", "result.json"]  # unchanged inputs left out
    assert result.files["plots/fig.png"].startswith(b"\x89PNG")
    written = json.loads(result.files["result.json"])
    ratings = [float(p["rating"]) for p in papers]
    assert written["slope"] == pytest.approx(np.polyfit(ratings, citations, 1)[0])
    by_decision: dict[str, list[int]] = {}
    for paper in papers:
        by_decision.setdefault(paper["decision"], []).append(paper["citations"])
    assert written["means"] == pytest.approx(
        {k: statistics.fmean(v) for k, v in by_decision.items()}
    )


def test_stdin_inputs_and_changed_files(sandbox: Sandbox) -> None:
    code = """
import os, sys
os.makedirs("out")
open("out/upper.txt", "w").write(sys.stdin.read().upper())
open("in/data.txt", "a").write("+more")
print(open("in/keep.txt").read(), end="")
"""
    result = sandbox.run(code, files={"in/data.txt": "base", "in/keep.txt": b"kept"}, stdin="héllo")
    assert result.ok, result.stderr
    assert result.stdout == "kept"
    assert result.files == {"out/upper.txt": "HÉLLO".encode(), "in/data.txt": b"base+more"}


def test_infinite_loop_is_killed_at_the_timeout_and_leaves_nothing() -> None:
    (pid, status, _), result = watch(Sandbox(SandboxLimits(timeout_s=0.5)), "while True: pass")
    assert (result.ok, result.killed, result.returncode) == (False, "timeout", None)
    assert 0.5 <= result.duration_s < 5
    for gone in (pid, int(status["PPid"])):  # the child and the unshare above it: not even zombies
        assert not Path(f"/proc/{gone}").exists()


@pytest.mark.parametrize(
    "code",
    ["x = bytearray(10**12)", "x = []\nwhile True:\n    x.append(bytearray(10**7))"],
    ids=["one-huge-allocation", "growing-list"],
)
def test_memory_bomb_ends_with_memory(code: str) -> None:
    result = Sandbox(SandboxLimits(timeout_s=10, memory_mb=256)).run(code)
    assert (result.ok, result.killed) == (False, "memory")
    assert "MemoryError" in result.stderr


def test_output_flood_is_cut_and_killed() -> None:
    limits = SandboxLimits(timeout_s=10, output_bytes=10_000)
    result = Sandbox(limits).run('while True:\n    print("x" * 1000)')
    assert (result.ok, result.killed, result.truncated, result.returncode) == (
        False,
        "output",
        True,
        None,
    )
    assert 0 < len(result.stdout.encode()) <= 10_000


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


def test_the_child_runs_without_uid_capabilities_or_new_privileges(sandbox: Sandbox) -> None:
    if sandbox.mode != "jail":
        pytest.skip(f"a uid of its own needs root; this runs in mode {sandbox.mode!r}")
    code = "import os, time\nwhile not os.path.exists('go'):\n    time.sleep(0.005)"
    (_, status, config), result = watch(sandbox, code, ready="NoNewPrivs:\t1")
    assert result.ok, result.stderr
    assert int(status["Uid"].split()[0]) == config["uid"] not in (0, os.getuid())
    for name in ("CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert int(status[name], 16) == 0, name
    assert status["NoNewPrivs"].strip() == "1"


def test_a_spawn_that_bypasses_the_hook_stays_contained(tmp_path: Path) -> None:
    sandbox = Sandbox(SandboxLimits(timeout_s=10, max_processes=4))
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


def test_no_network_isolation_fails_closed_unless_allowed() -> None:
    with pytest.raises(SandboxUnavailableError, match="require_network_isolation=False"):
        Sandbox(isolation="none")
    with pytest.raises(ConfigError, match="unknown sandbox isolation 'vm'"):
        Sandbox(isolation="vm")


async def test_arun_leaves_the_event_loop_free(sandbox: Sandbox) -> None:
    run = asyncio.create_task(sandbox.arun("import time; time.sleep(0.2); print('done')"))
    tick = asyncio.create_task(asyncio.sleep(0))
    done, _ = await asyncio.wait({run, tick}, return_when=asyncio.FIRST_COMPLETED)
    assert done == {tick}
    result = await run
    assert (result.ok, result.stdout) == (True, "done\n")


@pytest.mark.parametrize("name", ["../x", "/etc/x", "a/../../x", "", "a//b", "./x", ".hidden"])
def test_bad_input_names_are_refused(sandbox: Sandbox, name: str) -> None:
    with pytest.raises(SandboxInputError, match=re.escape(repr(name))) as caught:
        sandbox.run("pass", files={name: b"x"})
    assert isinstance(caught.value, UserError)


def test_bad_input_values_and_limits_are_refused(sandbox: Sandbox) -> None:
    with pytest.raises(SandboxInputError, match=r"'data\.csv' has a value of type int"):
        sandbox.run("pass", files={"data.csv": 3})  # type: ignore[dict-item]
    with pytest.raises(ConfigError, match="timeout_s must be a positive number, got 0"):
        SandboxLimits(timeout_s=0)
    with pytest.raises(ConfigError, match="is not an executable file"):
        Sandbox(python="/nonexistent/python")


def test_resolve_path_matches_realpath(tmp_path: Path) -> None:
    (tmp_path / "real" / "deep").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    (tmp_path / "real" / "up").symlink_to("..")
    (tmp_path / "etc").symlink_to("/etc")
    for path in ["link/deep", "link/up/link/deep/../x", "etc/passwd", "link/missing/../y", "."]:
        full = f"{tmp_path}/{path}"
        assert boot.resolve_path(full) == os.path.realpath(full), path


def test_the_hook_checks_the_resolved_path(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "etc").symlink_to("/etc")
    (work / "data.csv").write_text("a\n1\n")
    read_fd, write_fd = os.pipe()
    ctx = boot.hook_context(str(work), ("/usr/lib",), write_fd)
    boot._check_path("open", str(work / "data.csv"), "read", ctx)
    boot._check_path("open", Path("/usr/lib/os-release"), "read", ctx)
    with pytest.raises(PermissionError, match="outside the sandbox"):
        boot._check_path("open", str(work / "etc" / "passwd"), "read", ctx)
    with pytest.raises(PermissionError, match="for writing outside the sandbox"):
        boot._check_path("open", b"/usr/lib/os-release", "write", ctx)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as report:
        lines = report.read().decode().splitlines()
    assert lines == [
        f"violation\topen('{work}/etc/passwd') outside the sandbox",
        "violation\topen('/usr/lib/os-release') for writing outside the sandbox",
    ]
