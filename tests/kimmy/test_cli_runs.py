"""`kimmy run / resume / runs / show / validate` against a real loopback OpenAI-compatible
server: the built-in roles of `agents` answer with their `Answer` JSON."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from kimmy_swarm.cli.app import main
from kimmy_swarm.swarm.events import parse_event
from kimmy_swarm.swarm.schema import RunResult
from tests.support.openai_server import OpenAIServer, delay, echo, status
from tests.support.signals import default_sigint

ROOT = Path(__file__).resolve().parents[2]


def write_plan(path: Path, plan: object) -> Path:
    path.write_text(json.dumps(plan) if not isinstance(plan, str) else plan)
    return path


def chain_plan(n: int = 4) -> dict:
    subtasks = [
        {"id": f"r{i}", "role": "researcher", "instructions": f"topic {i}"} for i in range(n)
    ]
    subtasks.append(
        {
            "id": "w",
            "role": "writer",
            "instructions": "combine",
            "depends_on": [f"r{i}" for i in range(n)],
        }
    )
    return {"goal": "test", "subtasks": subtasks}


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_run_show_runs_round_trip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan = write_plan(tmp_path / "plan.json", chain_plan())
    runs = str(tmp_path / "runs")
    with OpenAIServer(default=echo("seen: ")) as srv:
        code, out, err = run_cli(
            capsys, "run", str(plan), "--base-url", srv.base_url, "--runs-dir", runs, "--json"
        )
        bodies = [r.body for r in srv.chat_requests]
    assert code == 0, err
    # each sub-agent is the agents' built-in role: its prompt, its `Answer` schema
    assert {b["response_format"]["json_schema"]["name"] for b in bodies} == {"Answer"}
    assert any(b["messages"][0]["content"].startswith("You are a writer") for b in bodies)
    events = [parse_event(line) for line in out.splitlines()]
    assert [e.seq for e in events] == list(range(len(events)))
    assert events[-1].type == "run_finished" and events[-1].status == "completed"
    run_id = events[0].run_id
    # the writer saw its upstream outputs in the prompt, and the server's echo came back as
    # the role's answer
    code, out, _ = run_cli(capsys, "show", run_id[:12], "--runs-dir", runs, "--output", "w")
    answer = json.loads(out)
    assert code == 0 and answer["answer"].startswith("seen: ") and answer["sources"] == []
    assert "Result of r3" in answer["answer"]
    code, out, _ = run_cli(capsys, "show", "latest", "--runs-dir", runs, "--json")
    result = RunResult.model_validate_json(out)
    assert result.run_id == run_id and result.counts() == {"done": 5}
    assert result.usage.model_calls == 5
    code, out, _ = run_cli(capsys, "runs", "--runs-dir", runs, "--json")
    row = json.loads(out.splitlines()[0])
    assert (row["run_id"], row["n_done"], row["status"]) == (run_id, 5, "completed")


def test_failed_run_exits_1_and_resume_reruns_only_unfinished(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = write_plan(tmp_path / "plan.json", chain_plan(3))
    runs = str(tmp_path / "runs")
    bad = [echo(), echo(), status(400, {"error": {"message": "no such prompt"}})]
    with OpenAIServer(bad, default=echo()) as srv:
        code, out, err = run_cli(
            capsys,
            "run",
            str(plan),
            "--base-url",
            srv.base_url,
            "--runs-dir",
            runs,
            "--max-concurrency",
            "1",
        )
    assert code == 1
    assert "1 failed" in out and "1 skipped" in out and "no such prompt" in out
    with OpenAIServer(default=echo()) as srv:
        code, out, err = run_cli(
            capsys, "resume", "latest", "--runs-dir", runs, "--base-url", srv.base_url
        )
        rerun = len(srv.chat_requests)
    assert code == 0, err
    assert rerun == 2  # the failed researcher and the skipped writer, nothing else
    assert "5 done" not in out and "4 done" in out


def test_resume_takes_a_model_in_this_process(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`kimmy resume --local MODEL`: the run goes on with a model in this process (as every
    command that reaches a model takes --local), not the server it was started against."""
    plan = write_plan(tmp_path / "plan.json", chain_plan(1))
    runs = str(tmp_path / "runs")
    bad = status(400, {"error": {"message": "no such prompt"}})
    with OpenAIServer(default=bad) as srv:
        code, *_ = run_cli(capsys, "run", str(plan), "--base-url", srv.base_url,
                           "--runs-dir", runs)  # fmt: skip
    assert code == 1
    code, out, _ = run_cli(capsys, "show", "latest", "--runs-dir", runs, "--json")
    before = RunResult.model_validate_json(out).usage.model_calls
    code, _, err = run_cli(capsys, "resume", "latest", "--runs-dir", runs, "--local", "tiny",
                           "--base-url", "http://127.0.0.1:9/v1")  # fmt: skip
    assert code == 2 and "give one model" in err
    code, _, err = run_cli(capsys, "resume", "latest", "--runs-dir", runs, "--local", "tiny")
    assert code in (0, 1), err  # the tiny model's noise may fail a check; it was called
    code, out, _ = run_cli(capsys, "show", "latest", "--runs-dir", runs, "--json")
    result = RunResult.model_validate_json(out)
    assert result.usage.model_calls > before  # the tiny model answered this time


