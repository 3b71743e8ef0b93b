"""`kimmy dashboard` as a user starts it: a real process serving a store made by `kimmy run`,
stopped by Ctrl-C; a port in use is one error line, exit 2."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
import httpx

from kimmy_swarm.cli.app import main
from kimmy_swarm.swarm import SubtaskContext, Swarm

ROOT = Path(__file__).resolve().parents[2]


async def _echo(ctx: SubtaskContext) -> str:
    return f"said {ctx.id}"


def _stored_run(runs: Path) -> str:
    swarm = Swarm(runs_dir=runs, roles={"echo": _echo})
    plan = {"goal": "serve me", "subtasks": [{"id": f"s{i}", "role": "echo"} for i in range(3)]}
    return swarm.run_sync(plan).run_id


def test_the_command_serves_the_store_until_ctrl_c(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    run_id = _stored_run(runs)
    proc = subprocess.Popen(
        [sys.executable, "-P", "-m", "kimmy_swarm.cli", "dashboard", "--runs-dir", str(runs),
         "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith(f"kimmy: dashboard of {runs} at http://127.0.0.1:"), line
        url = line.split(" at ", 1)[1].split("/ ", 1)[0]
        assert not url.endswith(":0")  # the port it really took
        with httpx.Client(base_url=url, timeout=30) as http:
            runs_list = http.get("/api/runs").json()
            assert [(r["run_id"], r["status"], r["n_done"]) for r in runs_list] == [
                (run_id, "completed", 3)
            ]
            agent = http.get(f"/api/runs/{run_id}/agents/s1").json()
            assert agent["transcript"]["attempts"][0]["entries"][-1]["output"] == "said s1"
            assert "Kimmy Swarm" in http.get("/").text
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 130  # as every kimmy command stopped by Ctrl-C
        assert proc.stderr is not None and "Traceback" not in proc.stderr.read()
    finally:
        proc.kill()
        proc.wait()


def test_a_port_in_use_is_one_error_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "runs"
    _stored_run(runs)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code = main(["dashboard", "--runs-dir", str(runs), "--port", str(port)])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""  # nothing claims it is serving
    assert captured.err.strip() == (
        f"kimmy: error: port {port} on 127.0.0.1 is in use: choose another with --port"
    )
