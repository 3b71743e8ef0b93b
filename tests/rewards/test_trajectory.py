"""Trajectories built from real stored runs: scripted swarms (spawns, a failure, a retry,
a refused spawn, a resume, model calls) and the review and analysis pipelines."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from pathlib import Path

import pytest

from kimmy_swarm.rewards.trajectory import (
    NEVER_STARTED,
    SCHEMA_VERSION,
    Trajectory,
    build_trajectory,
    load_trajectory,
)
from kimmy_swarm.swarm import Swarm
from kimmy_swarm.swarm import events as ev
from kimmy_swarm.swarm.context import SubtaskContext
from kimmy_swarm.swarm.errors import ConfigError, ModelTimeoutError, RunNotFoundError, SpawnError
from kimmy_swarm.swarm.limits import Backoff
from kimmy_swarm.swarm.llm import ChatResponse, ScriptedChat, TokenLogprob
from kimmy_swarm.swarm.schema import Usage
from kimmy_swarm.swarm.store import RunStore
from tests.agents.review.conftest import ICLR_JSON

TIMEOUT_S = 20.0
WORKERS = ["w0", "w1", "w2", "flaky", "broken", "empty", "s0"]


# --- a scripted swarm: spawns, a failure, a retry, a refused spawn -------------------------


async def lead(ctx: SubtaskContext) -> dict[str, int]:
    roles = {"flaky": "flaky", "broken": "broken", "empty": "empty", "s0": "split"}
    ctx.spawn([{"id": k, "role": roles.get(k, "work")} for k in WORKERS], feeds=["write"])
    with pytest.raises(SpawnError):
        ctx.spawn([{"id": "ghost", "role": "nobody"}])  # an unknown role: refused
    return {"spawned": len(WORKERS)}


async def work(ctx: SubtaskContext) -> dict[str, str]:
    for step in (1, 2):
        ctx.record_step(step, policy="offline", tools=["lookup"] * (step == 1), outcome="tools")
    ctx.record_tool("lookup", step=1, latency_s=0.001)
    return {"v": ctx.id}


async def flaky(ctx: SubtaskContext) -> str:
    if ctx.attempt == 1:
        raise ModelTimeoutError("slow server")  # retryable
    return "ok"


async def broken(ctx: SubtaskContext) -> str:
    raise ValueError("boom")


async def empty(ctx: SubtaskContext) -> None:
    return None


async def split(ctx: SubtaskContext) -> str:
    ctx.spawn([{"id": f"{ctx.id}.a", "role": "work"}])
    return "split"


async def writer(ctx: SubtaskContext) -> list[str]:
    return sorted(k for k, v in ctx.upstream.items() if v)


ROLES = {
    "orchestrator": lead,
    "work": work,
    "flaky": flaky,
    "broken": broken,
    "empty": empty,
    "split": split,
    "writer": writer,
}
PLAN = {
    "goal": "scripted",
    "subtasks": [
        {"id": "lead", "role": "orchestrator"},
        {"id": "write", "role": "writer", "depends_on": ["lead"]},
    ],
}


@pytest.fixture(scope="module")
def scripted(tmp_path_factory: pytest.TempPathFactory) -> Trajectory:
    runs = tmp_path_factory.mktemp("scripted")
    with Swarm(
        runs_dir=runs, roles=ROLES, failure_policy="continue", backoff=Backoff(0.001, 0.001)
    ) as swarm:
        result = swarm.run_sync(PLAN, run_id="scripted-run")
    assert result.status.value == "partial"
    return load_trajectory("scripted", runs)


def test_episodes_follow_the_run_planned_then_spawned(scripted: Trajectory) -> None:
    assert list(scripted.episodes) == ["lead", "write", *WORKERS, "s0.a"]
    assert scripted.run_id == "scripted-run" and scripted.goal == "scripted"
    assert scripted.status == "partial"
    assert scripted.settings["failure_policy"] == "continue"
    eps = scripted.episodes
    assert {k: e.status for k, e in eps.items()} == {
        **dict.fromkeys(eps, "done"),
        "broken": "failed",
    }
    assert all(e.started for e in eps.values())
    assert {k for k, e in eps.items() if e.is_orchestrator} == {"lead", "s0"}
    assert eps["w0"].parent == "lead" and eps["s0.a"].parent == "s0" and eps["lead"].parent is None
    assert eps["write"].depends_on == ["lead", *WORKERS]  # the spawn's feeds included
    assert sorted(scripted.edges) == sorted([("lead", "write")] + [(k, "write") for k in WORKERS])
    assert scripted.sinks() == ["write", "s0.a"]
    assert scripted.started_at is not None and scripted.finished_at is not None
    assert scripted.started_at <= eps["lead"].started_at <= eps["write"].finished_at


def test_steps_attempts_tools_and_outputs(scripted: Trajectory) -> None:
    eps = scripted.episodes
    assert (eps["w0"].steps, eps["w0"].policy, eps["w0"].attempts) == (2, "offline", 1)
    assert [(t.tool, t.step, t.ok) for t in eps["w0"].tool_calls] == [("lookup", 1, True)]
    # no agent_step and no model call: one step for the attempt that ran
    assert (eps["flaky"].steps, eps["flaky"].attempts, eps["flaky"].policy) == (1, 2, None)
    assert (eps["broken"].attempts, eps["broken"].output_valid) == (1, False)
    assert eps["empty"].status == "done" and not eps["empty"].output_valid
    # used: a dependent finished done (even a useless output), or a sink that is done
    assert all(eps[k].output_used for k in [*WORKERS, "write", "s0.a", "lead"])
    assert scripted.outputs["write"] == ["flaky", "lead", "s0", "w0", "w1", "w2"]
    assert "broken" not in scripted.outputs and scripted.outputs["empty"] is None


def test_turns_record_granted_and_refused_spawns(scripted: Trajectory) -> None:
    turns = [(t.subtask_id, t.index, t.spawned, t.edges, bool(t.refused)) for t in scripted.turns]
    fed = [(k, "write") for k in WORKERS]
    assert turns == [
        ("lead", 0, WORKERS, fed, False),
        ("lead", 1, [], [], True),
        ("s0", 0, ["s0.a"], [], False),
    ]
    (refused,) = scripted.turns[1].refused
    assert "nobody" in refused


def test_stages_put_spawned_subagents_after_their_parent(scripted: Trajectory) -> None:
    assert scripted.stages() == [["lead"], WORKERS, ["write", "s0.a"]]


def test_trajectory_round_trips_through_json(scripted: Trajectory) -> None:
    text = scripted.model_dump_json()
    assert Trajectory.model_validate_json(text) == scripted
    assert scripted.schema_version == SCHEMA_VERSION == 1


def test_without_the_plan_only_spawned_dependencies_are_known(tmp_path: Path) -> None:
    with Swarm(runs_dir=tmp_path, roles=ROLES, failure_policy="continue") as swarm:
        swarm.run_sync(PLAN, run_id="r")
    with RunStore(tmp_path) as store:
        events = list(store.events("r"))
        full = build_trajectory(events, plan=store.load_run("r").plan)
    bare = build_trajectory(events)
    assert set(bare.episodes) == set(full.episodes)
    assert bare.episodes["write"].depends_on == WORKERS  # `lead` is in the plan only
    assert bare.episodes["s0.a"] == full.episodes["s0.a"]
    assert bare.stages()[0] == ["lead"]


def test_unstarted_subtasks_never_started(tmp_path: Path) -> None:
    async def fail(ctx: SubtaskContext) -> None:
        raise ValueError("nope")

    plan = {
        "subtasks": [
            {"id": "a", "role": "fail"},
            {"id": "b", "role": "work", "depends_on": ["a"]},
        ]
    }
    with Swarm(runs_dir=tmp_path, roles={"fail": fail, "work": work}) as swarm:
        swarm.run_sync(plan, run_id="r")
    traj = load_trajectory("r", tmp_path)
    b = traj.episodes["b"]
    assert (b.status, b.started, b.steps, b.attempts) == ("skipped", False, 0, 0)
    assert (b.started_at, b.finished_at, b.duration_s) == (None, None, 0.0)
    assert traj.stages() == [["a"]]
    # an event stream cut before anything ran (pending subtasks only)
    with RunStore(tmp_path) as store:
        first = next(iter(store.events("r")))
        cut = build_trajectory([first], plan=store.load_run("r").plan)
    assert {e.status for e in cut.episodes.values()} == {NEVER_STARTED}
    assert cut.status == "running" and cut.stages() == []


def test_load_trajectory_names_what_is_missing(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no runs stored"):
        load_trajectory("latest", tmp_path / "nowhere")
    with Swarm(runs_dir=tmp_path, roles=ROLES, failure_policy="continue") as swarm:
        swarm.run_sync(PLAN, run_id="only-run")
    with pytest.raises(RunNotFoundError):
        load_trajectory("other", tmp_path)


# --- model calls ------------------------------------------------------------------------------


async def test_model_calls_carry_usage_and_logprobs(tmp_path: Path) -> None:
    lp = [TokenLogprob(token="hi", logprob=-0.25, bytes=[104, 105])]
    usage = Usage(prompt_tokens=7, completion_tokens=2, total_tokens=9, model_calls=1)
    model = ScriptedChat(
        [ChatResponse(content="hi", usage=usage, logprobs=lp), ModelTimeoutError("slow"), "bye"]
    )

    async def chatty(ctx: SubtaskContext) -> str:
        first = await ctx.model.chat([{"role": "user", "content": "1"}], logprobs=True)
        with contextlib.suppress(ModelTimeoutError):
            await ctx.model.chat([{"role": "user", "content": "2"}])
        last = await ctx.model.chat([{"role": "user", "content": "3"}])
        return f"{first.content} {last.content}"

    swarm = Swarm(model=model, runs_dir=tmp_path, roles={"chatty": chatty})
    async with asyncio.timeout(TIMEOUT_S):
        await swarm.execute({"subtasks": [{"id": "c", "role": "chatty"}]}, run_id="m")
    swarm.close()
    ep = load_trajectory("m", tmp_path).episodes["c"]
    assert ep.steps == 3  # no agent_step events: one step per model call
    assert [m.error is not None for m in ep.model_calls] == [False, True, False]
    assert "ModelTimeoutError" in (ep.model_calls[1].error or "")
    assert ep.model_calls[0].logprobs == [  # no token id: the server gave none
        {"token": "hi", "logprob": -0.25, "bytes": [104, 105], "top_logprobs": [], "token_id": None}
    ]
    assert ep.model_calls[2].logprobs is None
    assert ep.usage.prompt_tokens == 7 + 0 + 0 and ep.usage.model_calls == 2


# --- a resumed run: two sessions ----------------------------------------------------------


class DoneIds:
    """A sink: ids whose `done` result is committed (sinks see events after the commit)."""

    def __init__(self) -> None:
        self.ids: set[str] = set()

    def handle(self, event: ev.Event) -> None:
        if event.type == "subtask_finished" and event.result.status.value == "done":
            self.ids.add(event.result.id)


def _resumable(tmp: Path, *, block: bool) -> Swarm:
    async def plan(ctx: SubtaskContext) -> str:
        ctx.spawn([{"id": f"k{i}", "role": "work"} for i in range(3)], feeds=["write"])
        if block:
            await asyncio.Event().wait()
        return "planned"

    return Swarm(runs_dir=tmp, roles={"orchestrator": plan, "work": work, "writer": writer})


async def test_resumed_run_is_one_trajectory_over_both_sessions(tmp_path: Path) -> None:
    plan = {
        "goal": "resumable",
        "subtasks": [
            {"id": "p", "role": "orchestrator"},
            {"id": "write", "role": "writer", "depends_on": ["p"]},
        ],
    }
    swarm = _resumable(tmp_path, block=True)
    done = DoneIds()
    task = asyncio.create_task(swarm.execute(plan, run_id="res", sinks=[done]))
    async with asyncio.timeout(TIMEOUT_S):
        while len(done.ids) < 3:  # k0..k2 done while their parent still runs
            await asyncio.sleep(0.001)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    swarm.close()
    interrupted = load_trajectory("res", tmp_path)
    assert interrupted.status == "cancelled"
    assert interrupted.episodes["p"].status == "cancelled"
    assert interrupted.episodes["write"].status == NEVER_STARTED

    swarm = _resumable(tmp_path, block=False)
    async with asyncio.timeout(TIMEOUT_S):
        result = await swarm.resume("res")
    swarm.close()
    assert result.ok
    traj = load_trajectory("res", tmp_path)
    with RunStore(tmp_path) as store:
        sessions = [e.resumed for e in store.events("res", types=["run_started"])]
    assert sessions == [False, True]
    assert traj.status == "completed" and traj.goal == "resumable"
    eps = traj.episodes
    assert {k: (e.status, e.attempts) for k, e in eps.items()} == {
        "p": ("done", 2),  # cancelled in session 1, run again in session 2
        "write": ("done", 1),
        **{f"k{i}": ("done", 1) for i in range(3)},
    }
    assert len(traj.turns) == 1  # the re-run parent's identical spawn added nothing
    assert traj.outputs["write"] == ["k0", "k1", "k2", "p"]
    assert traj.stages() == [["p"], ["k0", "k1", "k2"], ["write"]]
    # the re-run parent's time is its second session's, not the gap between sessions
    assert eps["p"].started_at >= interrupted.finished_at


# --- the pipelines --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def review(tmp_path_factory: pytest.TempPathFactory) -> Trajectory:
    if not ICLR_JSON.exists():
        pytest.skip(f"the shared corpus is not at {ICLR_JSON}")
    from kimmy_swarm.agents.review import ReviewConfig, run_review

    tmp = tmp_path_factory.mktemp("review")
    outcome = run_review(
        ReviewConfig(
            corpus=ICLR_JSON, topic="attention", out=tmp, runs_dir=tmp / "runs", max_papers=20
        )
    )
    assert outcome.status == "completed"
    return load_trajectory(outcome.run_id, tmp / "runs")


def test_review_run_trajectory(review: Trajectory) -> None:
    eps = review.episodes
    themes = [t["id"] for t in review.outputs["plan"]["themes"]]
    roles = Counter(e.role for e in eps.values())
    assert roles == {
        "planner": 1,
        "researcher": 20,
        "writer": len(themes),
        "fact_checker": len(themes),
        "synthesizer": 1,
    }
    assert [k for k, e in eps.items() if e.is_orchestrator] == ["plan"]
    assert all(e.started and e.status == "done" and e.output_valid for e in eps.values())
    assert all(e.output_used for e in eps.values())
    assert all(e.policy == "offline" and e.steps >= 1 for e in eps.values())
    assert review.sinks() == ["synthesize"]
    stages = review.stages()
    assert stages[0] == ["plan"] and stages[-1] == ["synthesize"]
    assert [len(s) for s in stages] == [1, 20, len(themes), len(themes), 1]
    assert set(stages[1]) == {k for k in eps if k.startswith("read:")}
    (turn,) = review.turns
    assert turn.subtask_id == "plan" and set(turn.spawned) == set(eps) - {"plan"}
    # every tool call the run recorded belongs to one episode
    assert sum(len(e.tool_calls) for e in eps.values()) >= 20
    assert Trajectory.model_validate_json(review.model_dump_json()) == review


def test_analysis_run_trajectory(tmp_path: Path) -> None:
    from kimmy_swarm.agents.analysis import AnalysisConfig, run_analysis

    outcome = run_analysis(
        AnalysisConfig(
            datasets=["statsmodels:longley", "sklearn:iris"], out=tmp_path, runs_dir=tmp_path / "r"
        )
    )
    traj = load_trajectory(outcome.run_id, tmp_path / "r")
    assert set(traj.episodes) == {
        "plan",
        "analyze:1",
        "analyze:2",
        "check:1",
        "check:2",
        "report",
        "summarize",
    }
    assert traj.stages() == [
        ["plan"],
        ["analyze:1", "analyze:2"],
        ["check:1", "check:2"],
        ["report", "summarize"],
    ]
    assert sorted(traj.sinks()) == ["report", "summarize"]
    assert all(
        e.status == "done" and e.output_valid and e.output_used for e in traj.episodes.values()
    )
    checks = traj.episodes["check:1"]
    assert checks.steps == len(traj.outputs["check:1"]["verdicts"]) + 1  # one per number + answer
