"""The swarm thinks: `kimmy swarm GOAL --local qwen2.5-coder-1.5b` on a 10-paper slice of the
ICLR corpus, end to end with the real model (installed by `make models`, as CI does).

One wide goal in words: the orchestrator model's tool calls are valid calls of its tools,
it creates sub-agents with prompts of its own, every row of the answer table names a
paper of the slice, `kimmy show` draws the tree — and a run killed with SIGKILL after a
sub-agent finished is continued by `kimmy resume` without running that sub-agent again.
Sub-agents run one at a time (`--max-concurrency 2`), so the kill lands between them.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from kimmy_swarm.agents.orchestrator import ORCHESTRATOR_ID
from kimmy_swarm.agents.orchestrator.tools import TOOLS
from kimmy_swarm.agents.widesearch import load_papers, parse_answer, title_key
from kimmy_swarm.model.catalog import MODELS
from kimmy_swarm.model.ggml_model import llama_cpp_available
from kimmy_swarm.model.locate import installed_path
from kimmy_swarm.rewards import load_trajectory
from kimmy_swarm.swarm.store import RunStore

NAME = "qwen2.5-coder-1.5b"
if installed_path(MODELS[NAME]) is None:
    pytest.skip(f"{NAME} is not installed (make models)", allow_module_level=True)
if not llama_cpp_available():
    pytest.skip("llama-cpp-python is not installed (make llama-cpp)", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[3]
ICLR = ROOT.parent / "shared" / "data" / "papers" / "iclr2017_citations_in_2018.json"
GOAL = "List every paper whose abstract mentions 'stochastic', with its title and first author."


def _kimmy(*args: str) -> list[str]:
    return [sys.executable, "-P", "-m", "kimmy_swarm.cli", *args]


def _slice(tmp_path: Path) -> Path:
    if not ICLR.is_file():
        pytest.skip(f"the shared corpus is not at {ICLR}")
    # ten papers, two of which mention 'stochastic' (twenty took CI over 5 minutes)
    records = [r for r in json.loads(ICLR.read_text()) if r["title"] != "No Title"][:10]
    path = tmp_path / "slice.json"
    path.write_text(json.dumps(records))
    return path


def _finished_subagents(runs: Path) -> set[str]:
    if not (runs / "kimmy.db").is_file():
        return set()
    with RunStore(runs, create=False) as store:
        listed = store.list_runs(1)
        return store.done_ids(listed[0].run_id) - {ORCHESTRATOR_ID} if listed else set()


def _calls(runs: Path) -> dict[str, int]:
    traj = load_trajectory("latest", runs)
    return {k: len(e.model_calls) for k, e in traj.episodes.items()}


def test_a_wide_goal_end_to_end_with_a_kill_and_a_resume(tmp_path: Path) -> None:
    corpus, runs, out = _slice(tmp_path), tmp_path / "runs", tmp_path / "out"
    run = _kimmy("swarm", GOAL, "--corpus", str(corpus), "--local", NAME, "--runs-dir",
                 str(runs), "--out", str(out), "--max-concurrency", "2", "--json")  # fmt: skip
    proc = subprocess.Popen(run, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    killed: dict[str, int] = {}
    try:
        deadline = time.monotonic() + 1_500  # a bound for a hung run, not a speed check
        while proc.poll() is None and time.monotonic() < deadline:
            if _finished_subagents(runs):
                proc.send_signal(signal.SIGKILL)
                proc.wait(timeout=30)
                killed = _calls(runs)
                break
            time.sleep(0.5)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    stderr = proc.stderr.read().decode() if proc.stderr else ""
    assert killed, f"no sub-agent finished before the run ended or timed out:\n{stderr[-2000:]}"
    done_before = _finished_subagents(runs)
    resumed = subprocess.run(_kimmy("resume", "latest", "--runs-dir", str(runs), "--json"),
                             cwd=ROOT, capture_output=True, text=True, timeout=1_500)  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    after = _calls(runs)
    assert {k: after[k] for k in done_before} == {k: killed[k] for k in done_before}

    with RunStore(runs, create=False) as store:
        stored = store.load_run("latest")
    assert stored.status.value == "completed"
    for turn in stored.turns[ORCHESTRATOR_ID]:  # every call the model made is a valid call
        for message in turn.messages:
            for call in message.get("tool_calls") or ():
                name = call["function"]["name"]
                assert name in TOOLS, name
                TOOLS[name].model_validate(json.loads(call["function"]["arguments"]))
    made = stored.results[ORCHESTRATOR_ID].output["agents"]  # name -> its system prompt
    assert made and all(prompt.strip() for prompt in made.values())  # its own sub-agents
    roles = {r.role for k, r in stored.results.items() if k != ORCHESTRATOR_ID}
    assert roles and roles <= set(made)

    answer = (out / "answer.md").read_text()
    titles = {title_key(p.title) for p in load_papers(corpus)}
    rows: list[dict[str, Any]] = parse_answer(answer)
    assert rows and all(title_key(r.get("title", "")) in titles for r in rows), answer

    shown = subprocess.run(_kimmy("show", "latest", "--runs-dir", str(runs)), cwd=ROOT,
                           capture_output=True, text=True, timeout=120)  # fmt: skip
    assert shown.returncode == 0 and "orchestration" in shown.stdout
    assert "created" in shown.stdout and "spawned" in shown.stdout, shown.stdout
