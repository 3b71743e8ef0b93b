"""Shared helpers of the sandbox tests (`test_sandbox.py`, `test_sandbox_containment.py`),
and the fair dataset the model tests fit (`test_model_choices.py`,
`test_model_size_and_effects.py`).

Most runs share one `Sandbox` per test module and use plain Python (a child starts in ~0.1 s).
"""

from __future__ import annotations

import json
import secrets
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pandas as pd
import pytest

from kimmy_swarm.agents.tools import _sandbox_boot as boot
from kimmy_swarm.agents.tools.datasets import load_dataset
from kimmy_swarm.agents.tools.sandbox import (
    Sandbox,
    SandboxLimits,
    SandboxResult,
    sandbox_available,
)
from kimmy_swarm.agents.tools.variables import column_types

AVAILABLE, WHY = sandbox_available()

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


def new_sandbox(**limits: float) -> Sandbox:
    """A network-isolated sandbox with these limits; the test is skipped where there is none."""
    if not AVAILABLE:
        pytest.skip(f"no isolated sandbox here: {WHY}")
    return Sandbox(SandboxLimits(**{"timeout_s": 10, **limits}))


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    """One sandbox (default limits, a 10 s timeout) for the runs of a test module."""
    return new_sandbox()


def probe(sandbox: Sandbox, body: str, **kw: object) -> tuple[dict[str, str], SandboxResult]:
    """Run `PROBE` + `body` and return what its probes printed, and the result."""
    result = sandbox.run(PROBE + body + "\nprint(json.dumps(out))", **kw)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout), result


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


def watch(sandbox: Sandbox, code: str) -> tuple[tuple[int, dict[str, str], dict], SandboxResult]:
    """Run `code`, and find its child while it runs, once it has set itself up."""
    marker = f"marker-{secrets.token_hex(8)}"
    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(sandbox.run, code, files={marker: b""})
        child = None
        while child is None and not running.done():
            child = sandbox_child(marker)
            if child is not None and child[1]["NoNewPrivs"].strip() != "1":  # not yet
                child = None
        if child is not None:
            Path(child[2]["work"], "go").touch()  # the code may wait for this
        result = running.result()
    assert child is not None, f"the child was not seen running: {result}"
    return child, result


@pytest.fixture(scope="module")
def fair() -> pd.DataFrame:
    return load_dataset("statsmodels:fair").frame


@pytest.fixture(scope="module")
def fair_kinds() -> dict:
    ds = load_dataset("statsmodels:fair")
    return column_types(ds.frame, codes=ds.codes, descriptions=ds.descriptions, target=ds.target)
