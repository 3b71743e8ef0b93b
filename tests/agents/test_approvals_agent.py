"""A sub-agent's tool calls that wait for a person (`swarm.approvals`), through the one agent
loop and through an offline procedure: a tool, a role or the run's policy asks; an approval
with edited arguments runs the edit; a denial goes back to the model as the tool's error."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from kimmy_swarm.agents import Role, ToolBox, install
from kimmy_swarm.agents.toolbox import make_tool
from kimmy_swarm.cli.app import main
from kimmy_swarm.swarm import ApprovalPolicy, RunConfig, Swarm
from kimmy_swarm.swarm.errors import RunNotFoundError
from kimmy_swarm.swarm.events import ToolCalled
from kimmy_swarm.swarm.llm import ScriptedChat
from tests.support.summing_role import SUMMER, Sink, summing_tools, tool_turn

ANSWER = json.dumps({"numbers": [1, 4, 9], "total": 14})


def _run_in_thread(swarm: Swarm, run_id: str) -> tuple[threading.Thread, dict[str, Any]]:
    box: dict[str, Any] = {}
    plan = {"subtasks": [{"id": "s1", "role": "summer", "inputs": {"key": "primes"}}]}
    thread = threading.Thread(target=lambda: box.update(result=swarm.run_sync(plan, run_id=run_id)))
    thread.start()
    return thread, box


def _wait_for_call(runs_dir: Path, run_id: str) -> Any:
    """The run's first waiting call, as `kimmy approvals` would show it."""
    watcher = Swarm(runs_dir=runs_dir)
    for _ in range(3000):  # up to 30 s on a loaded machine
        try:
            found = watcher.approvals(run_id, pending=True)
        except RunNotFoundError:
            found = []
        if found:
            return watcher, found[0]
        time.sleep(0.01)
    raise AssertionError("no call waits")


def _summing(
    model: Any, runs_dir: Path, tools: ToolBox, role: Role = SUMMER, **config: Any
) -> tuple[Swarm, Sink]:
    sink = Sink()
    run_config = RunConfig(max_retries=0, **config)
    swarm = Swarm(model=model, sinks=[sink], runs_dir=runs_dir, config=run_config)
    install(swarm, [role], tools)
    return swarm, sink


def test_an_edited_approval_runs_the_edit_in_the_agent_loop(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = ScriptedChat([tool_turn("lookup", {"key": "primes"}), ANSWER])
    policy = ApprovalPolicy(tools=("lookup",))
    swarm, sink = _summing(model, tmp_path, summing_tools(), approvals=policy)
    thread, box = _run_in_thread(swarm, "edit")
    watcher, call = _wait_for_call(tmp_path, "edit")
    assert (call.tool, call.arguments, call.subtask_id) == ("lookup", {"key": "primes"}, "s1")
    watcher.approve("edit", call.call_id, arguments={"key": "squares"}, by="cli")
    thread.join(60)
    assert box["result"].results["s1"].output == {"numbers": [1, 4, 9], "total": 14}
    tool_message = model.calls[1][0][-1]
    assert tool_message["role"] == "tool" and json.loads(tool_message["content"]) == [1, 4, 9]
    (called,) = [e for e in sink.events if isinstance(e, ToolCalled)]
    assert called.ok
    # the sub-agent's transcript shows the wait and the answer
    assert main(["show", "edit", "--agent", "s1", "--runs-dir", str(tmp_path)]) == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert 'a1: lookup waits for approval {"key": "primes"}' in shown
    assert 'a1: approved by cli with arguments {"key": "squares"}' in shown


def test_a_denial_is_the_tools_error_the_model_reads(tmp_path: Path) -> None:
    model = ScriptedChat([tool_turn("lookup", {"key": "primes"}), ANSWER])
    box_ = summing_tools()
    guarded = ToolBox([make_tool(box_["lookup"].fn, name="lookup", requires_approval=True),
                       box_["add"]])  # fmt: skip
    swarm, sink = _summing(model, tmp_path, guarded)
    thread, _ = _run_in_thread(swarm, "deny")
    watcher, call = _wait_for_call(tmp_path, "deny")
    watcher.deny("deny", call.call_id, "the keys are private", by="dashboard")
    thread.join(60)
    told = model.calls[1][0][-1]["content"]
    assert told.startswith("error: CallDenied:") and "the keys are private" in told
    (called,) = [e for e in sink.events if isinstance(e, ToolCalled)]
    assert not called.ok and "denied (dashboard)" in called.error


def test_a_role_that_asks_makes_its_procedure_wait_in_its_thread(tmp_path: Path) -> None:
    asking = SUMMER.derive(requires_approval=True)
    swarm, _ = _summing(None, tmp_path, summing_tools(), role=asking)
    thread, box = _run_in_thread(swarm, "proc")
    watcher, first = _wait_for_call(tmp_path, "proc")
    assert first.tool == "lookup"
    watcher.approve("proc", first.call_id)
    for _ in range(3000):  # the procedure's second call asks in its turn
        pending = watcher.approvals("proc", pending=True)
        if pending:
            break
        time.sleep(0.01)
    assert pending[0].tool == "add" and pending[0].arguments == {"numbers": [2, 3, 5, 7]}
    watcher.approve("proc", pending[0].call_id)
    thread.join(60)
    assert box["result"].results["s1"].output == {"numbers": [2, 3, 5, 7], "total": 17}


@pytest.mark.parametrize("pattern", ["lookup", "look*"])
def test_the_policy_names_tools_by_name_or_pattern(pattern: str) -> None:
    assert ApprovalPolicy(tools=(pattern,)).covers("lookup", "summer")
    assert not ApprovalPolicy(tools=(pattern,)).covers("add", "summer")
    assert ApprovalPolicy(roles=("summer",)).covers("add", "summer")
