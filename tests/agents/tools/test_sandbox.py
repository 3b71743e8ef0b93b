"""Tests of the analysis sandbox's API: a real pandas job, inputs and outputs, the limits
(wall clock, memory, output), the isolation choice and the input checks.

Containment (what the code may not reach) is tested in `test_sandbox_containment.py`. One run
here imports pandas, statsmodels and matplotlib.
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import re
import shutil
import statistics
import sys
from pathlib import Path

import numpy as np
import pytest

from kimmy_swarm.agents.tools.sandbox import (
    Sandbox,
    SandboxInputError,
    SandboxLimits,
    SandboxUnavailableError,
)
from kimmy_swarm.swarm.errors import ConfigError, UserError
from tests.agents.tools.conftest import AVAILABLE, WHY, new_sandbox, watch

DATA = Path(__file__).resolve().parents[3] / ".." / "shared" / "data" / "papers"
PAPERS = DATA / "iclr2017_citations_in_2018.json"


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
    (pid, status, _), result = watch(new_sandbox(timeout_s=0.5), "while True: pass")
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
    result = new_sandbox(memory_mb=256).run(code)
    assert (result.ok, result.killed) == (False, "memory")
    assert "MemoryError" in result.stderr


def test_output_flood_is_cut_and_killed() -> None:
    result = new_sandbox(output_bytes=10_000).run('while True:\n    print("x" * 1000)')
    assert (result.ok, result.killed, result.truncated, result.returncode) == (
        False,
        "output",
        True,
        None,
    )
    assert 0 < len(result.stdout.encode()) <= 10_000


def test_many_files_each_under_the_file_cap_are_stopped_at_the_total() -> None:
    # 30 x 7 MB (each under the 8 MB file cap) all went through before: 210 MB on disk
    code = "for i in range(30):\n    open(f'f{i}.bin', 'wb').write(b'x' * 7_000_000)"
    result = new_sandbox(max_total_bytes=20_000_000).run(code)
    assert (result.ok, result.killed, result.returncode) == (False, "disk", None)
    assert sum(map(len, result.files.values())) <= 8_000_000  # what comes back is capped too


def test_a_file_count_flood_is_stopped() -> None:
    code = "import os\nfor i in range(100_000):\n    open(f'e{i}', 'w').close()"
    result = new_sandbox(max_entries=500).run(code)
    assert (result.ok, result.killed) == (False, "disk")
    assert len(result.files) <= 1000


def test_inputs_do_not_count_against_the_total() -> None:
    big = b"y" * 3_000_000
    result = new_sandbox(max_total_bytes=1_000_000).run(
        "open('out.txt', 'w').write(str(len(open('in.bin', 'rb').read())))",
        files={"in.bin": big},
    )
    assert result.ok and result.files == {"out.txt": b"3000000"}


def _linked_python(tmp_path: Path, how: str) -> Path:
    """This venv's python, reached through a symlink: to the whole venv, or (in a venv of its
    own that borrows this one's packages) to its site-packages."""
    venv = Path(sys.prefix).resolve()
    python = Path(sys.executable).name
    if how == "venv":
        (tmp_path / "venv").symlink_to(venv, target_is_directory=True)
        return tmp_path / "venv" / "bin" / python
    other = tmp_path / "other-venv"
    (other / "bin").mkdir(parents=True)
    shutil.copy(venv / "pyvenv.cfg", other / "pyvenv.cfg")
    (other / "bin" / python).symlink_to(Path(sys.executable).resolve())
    (site,) = (venv / "lib").glob("python3*/site-packages")
    (other / site.relative_to(venv).parent).mkdir(parents=True)
    (other / site.relative_to(venv)).symlink_to(site, target_is_directory=True)
    return other / "bin" / python


@pytest.mark.parametrize("how", ["venv", "site-packages"])
def test_pandas_imports_when_the_venv_path_holds_a_symlink(tmp_path: Path, how: str) -> None:
    if not AVAILABLE:
        pytest.skip(f"no isolated sandbox here: {WHY}")
    if sys.prefix == sys.base_prefix:
        pytest.skip("needs a virtual environment to link to")
    sandbox = Sandbox(SandboxLimits(timeout_s=20), python=str(_linked_python(tmp_path, how)))
    code = f"import sys, pandas\nprint([p for p in sys.path if p.startswith({str(tmp_path)!r})])"
    result = sandbox.run(code)
    assert result.ok, result.stderr
    assert result.violation is None
    assert str(tmp_path) in result.stdout  # the child imported through the linked path


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
def test_bad_input_names_are_refused(name: str) -> None:
    sandbox = Sandbox(require_network_isolation=False)  # the names are checked before a run
    with pytest.raises(SandboxInputError, match=re.escape(repr(name))) as caught:
        sandbox.run("pass", files={name: b"x"})
    assert isinstance(caught.value, UserError)


def test_bad_input_values_and_limits_are_refused() -> None:
    sandbox = Sandbox(require_network_isolation=False)
    with pytest.raises(SandboxInputError, match=r"'data\.csv' has a value of type int"):
        sandbox.run("pass", files={"data.csv": 3})  # type: ignore[dict-item]
    with pytest.raises(ConfigError, match="timeout_s must be a positive number, got 0"):
        SandboxLimits(timeout_s=0)
    with pytest.raises(ConfigError, match="is not an executable file"):
        Sandbox(python="/nonexistent/python")
