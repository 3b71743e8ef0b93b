"""200 sub-agents of one run share one MCP server's session under its cap of 8 calls in
flight: every call answered once, to the sub-agent that made it, and recorded."""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from kimmy_swarm.agents import Answer, Attempt, Role, install
from kimmy_swarm.agents.tools.mcp import McpConfig, McpHost
from kimmy_swarm.swarm import Plan, Subtask, Swarm
from kimmy_swarm.swarm.store import RunStore

pytest.importorskip("mcp", reason="the MCP client needs the `mcp` extra")

SERVER = Path(__file__).parents[2] / "support" / "mcp_test_server.py"
N = 200


def _echo(run: Attempt) -> Answer:
    """The sub-agent's procedure: one call of the server's `echo_slow` with its own text."""
    said = run.call("t.echo_slow", text=run.inputs["text"], seconds=0.02)
    return Answer(answer=said)


def test_two_hundred_sub_agents_share_one_server_under_its_cap(tmp_path: Path) -> None:
    entry = {"command": sys.executable, "args": [str(SERVER), str(tmp_path)], "max_in_flight": 8}
    role = Role("echoer", "You echo with t.echo_slow.", Answer, ("t.echo_slow",), _echo)
    runs = tmp_path / "runs"
    with (
        McpHost(McpConfig.from_json({"mcpServers": {"t": entry}})) as host,
        ThreadPoolExecutor(64) as threads,
    ):
        swarm = Swarm(runs_dir=runs, max_concurrency=64)
        install(swarm, [role], host.toolbox(), policy="offline", executor=threads)
        subtasks = [Subtask(id=f"e{i}", role="echoer", inputs={"text": f"call-{i}"})
                    for i in range(N)]  # fmt: skip
        plan = Plan(goal="echo", subtasks=subtasks)
        result = swarm.run_sync(plan, run_id="shared")
        swarm.close()
        stats = host.stats("t")
    answers = {k: r.output["answer"] for k, r in result.results.items()}
    assert result.status.value == "completed" and len(answers) == N
    for i in range(N):  # each sub-agent got the answer to its own call
        assert answers[f"e{i}"].startswith(f"call-{i} (peak ")
    peaks = {int(a.split("peak ")[1].rstrip(")")) for a in answers.values()}
    assert max(peaks) <= 8 and stats.peak_in_flight == 8  # the cap held, and was reached
    assert stats.calls == N and stats.errors == 0  # none lost, none made twice
    with RunStore(runs, create=False) as store:
        called = [e for e in store.events("shared", types=["tool_called"])]
    assert len(called) == N and all(e.ok and e.tool == "t.echo_slow" for e in called)
    assert len({e.subtask_id for e in called}) == N
