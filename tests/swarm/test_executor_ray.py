"""The Ray executor on a real local multi-node Ray cluster (head + 3 nodes, custom resources),
against the loopback OpenAI-compatible server: same results and events as the local executor,
work spread over the nodes, a node lost mid-run survived with every subtask committed once.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from kimmy_swarm.swarm import ConfigError, Plan, Subtask, SubtaskContext, Swarm
from kimmy_swarm.swarm.errors import ModelServerError, SpawnError
from kimmy_swarm.swarm.llm import OpenAIChat
from kimmy_swarm.swarm.store import RunStore
from tests.support.openai_server import OpenAIServer, delay

ray = pytest.importorskip("ray")
from ray.cluster_utils import Cluster  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cluster() -> Any:
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
    for i in range(3):
        c.add_node(num_cpus=1, resources={f"node{i}": 1})
    # The hosts import this module's workers by name, as pytest imported it.
    path = os.pathsep.join([str(Path(__file__).parent), str(ROOT)])
    ray.init(
        address=c.address,
        include_dashboard=False,
        logging_level="ERROR",
        runtime_env={"env_vars": {"PYTHONPATH": path}},
    )
    yield c
    ray.shutdown()
    c.shutdown()


@pytest.fixture(scope="module")
def server() -> Any:
    with OpenAIServer() as srv:  # echoes the last user message
        yield srv


# --- workers (module level: the hosts import them by reference) -----------------------------


async def chat_worker(ctx: SubtaskContext) -> dict[str, Any]:
    r = await ctx.model.chat([{"role": "user", "content": f"{ctx.id}:{ctx.inputs.get('i')}"}])
    return {"text": r.content, "upstream": sorted(ctx.upstream), "attempt": ctx.attempt}


async def slow_then_fast(ctx: SubtaskContext) -> str:
    if ctx.attempt == 1:
        await asyncio.sleep(30)
    return "second try"


async def flaky(ctx: SubtaskContext) -> str:
    if ctx.attempt == 1:
        raise ModelServerError("server hiccup", status=502)
    return "recovered"


async def broken(ctx: SubtaskContext) -> str:
    raise ValueError(f"bad input in {ctx.id}")


async def agent(ctx: SubtaskContext) -> str:
    await ctx.model.chat([{"role": "user", "content": "plan"}])
    ctx.record_tool("search", step=1, latency_s=0.01)
    ctx.record_step(1, policy="model", tools=["search"], outcome="tools")
    ctx.record_step(2, policy="model", outcome="answer")
    if ctx.inputs.get("spawn"):
        ctx.spawn([{"id": f"{ctx.id}.child", "role": "chat"}])
    if ctx.inputs.get("bad_spawn"):
        ctx.spawn([{"id": f"{ctx.id}.child", "role": "nobody"}])
    return "answered"


ROLES = {"chat": chat_worker, "slow": slow_then_fast, "flaky": flaky, "broken": broken}


def fanout_plan(n: int, reducers: int = 10) -> Plan:
    leaves = [Subtask(id=f"w{i}", role="chat", inputs={"i": i}) for i in range(n - reducers)]
    per = len(leaves) // reducers
    tops = [
        Subtask(id=f"r{k}", role="chat", depends_on=[s.id for s in leaves[k * per : (k + 1) * per]])
        for k in range(reducers)
    ]
    return Plan(goal=f"fan out {n}", subtasks=leaves + tops)


def outputs(result: Any) -> dict[str, Any]:
    return {k: (r.status.value, r.output, r.attempts) for k, r in result.results.items()}


# --- tests ------------------------------------------------------------------------------------


def test_1000_subagents_match_local_and_spread_over_nodes(
    cluster: Any, server: Any, tmp_path: Path
) -> None:
    plan = fanout_plan(1000)
    model = OpenAIChat(server.base_url, "test-model")
    local = Swarm(model=model, roles=ROLES, max_concurrency=256).run_sync(plan)
    with Swarm(
        model=model, roles=ROLES, max_concurrency=256, executor="ray", runs_dir=tmp_path
    ) as swarm:
        result = swarm.run_sync(plan)
        stats = swarm.executor.host_stats()
        with RunStore(tmp_path) as store:
            called = list(store.events(result.run_id, types=["model_called"]))
            done = store.done_ids(result.run_id)
    assert result.status.value == "completed"
    assert outputs(result) == outputs(local)
    assert result.usage == local.usage and result.usage.model_calls == 1000
    assert len(called) == 1000 and all(e.usage.total_tokens > 0 for e in called)
    assert done == set(result.results)
    nodes = {s["node_id"] for s in stats}
    assert len(nodes) == 3  # one host per node with CPUs; the 0-CPU head runs none
    assert sum(s["attempts"] for s in stats) == 1000
    # Least-outstanding spreads the load: every host runs a fair part of it. Not an equal
    # part: a host slowed by the machine's other work finishes fewer and so gets fewer (one
    # ran 194 of 1,000 on a CI machine building llama.cpp beside the tests), as it should.
    assert min(s["attempts"] for s in stats) >= 100


def test_timeouts_retries_and_errors_behave_as_locally(cluster: Any) -> None:
    plan = Plan(
        goal="faults",
        subtasks=[
            Subtask(id="slow", role="slow", timeout_s=0.5),
            Subtask(id="flaky", role="flaky"),
            Subtask(id="broken", role="broken"),
        ],
    )
    runs = {}
    for executor in ("local", "ray"):
        swarm = Swarm(roles=ROLES, max_retries=1, executor=executor, seed=1)
        try:
            runs[executor] = swarm.run_sync(plan)
        finally:
            swarm.close()
    for result in runs.values():
        res = result.results
        assert (res["slow"].status.value, res["slow"].output, res["slow"].attempts) == (
            "done",
            "second try",
            2,
        )
        assert (res["flaky"].status.value, res["flaky"].attempts) == ("done", 2)
        assert res["broken"].status.value == "failed" and res["broken"].attempts == 1
        assert res["broken"].error.type == "ValueError"
        assert res["broken"].error.message == "bad input in broken"
    assert "raised on a Ray host" in runs["ray"].results["broken"].error.traceback


def test_agent_events_and_spawns_reach_the_driver(
    cluster: Any, server: Any, tmp_path: Path
) -> None:
    model = OpenAIChat(server.base_url, "test-model")
    plan = Plan(
        goal="agents",
        subtasks=[
            Subtask(id="a", role="agent", inputs={"spawn": True}),
            Subtask(id="b", role="agent", inputs={"bad_spawn": True}),
        ],
    )
    events: list[Any] = []

    class Collect:
        def handle(self, event: Any) -> None:
            events.append(event)

    with Swarm(
        model=model,
        roles={**ROLES, "agent": agent},
        executor="ray",
        runs_dir=tmp_path,
        sinks=[Collect()],
    ) as swarm:
        result = swarm.run_sync(plan)
    kinds = Counter(e.type for e in events)
    assert kinds["agent_step"] == 4 and kinds["tool_called"] == 2
    assert kinds["model_called"] == 3  # a, b, and a's spawned child
    assert kinds["subtasks_spawned"] == 1 and kinds["spawn_refused"] == 1
    assert result.results["a.child"].status.value == "done"
    failed = result.results["b"]
    assert failed.status.value == "failed" and failed.error.type == SpawnError.__name__


def test_node_lost_mid_run_commits_every_subtask_once(cluster: Any, tmp_path: Path) -> None:
    extra = cluster.add_node(num_cpus=1, resources={"extra": 1})
    with OpenAIServer(default=delay(0.05)) as srv:
        model = OpenAIChat(srv.base_url, "test-model")
        plan = fanout_plan(1000)
        removed: list[asyncio.Future[Any]] = []

        class KillAfter:
            def handle(self, event: Any) -> None:
                if event.type == "subtask_finished" and not removed:
                    finished.append(event)
                    if len(finished) >= 150:
                        loop = asyncio.get_running_loop()
                        removed.append(loop.run_in_executor(None, cluster.remove_node, extra))

        finished: list[Any] = []
        with Swarm(
            model=model,
            roles=ROLES,
            max_concurrency=200,
            executor="ray",
            runs_dir=tmp_path,
            sinks=[KillAfter()],
        ) as swarm:
            result = swarm.run_sync(plan)
            executor = swarm.executor
            with RunStore(tmp_path) as store:
                finished_events = list(store.events(result.run_id, types=["subtask_finished"]))
                done = store.done_ids(result.run_id)
    assert removed, "the node was never removed"
    assert executor.lost_hosts >= 1 and executor.resubmits >= 1
    assert result.status.value == "completed"
    per_subtask = Counter(e.result.id for e in finished_events)
    assert set(per_subtask) == {s.id for s in plan.subtasks}
    assert set(per_subtask.values()) == {1}  # committed exactly once each
    assert done == set(per_subtask)
    assert all(r.attempts == 1 for r in result.results.values())  # a resubmit is no attempt


def test_unknown_executor_names_the_value() -> None:
    with pytest.raises(ConfigError, match=r"unknown executor 'dask'; allowed: local, ray"):
        Swarm(executor="dask")


_NO_RAY = "import sys; sys.modules['ray'] = None; "


def test_without_ray_the_error_says_how_to_install_it(tmp_path: Path) -> None:
    code = _NO_RAY + "from kimmy_swarm.swarm import Swarm; Swarm(executor='ray')"
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert "pip install 'kimmy-swarm[ray]'" in proc.stderr
    plan = tmp_path / "plan.json"
    plan.write_text('{"goal": "g", "subtasks": [{"id": "a", "role": "writer"}]}')
    code = _NO_RAY + f"from kimmy_swarm.cli.app import main; sys.exit(main(['run', {str(plan)!r}, "
    code += "'--executor', 'ray', '--ray-address', 'auto']))"
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert proc.returncode == 2
    assert "executor 'ray' needs Ray" in proc.stderr
    assert "pip install 'kimmy-swarm[ray]'" in proc.stderr
