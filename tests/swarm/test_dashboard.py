"""The dashboard's API over stores made by real runs: the runs list, the graph (statuses,
orchestrator turns, critical path), aggregation at 10,000 subtasks, the live stream while a
run goes, transcripts, rewards, and 404s for what the store does not hold."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
import httpx
from fastapi.testclient import TestClient

from kimmy_swarm.swarm import Plan, Subtask, Swarm
from kimmy_swarm.swarm.context import SubtaskContext
from kimmy_swarm.swarm.dashboard import BackgroundServer, create_app
from kimmy_swarm.swarm.dashboard.state import RunView
from kimmy_swarm.swarm.llm.scripted import ScriptedChat

RUN = "20250101-000000-dash01"


def local(app: Any) -> TestClient:
    """A client that names the loopback host, as a browser on this machine does."""
    return TestClient(app, base_url="http://127.0.0.1:8765")


WORKERS = ["w0", "w1", "w2"]


async def boss(ctx: SubtaskContext) -> str:
    """An orchestrator: one turn spawns three workers, then it waits for them."""
    ctx.spawn([{"id": i, "role": "work", "instructions": f"task {i}"} for i in WORKERS])
    ctx.record_turn([{"role": "assistant", "content": "spawning three"}], spawned=WORKERS)
    await ctx.wait(WORKERS)
    return "all done"


async def work(ctx: SubtaskContext) -> str:
    answer = await ctx.model.chat([{"role": "user", "content": f"please do {ctx.id}"}])
    return answer.content or ""


async def final(ctx: SubtaskContext) -> int:
    return len(ctx.upstream)


ORCHESTRATED = Plan(
    goal="a small orchestrated run",
    subtasks=[
        Subtask(id="boss", role="boss"),
        Subtask(id="end", role="final", depends_on=["boss"]),
    ],
)


@pytest.fixture
def finished_run(tmp_path: Path) -> Path:
    model = ScriptedChat(["answer one", "answer two", "answer three"])
    swarm = Swarm(
        runs_dir=tmp_path, model=model, roles={"boss": boss, "work": work, "final": final}
    )
    result = swarm.run_sync(ORCHESTRATED, run_id=RUN)
    assert result.ok
    return tmp_path


@pytest.fixture
def client(finished_run: Path) -> Iterator[TestClient]:
    with local(create_app(finished_run)) as c:
        yield c


def test_the_runs_list_shows_the_stored_run(client: TestClient) -> None:
    (run,) = client.get("/api/runs").json()
    assert run["run_id"] == RUN and run["status"] == "completed"
    assert (run["n_subtasks"], run["n_done"]) == (5, 5)


def test_a_run_has_its_counters(client: TestClient) -> None:
    c = client.get(f"/api/runs/{RUN}").json()["counters"]
    assert c["status"] == "completed"
    assert (c["total"], c["done"], c["in_flight"], c["failed"]) == (5, 5, 0, 0)
    assert c["limit"] == 64  # the run's max_concurrency
    assert c["model_calls"] == 3


def test_the_graph_puts_the_orchestrator_turn_between_it_and_what_it_spawned(
    client: TestClient,
) -> None:
    g = client.get(f"/api/runs/{RUN}/graph").json()
    assert g["mode"] == "nodes"
    nodes = {n["id"]: n for n in g["nodes"]}
    assert set(nodes) == {"boss", "end", "boss#t1", *WORKERS}
    assert {n["status"] for n in nodes.values()} == {"done"}
    assert nodes["boss#t1"]["kind"] == "turn"
    edges = {(e["source"], e["target"]): e["kind"] for e in g["edges"]}
    assert edges[("boss", "boss#t1")] == "spawn"
    assert {edges[("boss#t1", w)] for w in WORKERS} == {"spawn"}
    assert edges[("boss", "end")] == "dep"
    # stages left to right: each edge goes to a later column
    assert all(nodes[a]["x"] < nodes[b]["x"] for a, b in edges)
    path = g["critical_path"]
    assert path[:2] == ["boss", "boss#t1"] and path[2] in WORKERS
    assert [n for n in nodes if nodes[n]["critical"]] == [n for n in nodes if n in path]


def test_a_sub_agent_shows_its_conversation(client: TestClient) -> None:
    body = client.get(f"/api/runs/{RUN}/agents/w1").json()
    assert body["node"]["parent"] == "boss#t1" and body["node"]["attempts"] == 1
    t = body["transcript"]
    assert (t["subtask_id"], t["role"], t["status"]) == ("w1", "work", "done")
    entries = t["attempts"][0]["entries"]
    call = next(e for e in entries if e["kind"] == "model_call")
    assert call["messages"] == [{"role": "user", "content": "please do w1"}]
    assert call["response"]["content"].startswith("answer")
    assert entries[-1]["kind"] == "finished"


def test_an_orchestrator_turn_shows_the_orchestrator_conversation(client: TestClient) -> None:
    body = client.get(f"/api/runs/{RUN}/agents/boss%23t1").json()
    assert body["node"]["kind"] == "turn" and body["transcript"]["subtask_id"] == "boss"


@pytest.mark.parametrize(
    "url",
    [
        "/api/runs/nope",
        "/api/runs/nope/graph",
        "/api/runs/nope/stream",
        f"/api/runs/{RUN}/agents/nobody",
        f"/api/runs/{RUN}/agents/..%2F..%2Fkimmy.db",
        "/static/..%2Fapp.py",
        "/static/nothing.js",
    ],
)
def test_what_the_store_does_not_hold_is_a_404_naming_it(client: TestClient, url: str) -> None:
    resp = client.get(url)
    assert resp.status_code == 404


def test_the_page_and_its_assets_are_served(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200 and "/static/dashboard.js" in page.text
    js = client.get("/static/dashboard.js")
    assert js.headers["content-type"].startswith("text/javascript")
    assert "innerHTML" not in js.text  # every text goes in through textContent


def test_rewards_show_for_a_finished_run_and_a_scoring_error_is_text(finished_run: Path) -> None:
    scored = local(create_app(finished_run, rewards=lambda run_id: {"total": 0.5}))
    assert scored.get(f"/api/runs/{RUN}/rewards").json()["rewards"] == {"total": 0.5}

    def broken(run_id: str) -> dict[str, Any]:
        raise ValueError(f"no grader for {run_id}")

    resp = local(create_app(finished_run, rewards=broken)).get(f"/api/runs/{RUN}/rewards")
    assert resp.status_code == 200
    assert resp.json()["error"] == f"ValueError: no grader for {RUN}"


def test_a_big_graph_is_drawn_by_stage_and_role_with_counts_that_add_up(tmp_path: Path) -> None:
    async def one_step(ctx: SubtaskContext) -> int:
        # The critical path is weighted by measured durations: the writer takes longer than
        # any one-step sub-agent can on a loaded machine, so the path through it is longest.
        if ctx.id == "end":
            await asyncio.sleep(1.5)
        return 1

    n = 9_998
    subtasks = [Subtask(id="root", role="plan")]
    subtasks += [
        Subtask(id=f"w{i}", role="work" if i % 2 else "check", depends_on=["root"])
        for i in range(n)
    ]
    subtasks.append(Subtask(id="end", role="write", depends_on=[f"w{i}" for i in range(0, n, 2)]))
    roles = dict.fromkeys(("plan", "work", "check", "write"), one_step)
    Swarm(runs_dir=tmp_path, max_concurrency=512, roles=roles).run_sync(
        Plan(goal="big", subtasks=subtasks), run_id=RUN
    )
    g = local(create_app(tmp_path)).get(f"/api/runs/{RUN}/graph").json()
    assert g["mode"] == "groups" and g["node_count"] == 10_000
    groups = {n["id"]: n for n in g["nodes"]}
    assert set(groups) == {"s0:plan", "s1:work", "s1:check", "s2:write"}
    assert sum(n["count"] for n in groups.values()) == 10_000
    assert sum(sum(n["counts"].values()) for n in groups.values()) == 10_000
    assert groups["s1:work"]["counts"] == {"done": n // 2}
    edges = {(e["source"], e["target"]): e["count"] for e in g["edges"]}
    assert edges == {("s0:plan", "s1:work"): n // 2, ("s0:plan", "s1:check"): n // 2,
                     ("s1:check", "s2:write"): n // 2}  # fmt: skip
    assert [groups[k]["critical"] for k in ("s0:plan", "s1:check", "s2:write")] == [True] * 3


def test_find_sub_agents_by_id_status_and_group(tmp_path: Path) -> None:
    async def one_step(ctx: SubtaskContext) -> int:
        if ctx.id == "w17":
            raise ValueError("w17 breaks")
        return 1

    subtasks = [Subtask(id=f"w{i}", role="work") for i in range(400)]
    Swarm(runs_dir=tmp_path, roles={"work": one_step}, max_retries=0).run_sync(
        Plan(goal="find", subtasks=subtasks), run_id=RUN
    )
    c = local(create_app(tmp_path))
    found = c.get(f"/api/runs/{RUN}/agents", params={"q": "W1", "limit": 5}).json()
    assert found["total"] == 111  # w1, w10..w19, w100..w199
    assert [a["id"] for a in found["agents"]] == ["w17", "w1", "w10", "w100", "w101"]
    assert found["agents"][0]["status"] == "failed"  # failures first, then by id
    assert all(a["age_s"] is not None and a["age_s"] >= 0 for a in found["agents"])
    failed = c.get(f"/api/runs/{RUN}/agents", params={"status": "failed"}).json()
    assert [a["id"] for a in failed["agents"]] == ["w17"]
    group = c.get(f"/api/runs/{RUN}/agents", params={"group": "s0:work", "limit": 1000}).json()
    assert group["total"] == 400 and len(group["agents"]) == 400
    bad = c.get(f"/api/runs/{RUN}/agents", params={"status": "sleeping"})
    assert bad.status_code == 422 and "running" in bad.text  # names what is allowed
    missing = c.get(f"/api/runs/{RUN}/agents", params={"group": "s9:nope"})
    assert missing.status_code == 404 and "'s9:nope'" in missing.json()["detail"]
    assert c.get(f"/api/runs/{RUN}/agents", params={"limit": 0}).status_code == 422


def test_running_sub_agents_are_listed_longest_running_first() -> None:
    view = RunView(RUN, [{"id": k, "role": "r"} for k in ("a", "b", "c")], {})
    for seq, (sid, ts) in enumerate([("b", 100.0), ("a", 50.0), ("c", 10.0)]):
        view.apply(seq, seq, json.dumps([{"type": "subtask_started", "seq": seq, "ts": ts,
                                          "subtask_id": sid, "attempt": 1}]))  # fmt: skip
    done = {"id": "c", "status": "done", "timings": {"finished_at": 20.0, "started_at": 10.0}}
    view.apply(3, 3, json.dumps([{"type": "subtask_finished", "seq": 3, "ts": 20.0,
                                  "result": done}]))  # fmt: skip

    found = view.find(now=200.0)
    assert [(a["id"], a["status"]) for a in found["agents"]] == [
        ("a", "running"),
        ("b", "running"),
        ("c", "done"),
    ]
    assert [a["age_s"] for a in found["agents"]] == [150.0, 100.0, 10.0]
    assert view.find(query="B", now=200.0)["total"] == 1


def _deltas(resp: httpx.Response) -> Iterator[tuple[str, dict[str, Any]]]:
    """(event, data) of each server-sent event of a streaming response."""
    kind = None
    for line in resp.iter_lines():
        if line.startswith("event: "):
            kind = line[len("event: ") :]
        elif line.startswith("data: ") and kind is not None:
            yield kind, json.loads(line[len("data: ") :])


def test_the_stream_delivers_changes_while_the_run_goes(tmp_path: Path) -> None:
    gates = {f"g{i}": threading.Event() for i in range(3)}

    async def gated(ctx: SubtaskContext) -> str:
        await asyncio.to_thread(gates[ctx.id].wait, 30)
        return ctx.id

    swarm = Swarm(runs_dir=tmp_path, roles={"gated": gated})
    plan = Plan(goal="live", subtasks=[Subtask(id=g, role="gated") for g in gates])
    runner = threading.Thread(target=swarm.run_sync, args=(plan,), kwargs={"run_id": RUN})
    runner.start()
    try:
        _wait_for_store(tmp_path)
        with BackgroundServer(create_app(tmp_path, poll_s=0.05)) as srv:
            seen: list[int] = []
            with httpx.stream("GET", f"{srv.url}/api/runs/{RUN}/stream", timeout=30) as resp:
                assert resp.headers["content-type"].startswith("text/event-stream")
                for kind, data in _deltas(resp):
                    if kind == "end":
                        break
                    seen.append(data["counters"]["done"])
                    # release one sub-agent per delta seen: each finish is news
                    for gate in gates.values():
                        if not gate.is_set():
                            gate.set()
                            break
    finally:
        for gate in gates.values():
            gate.set()
        runner.join(30)
    assert seen[0] < 3 and seen[-1] == 3
    assert seen == sorted(seen) and len(set(seen)) >= 2  # counts changed while it ran


def _wait_for_store(runs_dir: Path) -> None:
    import time

    from kimmy_swarm.swarm.store import RunStore

    for _ in range(500):
        if (runs_dir / "kimmy.db").is_file():
            with RunStore(runs_dir) as store:
                if RUN in store.run_ids():
                    return
        time.sleep(0.01)
    raise AssertionError("the run never reached the store")


def test_a_resumed_run_shows_what_was_running_as_pending_again() -> None:
    view = RunView(RUN, [{"id": "a", "role": "r"}], {"max_concurrency": 2})
    batch = [
        {"type": "run_started", "seq": 0, "ts": 1.0, "settings": {"max_concurrency": 2}},
        {"type": "subtask_started", "seq": 1, "ts": 1.0, "subtask_id": "a", "attempt": 1},
    ]
    view.apply(0, 1, json.dumps(batch))
    assert view.counters(now=1.0)["in_flight"] == 1
    again = [{"type": "run_started", "seq": 2, "ts": 5.0, "settings": {"max_concurrency": 4}}]
    view.apply(2, 2, json.dumps(again))
    c = view.counters(now=5.0)
    assert (c["in_flight"], c["pending"], c["limit"]) == (0, 1, 4)
    assert view.changed_since(1)[0].status == "pending"


@pytest.mark.parametrize(
    "host", ["127.0.0.1:8765", "localhost:8765", "LOCALHOST", "[::1]:8765", "127.0.0.2"]
)
def test_loopback_hosts_are_answered(finished_run: Path, host: str) -> None:
    c = local(create_app(finished_run))
    assert c.get("/api/runs", headers={"host": host}).status_code == 200


@pytest.mark.parametrize(
    "host", ["attacker.example:8765", "attacker.example", "127.0.0.1.attacker.example", "",
             "192.168.1.5:8765", "localhost.attacker.example"],
)  # fmt: skip
def test_any_other_host_is_refused_naming_it_dns_rebinding(finished_run: Path, host: str) -> None:
    resp = local(create_app(finished_run)).get("/api/runs", headers={"host": host})
    assert resp.status_code == 400
    assert resp.json()["detail"] == (
        f"host {host!r} is not served: the dashboard answers loopback hosts and those given "
        "with --allowed-host"
    )
    assert RUN not in resp.text


def test_allowed_hosts_are_the_given_names_and_a_specific_bound_address(
    finished_run: Path,
) -> None:
    from kimmy_swarm.swarm.dashboard import allowed_hosts

    assert allowed_hosts("0.0.0.0", ["Dash.Lab:80"]) == {"dash.lab"}
    assert allowed_hosts("192.168.1.5") == {"192.168.1.5"}
    assert allowed_hosts("::") == frozenset() and allowed_hosts("[fe80::1]") == {"fe80::1"}
    c = local(create_app(finished_run, allowed_hosts=allowed_hosts("0.0.0.0", ["dash.lab"])))
    assert c.get("/api/runs", headers={"host": "dash.lab:8765"}).status_code == 200
    assert c.get("/api/runs", headers={"host": "other.lab"}).status_code == 400


def test_a_state_change_from_another_origin_is_refused() -> None:
    from kimmy_swarm.swarm.dashboard import HostGuard

    seen: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append(scope["method"])
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    c = TestClient(HostGuard(app), base_url="http://localhost:8765")
    evil = {"origin": "http://attacker.example"}
    assert c.post("/x", headers=evil).status_code == 403
    assert c.post("/x", headers={"origin": "null"}).status_code == 403
    assert c.get("/x", headers=evil).status_code == 204  # reading is the Host check's job
    assert c.post("/x", headers={"origin": "http://localhost:8765"}).status_code == 204
    assert c.post("/x").status_code == 204  # no Origin: not a browser's cross-site request
    assert seen == ["GET", "POST", "POST"]
