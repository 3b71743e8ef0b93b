"""kill -9 of `kimmy swarm` in the middle of the orchestration, then `kimmy resume`: no
finished sub-agent runs again, and the orchestrator's conversation continues where it was
(its open turn is carried out again, not decided again)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from kimmy_swarm.swarm.store import RunStore
from tests.support.openai_server import OpenAIServer, Reply, ServerRequest, completion, json_reply

ROOT = Path(__file__).resolve().parents[3]
SLOW = {"t4", "t5", "t6"}


class Model:
    """The orchestrator assigns six tasks and waits; three sub-agents answer at once, three
    only once `release` is set."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.lock = threading.Lock()
        self.subagent_calls: Counter[str] = Counter()
        self.orchestrator_bodies: list[dict[str, Any]] = []

    def __call__(self, request: ServerRequest) -> Reply:
        body = request.body
        names = {t["function"]["name"] for t in body.get("tools") or ()}
        if "assign_task" in names:
            with self.lock:
                self.orchestrator_bodies.append(body)
            done = any(m["role"] == "assistant" for m in body["messages"])
            calls = [("finish", {"answer": "six tasks done"})] if done else [
                *[("assign_task", {"agent": "researcher", "task": f"Part {i}"}) for i in range(6)],
                ("wait", {"ids": "all"}),
            ]  # fmt: skip
            return json_reply(200, completion(request, None, tool_calls=calls, usage=(20, 10)))
        text = next(m["content"] for m in body["messages"] if m["role"] == "user")
        task = re.search(r"sub-agent '([^']+)'", text).group(1)  # type: ignore[union-attr]
        with self.lock:
            self.subagent_calls[task] += 1
        answer = json_reply(200, completion(request, json.dumps({"answer": task, "sources": []})))
        if task in SLOW and not self.release.is_set():
            return Reply(answer.status, answer.body, answer.headers, delay_s=120.0)
        return answer


def _kimmy(*args: str) -> list[str]:
    return [sys.executable, "-P", "-m", "kimmy_swarm.cli", *args]


def _wait_for(predicate: Any, what: str, limit_s: float = 60.0) -> None:
    deadline = time.monotonic() + limit_s  # a bound for a hung run, not a speed check
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def _done(runs: Path) -> set[str]:
    if not (runs / "kimmy.db").is_file():
        return set()
    with RunStore(runs, create=False) as store:
        listed = store.list_runs(1)
        return store.done_ids(listed[0].run_id) if listed else set()


def test_kill_9_mid_orchestration_then_resume(tmp_path: Path) -> None:
    model = Model()
    runs, out = tmp_path / "runs", tmp_path / "out"
    env = {**os.environ, "KIMMY_API_KEY": ""}
    with OpenAIServer(default=model) as srv:
        goal = ["swarm", "Do six things", "--base-url", srv.base_url, "--model", "test-model"]
        proc = subprocess.Popen(
            _kimmy(*goal, "--runs-dir", str(runs), "--out", str(out), "--json"),
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        try:
            _wait_for(lambda: {"t1", "t2", "t3"} <= _done(runs), "three finished sub-agents")
            _wait_for(lambda: sum(model.subagent_calls[t] for t in SLOW) == 3, "slow calls")
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
        assert proc.returncode == -signal.SIGKILL
        assert len(model.orchestrator_bodies) == 1
        model.release.set()
        resumed = subprocess.run(
            _kimmy("resume", "latest", "--runs-dir", str(runs), "--json"),
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert [model.subagent_calls[t] for t in ("t1", "t2", "t3")] == [1, 1, 1]  # not run again
    assert all(model.subagent_calls[t] == 2 for t in SLOW)  # killed mid-call, then again
    assert len(model.orchestrator_bodies) == 2  # the open turn was not decided again
    second = model.orchestrator_bodies[1]["messages"]
    decided = [m for m in second if m["role"] == "assistant"]
    assert len(decided) == 1 and len(decided[0]["tool_calls"]) == 7
    waited = json.loads([m for m in second if m["role"] == "tool"][-1]["content"])
    assert sorted(r["id"] for r in waited["results"]) == [f"t{i}" for i in range(1, 7)]
    assert (out / "answer.md").read_text() == "six tasks done\n"
    with RunStore(runs, create=False) as store:
        stored = store.load_run("latest")
    assert stored.status.value == "completed" and len(stored.results) == 7
