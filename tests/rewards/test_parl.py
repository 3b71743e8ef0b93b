"""PARL reward terms: hand-computed on a real run, properties over generated event streams,
schedules, and the breakdown of a real literature-review run."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kimmy_swarm.rewards.graders import CompletionGrader, GraderError
from kimmy_swarm.rewards.parl import (
    CriticalSteps,
    RewardConfigError,
    Schedule,
    combine,
    completion_reward,
    critical_steps,
    instantiation_reward,
    score,
)
from kimmy_swarm.rewards.trajectory import Trajectory, build_trajectory, load_trajectory
from kimmy_swarm.swarm import Swarm
from kimmy_swarm.swarm import events as ev
from kimmy_swarm.swarm.context import SubtaskContext
from kimmy_swarm.swarm.schema import Subtask, SubtaskResult, SubtaskStatus
from tests.agents.review.conftest import ICLR_JSON

# --- a small DAG whose numbers are computed by hand -------------------------------------------
#
#   lead (orchestrator, 2 steps) spawns a (3), b (5), c (1, empty output) and sub (4 steps),
#   all feeding the planned writer w (2); sub spawns sub.x (6), a sink.
#   stages: [lead] [a b c sub] [w sub.x]
#   critical = 2 + (4 [sub, an orchestrator] + 5 [b]) + max(2, 6) = 17;  serial = 23
#   sub-agents (not orchestrators): a b c w sub.x = 5;  valid and used: a b w sub.x = 4


async def stepper(ctx: SubtaskContext) -> Any:
    n = ctx.inputs.get("steps", 1)
    for step in range(1, n + 1):
        ctx.record_step(step, policy="offline", outcome="answer" if step == n else "tools")
    spawn = ctx.inputs.get("spawn")
    if spawn:
        ctx.spawn(spawn, feeds=ctx.inputs.get("feeds", []))
    return ctx.inputs.get("out", ctx.id)


def _sub(i: str, steps: int, **more: Any) -> dict[str, Any]:
    return {"id": i, "role": "step", "inputs": {"steps": steps, **more}}


HAND_PLAN = {
    "goal": "hand",
    "subtasks": [
        {
            "id": "lead",
            "role": "orchestrator",
            "inputs": {
                "steps": 2,
                "feeds": ["w"],
                "spawn": [
                    _sub("a", 3),
                    _sub("b", 5),
                    _sub("c", 1, out=""),
                    _sub("sub", 4, spawn=[_sub("sub.x", 6)]),
                ],
            },
        },
        {"id": "w", "role": "step", "depends_on": ["lead"], "inputs": {"steps": 2}},
    ],
}


@pytest.fixture(scope="module")
def hand(tmp_path_factory: pytest.TempPathFactory) -> Trajectory:
    runs = tmp_path_factory.mktemp("hand")
    with Swarm(runs_dir=runs, roles={"orchestrator": stepper, "step": stepper}) as swarm:
        assert swarm.run_sync(HAND_PLAN, run_id="hand").ok
    return load_trajectory("hand", runs)


def test_hand_dag_stages_and_critical_steps(hand: Trajectory) -> None:
    assert hand.stages() == [["lead"], ["a", "b", "c", "sub"], ["w", "sub.x"]]
    assert {k: e.steps for k, e in hand.episodes.items()} == {
        "lead": 2, "w": 2, "a": 3, "b": 5, "c": 1, "sub": 4, "sub.x": 6,
    }  # fmt: skip
    cs = critical_steps(hand)
    assert (cs.steps, cs.serial_steps) == (17, 23)
    assert cs.speedup == pytest.approx(23 / 17)


def test_hand_dag_reward_terms(hand: Trajectory) -> None:
    assert instantiation_reward(hand) == 5 / 64
    assert instantiation_reward(hand, width=10) == 0.5
    assert instantiation_reward(hand, width=5) == instantiation_reward(hand, width=4) == 1.0
    assert completion_reward(hand) == 4 / 5
    assert CompletionGrader()(hand) == 1.0  # sinks w and sub.x both gave an output
    early = score(hand, CompletionGrader(), step=0)
    assert (early.r_inst, early.r_comp, early.r_result) == (5 / 64, 0.8, 1.0)
    assert (early.lambda1, early.lambda2) == (1.0, 1.0)
    assert early.total == pytest.approx(5 / 64 + 0.8 + 1.0)
    mid = score(hand, CompletionGrader(), step=250)
    assert mid.total == pytest.approx(0.75 * 5 / 64 + 0.75 * 0.8 + 1.0)
    late = score(hand, CompletionGrader(), step=1000)
    assert (late.lambda1, late.lambda2, late.total) == (0.0, 0.0, 1.0)
    assert late.critical == critical_steps(hand) and late.grader == "completion"


def test_hand_dag_wall_time(hand: Trajectory) -> None:
    times = {
        "lead": (0, 10), "a": (10, 13), "b": (10, 15), "c": (10, 11), "sub": (10, 14),
        "w": (15, 17), "sub.x": (14, 20),
    }  # fmt: skip
    timed = hand.model_copy(
        update={
            "episodes": {
                k: e.model_copy(update={"started_at": 100.0 + t0, "finished_at": 100.0 + t1})
                for k, e in hand.episodes.items()
                for t0, t1 in [times[k]]
            }
        }
    )
    cs = critical_steps(timed)
    assert cs.wall_s == 10 + 5 + 6  # the longest episode of each stage
    assert cs.serial_wall_s == 10 + 3 + 5 + 1 + 4 + 2 + 6
    assert cs.wall_speedup == pytest.approx(31 / 21)


def test_critical_steps_of_nothing() -> None:
    empty = build_trajectory([])
    assert critical_steps(empty) == CriticalSteps(0, 0, 0.0, 0.0)
    assert critical_steps(empty).speedup == critical_steps(empty).wall_speedup == 1.0
    assert instantiation_reward(empty) == completion_reward(empty) == 0.0


def test_combine_is_the_weighted_sum() -> None:
    assert combine(0.5, 0.25, 0.75, 0.4, 0.2) == pytest.approx(0.4 * 0.5 + 0.2 * 0.25 + 0.75)


# --- schedules ----------------------------------------------------------------------------


def test_schedules_by_hand() -> None:
    linear = Schedule(kind="linear", total_steps=100)
    assert [linear.value(s) for s in (0, 25, 100, 10_000)] == [1.0, 0.75, 0.0, 0.0]
    assert linear.value(99) == pytest.approx(0.01)
    cosine = Schedule(kind="cosine", start=2.0, total_steps=100)
    assert cosine.value(0) == 2.0 and cosine.value(50) == pytest.approx(1.0)
    assert cosine.value(100) == 0.0
    step = Schedule(kind="step", start=0.5, total_steps=10, drop_at=0.3)
    assert [step.value(s) for s in (0, 2, 3, 9, 10)] == [0.5, 0.5, 0.0, 0.0, 0.0]
    assert Schedule(kind="constant", start=0.3).value(10**9) == 0.3


@pytest.mark.parametrize(
    ("fields", "match"),
    [
        ({"kind": "exp"}, "'exp'.*constant, linear, cosine, step"),
        ({"kind": "linear", "total_steps": 0}, "total_steps.*0"),
        ({"kind": "step", "drop_at": 1.5}, r"drop_at.*\(0, 1\].*1.5"),
        ({"kind": "linear", "start": -1}, "start.*-1"),
        ({"kind": "linear", "start": math.nan}, "start.*nan"),
    ],
)
def test_bad_schedules_say_what_is_allowed(fields: dict[str, Any], match: str) -> None:
    with pytest.raises(RewardConfigError, match=match):
        Schedule(**fields)


def test_bad_reward_settings_say_what_is_allowed(hand: Trajectory) -> None:
    with pytest.raises(RewardConfigError, match=r"width.*>= 1, got 0"):
        instantiation_reward(hand, width=0)
    with pytest.raises(RewardConfigError, match=r"step.*>= 0, got -1"):
        Schedule(kind="linear").value(-1)
    with pytest.raises(RewardConfigError, match=r"lambda2.*got -0.5"):
        score(hand, CompletionGrader(), lambda2=-0.5)

    class Overeager:
        name = "overeager"

        def __call__(self, traj: Trajectory) -> float:
            return 1.5

    with pytest.raises(GraderError, match=r"'overeager' scored 1.5"):
        score(hand, Overeager())
    fixed = score(hand, CompletionGrader(), lambda1=0.25, lambda2=0.0, step=7)
    assert fixed.total == pytest.approx(0.25 * 5 / 64 + 1.0) and fixed.step == 7


@given(
    kind=st.sampled_from(["linear", "cosine", "step"]),
    start=st.floats(0, 10),
    total=st.integers(1, 10_000),
    drop=st.floats(0.01, 1.0),
    steps=st.lists(st.integers(0, 30_000), min_size=2, max_size=8),
)
def test_schedules_decay_to_zero_and_stay(
    kind: str, start: float, total: int, drop: float, steps: list[int]
) -> None:
    s = Schedule(kind=kind, start=start, total_steps=total, drop_at=drop)
    values = [s.value(x) for x in sorted(steps)]
    assert all(0.0 <= v <= start for v in values)
    assert all(a >= b for a, b in itertools.pairwise(values))  # never rises
    assert all(s.value(total + k) == 0.0 for k in (0, 1, 10**6))


# --- properties over generated runs -------------------------------------------------------

SUB = st.tuples(
    st.booleans(),  # started
    st.integers(1, 6),  # steps
    st.booleans(),  # finished done (else failed)
    st.sampled_from([None, "", [], {}, "x", {"k": 1}]),  # output when done
    st.lists(st.integers(0, 30), max_size=3),  # dependencies (indices of earlier ones)
)


def _events(subs: list[tuple[bool, int, bool, Any, list[int]]]) -> list[ev.Event]:
    """The event stream of a run: `lead` spawns `subs`, which then run (or are skipped)."""
    out: list[ev.Event] = []

    def emit(cls: type, **fields: Any) -> None:
        out.append(cls(run_id="gen", seq=len(out), ts=float(len(out)), **fields))

    def finish(i: str, role: str, status: SubtaskStatus, output: Any = None) -> None:
        result = SubtaskResult(id=i, role=role, status=status, output=output, attempts=1)
        emit(ev.SubtaskFinished, result=result)

    emit(ev.RunStarted, goal="generated", n_subtasks=1)
    emit(ev.SubtaskStarted, subtask_id="lead", role="orchestrator", attempt=1)
    spawned = [
        Subtask(
            id=f"s{i}",
            role="work",
            parent="lead",
            depth=1,
            depends_on=sorted({f"s{d % i}" for d in deps}) if i else [],
        )
        for i, (_, _, _, _, deps) in enumerate(subs)
    ]
    emit(ev.SubtasksSpawned, parent_id="lead", subtasks=spawned)
    finish("lead", "orchestrator", SubtaskStatus.DONE, "plan")
    for i, (started, steps, ok, output, _) in enumerate(subs):
        if not started:
            finish(f"s{i}", "work", SubtaskStatus.SKIPPED)
            continue
        emit(ev.SubtaskStarted, subtask_id=f"s{i}", role="work", attempt=1)
        for k in range(1, steps + 1):
            emit(ev.AgentStep, subtask_id=f"s{i}", policy="offline", step=k, outcome="tools")
        status = SubtaskStatus.DONE if ok else SubtaskStatus.FAILED
        finish(f"s{i}", "work", status, output if ok else None)
    emit(ev.RunFinished, status="partial")
    return out


@settings(max_examples=60, deadline=None)
@given(subs=st.lists(SUB, max_size=12), width=st.integers(1, 40))
def test_every_term_lies_in_range(subs: list[Any], width: int) -> None:
    traj = build_trajectory(_events(subs))
    b = score(traj, CompletionGrader(), width=width, step=0)
    assert 0.0 <= b.r_inst <= 1.0 and 0.0 <= b.r_comp <= 1.0 and 0.0 <= b.r_result <= 1.0
    assert 0.0 <= b.total <= 3.0
    assert b.critical.steps <= b.critical.serial_steps and b.critical.speedup >= 1.0
    assert json.loads(json.dumps(b.to_dict()))["critical"]["speedup"] == b.critical.speedup
    n_started = sum(s[0] for s in subs)
    assert b.r_inst == min(n_started, width) / width


@settings(max_examples=60, deadline=None)
@given(subs=st.lists(SUB, max_size=12), deps=st.lists(st.integers(0, 30), max_size=3))
def test_more_finished_subagents_never_lower_r_comp(subs: list[Any], deps: list[int]) -> None:
    before = completion_reward(build_trajectory(_events(subs)))
    added = completion_reward(build_trajectory(_events([*subs, (True, 1, True, "x", deps)])))
    assert added >= before
    # ...nor does one that failed finishing with an output instead
    for i, (started, steps, ok, _, d) in enumerate(subs):
        if started and not ok:
            fixed = [*subs[:i], (True, steps, True, "x", d), *subs[i + 1 :]]
            assert completion_reward(build_trajectory(_events(fixed))) >= before


@settings(max_examples=60, deadline=None)
@given(
    subs=st.lists(SUB, max_size=10),
    spurious=st.integers(1, 50),
    lam2=st.floats(0.05, 1.0),
)
def test_spurious_spawns_lower_the_reward_once_lambda1_is_annealed(
    subs: list[Any], spurious: int, lam2: float
) -> None:
    base = build_trajectory(_events(subs))
    hacked = build_trajectory(_events([*subs, *[(True, 1, True, None, [])] * spurious]))
    grader = CompletionGrader()
    # early (λ1 = 1): more instantiation is what r_inst pays for
    assert instantiation_reward(hacked) >= instantiation_reward(base)
    late = {"lambda1": Schedule(kind="step", total_steps=10), "lambda2": lam2, "step": 10}
    before, after = score(base, grader, **late), score(hacked, grader, **late)
    assert after.lambda1 == 0.0
    assert after.total < before.total  # the spawned nothing: fewer valid sinks, lower r_comp
    if before.r_comp > 0:
        assert after.r_comp < before.r_comp


@settings(max_examples=40, deadline=None)
@given(n=st.integers(0, 120), width=st.integers(1, 100))
def test_instantiation_saturates_past_width(n: int, width: int) -> None:
    traj = build_trajectory(_events([(True, 1, True, "x", [])] * n))
    r = instantiation_reward(traj, width=width)
    assert r == (1.0 if n >= width else n / width)
    more = build_trajectory(_events([(True, 1, True, "x", [])] * (n + 1)))
    assert instantiation_reward(more, width=width) >= r


# --- a real literature review ---------------------------------------------------------------


def test_review_run_breakdown(tmp_path: Path) -> None:
    if not ICLR_JSON.exists():
        pytest.skip(f"the shared corpus is not at {ICLR_JSON}")
    from kimmy_swarm.agents.review import ReviewConfig, run_review

    out = run_review(
        ReviewConfig(
            corpus=ICLR_JSON,
            topic="attention",
            out=tmp_path,
            runs_dir=tmp_path / "r",
            max_papers=20,
        )
    )
    traj = load_trajectory(out.run_id, tmp_path / "r")
    n_themes = len(traj.outputs["plan"]["themes"])
    from kimmy_swarm.agents.graders import grader_for

    b = score(traj, grader_for(traj), step=0)  # the grader for the run's shape
    assert b.grader == "review"
    assert b.r_inst == (20 + 2 * n_themes + 1) / 64  # readers, writers, checkers, synthesizer
    assert b.r_comp == 1.0
    eps = traj.episodes

    def most(prefix: str) -> int:
        return max(e.steps for k, e in eps.items() if k.startswith(prefix))

    want = eps["plan"].steps + most("read:") + most("write:") + most("check:")
    assert b.critical.steps == want + eps["synthesize"].steps
    assert b.critical.serial_steps == sum(e.steps for e in eps.values())
    assert b.critical.speedup > 2.0  # 20 readers in parallel