@pytest.mark.parametrize(
    ("plan", "flags", "needle"),
    [
        (None, [], "does not exist"),
        ("{not json", [], "not valid JSON"),
        ([1, 2], [], "a plan is a JSON object"),
        ({"goal": "g", "subtasks": []}, [], "no subtasks"),
        ({"subtasks": [{"id": "a", "role": "poet"}]}, [], "unknown role(s) 'poet'"),
        (
            {
                "subtasks": [
                    {"id": "a", "role": "writer", "depends_on": ["b"]},
                    {"id": "b", "role": "writer", "depends_on": ["a"]},
                ]
            },
            [],
            "cycle",
        ),
        ({"subtasks": [{"id": "a b", "role": "writer"}]}, [], "subtasks.0.id"),
        (
            {"subtasks": [{"id": "a", "role": "writer"}]},
            ["--max-concurrency", "0"],
            "'--max-concurrency': must be an integer ≥ 1, got 0",
        ),
        ({"subtasks": [{"id": "a", "role": "writer"}]}, ["--retries", "abc"], "(got 'abc')"),
        (
            {"subtasks": [{"id": "a", "role": "writer"}]},
            ["--timeout=-2"],
            "must be a positive number of seconds, got -2.0",
        ),
        (
            {"subtasks": [{"id": "a", "role": "writer"}]},
            ["--call-timeout", "0"],
            "'--call-timeout': must be a positive number of seconds, got 0.0",
        ),
        (
            {"subtasks": [{"id": "a", "role": "writer"}]},
            ["--failure-policy", "maybe"],
            "'maybe' is not one of",
        ),
        (
            {"subtasks": [{"id": "a", "role": "writer"}]},
            ["--rate-limit", "fast"],
            "bad rate limit 'fast'",
        ),
        ({"subtasks": [{"id": "a", "role": "writer"}]}, ["--base-url", "ftp://x"], "ftp://x"),
        (
            {"subtasks": [{"id": "a", "role": "writer"}]},
            ["--base-url", "http://127.0.0.1:9/v1"],
            "cannot reach model server",
        ),
    ],
)
def test_bad_input_is_one_line_exit_2(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    plan: object,
    flags: list[str],
    needle: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = tmp_path / "plan.json"
    if plan is not None:
        write_plan(path, plan)
    monkeypatch.setenv("KIMMY_BASE_URL", "http://127.0.0.1:9/v1")
    code, _, err = run_cli(capsys, "run", str(path), "--runs-dir", str(tmp_path / "r"), *flags)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kimmy: error: "), err
    assert needle in lines[0]
    assert "Traceback" not in err


def test_missing_server_config_and_bad_runs_dir(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KIMMY_BASE_URL", raising=False)
    plan = write_plan(tmp_path / "plan.json", chain_plan(1))
    code, _, err = run_cli(capsys, "run", str(plan))
    assert code == 2 and "no model server configured" in err and "KIMMY_BASE_URL" in err
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with OpenAIServer() as srv:
        code, _, err = run_cli(
            capsys,
            "run",
            str(plan),
            "--base-url",
            srv.base_url,
            "--runs-dir",
            str(blocker / "runs"),
        )
    assert code == 2 and str(blocker / "runs") in err and "Traceback" not in err
    code, _, err = run_cli(capsys, "show", "nope", "--runs-dir", str(tmp_path / "empty"))
    assert code == 2 and "no runs stored" in err


def test_validate_prints_the_shape(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan = write_plan(tmp_path / "plan.json", chain_plan(3))
    code, out, _ = run_cli(capsys, "validate", str(plan))
    assert code == 0
    assert "4 subtasks, 3 dependencies, 2 stages, widest stage 3, critical path 2" in out


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_saves_finished_work_exits_128_plus_it_and_resumes(
    tmp_path: Path, signum: int, code: int
) -> None:
    """SIGINT / SIGTERM to a real `kimmy run` process: exit 130 / 143 with no traceback,
    the run stored as cancelled with what finished, and `kimmy resume` completes it."""
    n = 30
    plan = write_plan(tmp_path / "plan.json", chain_plan(n))
    runs = tmp_path / "runs"
    db = runs / "kimmy.db"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # the first 10 calls answer at once, the rest hang: the run is mid-way when we interrupt
    with OpenAIServer([echo()] * 10, default=delay(30)) as srv:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kimmy",
                "run",
                str(plan),
                "--base-url",
                srv.base_url,
                "--runs-dir",
                str(runs),
                "--max-concurrency",
                "4",
                "--json",
            ],
            preexec_fn=default_sigint,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        deadline = time.monotonic() + 30
        done = 0
        while time.monotonic() < deadline and done < 10:
            time.sleep(0.05)
            if db.exists():
                with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
                    try:
                        (done,) = con.execute(
                            "SELECT COUNT(*) FROM results WHERE status = 'done'"
                        ).fetchone()
                    except sqlite3.OperationalError:
                        done = 0
        assert done == 10, "run did not reach the interrupt point"
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == code, err
    assert "kimmy resume" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    with sqlite3.connect(db) as con:
        (state,) = con.execute("SELECT status FROM runs").fetchone()
        (kept,) = con.execute("SELECT COUNT(*) FROM results WHERE status = 'done'").fetchone()
    assert state == "cancelled" and kept == 10
    with OpenAIServer(default=echo()) as srv:
        code = main(
            ["resume", "latest", "--runs-dir", str(runs), "--base-url", srv.base_url, "--json"]
        )
        assert len(srv.chat_requests) == n + 1 - 10
    assert code == 0


#: Every `kimmy run` flag that sets a `RunConfig` field, away from its default.
RUN_FLAGS = [
    "--max-concurrency", "3", "--rate-limit", "600/m", "--seed", "7", "--timeout", "30",
    "--retries", "0", "--failure-policy", "continue", "--max-subagents", "50",
    "--max-tokens", "100000", "--deadline", "300", "--max-depth", "2", "--no-adaptive",
    "--ray-hosts", "2",
]  # fmt: skip


def _session_configs(runs: str, run_id: str) -> list[Any]:
    """The `RunConfig` each session of a stored run ran with (its `run_started` events)."""
    from kimmy_swarm.swarm import RunConfig
    from kimmy_swarm.swarm.store import RunStore

    with RunStore(Path(runs), create=False) as store:
        return [
            RunConfig.from_settings(e.settings)
            for e in store.events(run_id)
            if e.type == "run_started"
        ]


def test_resume_continues_with_the_run_config_it_was_made_with(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from kimmy_swarm.swarm import RunConfig
    from kimmy_swarm.swarm.store import RunStore

    expected = RunConfig(
        max_concurrency=3, rate_limit="600/m", seed=7, timeout_s=30.0, max_retries=0,
        failure_policy="continue", max_subagents=50, max_total_tokens=100_000,
        deadline_s=300.0, max_depth=2, adaptive=False, ray_hosts=2,
    )  # fmt: skip
    plan = write_plan(tmp_path / "plan.json", chain_plan(2))
    runs = str(tmp_path / "runs")
    bad = [echo(), status(400, {"error": {"message": "no such prompt"}})]
    with OpenAIServer(bad, default=echo()) as srv:
        code, _, err = run_cli(
            capsys, "run", str(plan), "--base-url", srv.base_url, "--runs-dir", runs, *RUN_FLAGS
        )
    assert code == 1, err  # one researcher failed; the rest ran (failure policy continue)
    with RunStore(Path(runs), create=False) as store:
        stored = store.load_run("latest")
    assert RunConfig.from_settings(stored.settings) == expected
    with OpenAIServer(default=echo()) as srv:
        code, _, err = run_cli(
            capsys, "resume", "latest", "--runs-dir", runs, "--base-url", srv.base_url
        )
        assert len(srv.chat_requests) == 1  # only the failed researcher
    assert code == 0, err
    # a flag given to resume changes that setting and nothing else
    with OpenAIServer(default=echo()) as srv:
        code, _, err = run_cli(
            capsys, "resume", stored.run_id, "--runs-dir", runs, "--base-url", srv.base_url,
            "--max-concurrency", "5",
        )  # fmt: skip
    assert code == 0, err
    first, resumed, changed = _session_configs(runs, stored.run_id)
    assert first == resumed == expected  # every field, rate limit, seed and backoff included
    assert changed == expected.replace(max_concurrency=5)


@pytest.mark.parametrize("columns", [80, 60, 200])
def test_runs_keeps_run_ids_whole_at_any_width(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    columns: int,
) -> None:
    from kimmy_swarm.swarm import Swarm

    async def echo(ctx: object) -> str:
        return "ok"

    runs = tmp_path / "runs"
    swarm = Swarm(runs_dir=runs, roles={"echo": echo})
    goal = "review every paper on reinforcement learning from human feedback " * 3
    ids = [
        swarm.run_sync(
            {"goal": goal, "subtasks": [{"id": "a", "role": "echo"}]},
            run_id=f"20261205-075100-a-long-run-name-{i}",
        ).run_id
        for i in range(2)
    ]
    monkeypatch.setenv("COLUMNS", str(columns))
    code, out, _ = run_cli(capsys, "runs", "--runs-dir", str(runs))
    assert code == 0
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= columns
    for run_id in ids:  # on one line, whole: what `kimmy show` needs
        assert any(run_id in line for line in lines), out
    assert ("goal" in out) == (columns >= 80)
    assert "…" in out  # the long goal is cut, saying so; the id never is
