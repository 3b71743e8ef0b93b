"""The scheduler's pure step logic, on plain data (no event loop)."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

from kimmy_swarm.swarm.errors import SpawnError
from kimmy_swarm.swarm.schema import Plan, Subtask, SubtaskResult, SubtaskStatus
from kimmy_swarm.swarm.steps import (
    FailurePolicy,
    RunState,
    add_subtasks,
    apply_result,
    new_state,
    stop_pending,
    take_ready,
)

S = SubtaskStatus
#: The clock the step functions are handed (they never read one).
NOW = 1_000.0


def st(id_: str, *deps: str, role: str = "r") -> Subtask:
    return Subtask(id=id_, role=role, depends_on=list(deps))


def state_of(
    *subtasks: Subtask,
    policy: FailurePolicy = FailurePolicy.SKIP_DEPENDENTS,
    done: dict[str, SubtaskResult] | None = None,
) -> RunState:
    return new_state(Plan(goal="g", subtasks=list(subtasks)), policy=policy, done=done)


def result(id_: str, status: SubtaskStatus = S.DONE, output: object = None) -> SubtaskResult:
    return SubtaskResult(id=id_, role="r", status=status, output=output, attempts=1)


def run(state: RunState, id_: str, status: SubtaskStatus = S.DONE) -> None:
    """Take `id_` (it must be ready) and apply its result."""
    taken = [s.id for s in take_ready(state, len(state.subtasks))]
    assert id_ in taken or state.status[id_] is S.RUNNING, (id_, taken)
    apply_result(state, result(id_, status), now=NOW)


def ids(results: list[SubtaskResult]) -> set[str]:
    return {r.id for r in results}


# --- readiness -------------------------------------------------------------------------


def test_new_state_readiness_and_waiting_counts() -> None:
    s = state_of(st("a"), st("b"), st("c", "a"), st("d", "a", "c"))
    assert list(s.ready) == ["a", "b"]
    assert s.waiting == {"a": 0, "b": 0, "c": 1, "d": 2}
    assert s.dependents == {"a": ["c", "d"], "b": [], "c": ["d"], "d": []}
    assert all(v is S.PENDING for v in s.status.values())
    assert not s.finished


def test_new_state_reuses_done_results_only() -> None:
    done = {
        "a": result("a", output=1),
        "b": result("b", S.FAILED),
        "c": result("c", S.CANCELLED),
    }
    s = state_of(st("a"), st("b"), st("c", "a"), st("d", "a", "b"), done=done)
    assert s.status == {"a": S.DONE, "b": S.PENDING, "c": S.PENDING, "d": S.PENDING}
    assert s.results == {"a": done["a"]}
    assert s.n_finished == 1
    assert set(s.ready) == {"b", "c"}  # c only waited for a, which is done
    assert s.waiting["d"] == 1


def test_take_ready_respects_n_and_stop() -> None:
    s = state_of(*(st(f"s{i}") for i in range(5)))
    first = take_ready(s, 2)
    assert [x.id for x in first] == ["s0", "s1"]
    assert s.running == 2 and s.started == 2
    assert all(s.status[x.id] is S.RUNNING for x in first)
    assert take_ready(s, 0) == []
    s.stop_reason = "stop"
    assert take_ready(s, 10) == []
    assert s.running == 2


def test_take_ready_never_returns_a_subtask_twice() -> None:
    s = state_of(st("a"), st("b"))
    s.ready.append("a")  # a duplicate entry, as a stale requeue would leave
    out = take_ready(s, 10)
    assert [x.id for x in out] == ["a", "b"]
    assert take_ready(s, 10) == []


def test_done_releases_dependents_when_all_deps_finish() -> None:
    s = state_of(st("a"), st("b"), st("c", "a", "b"))
    take_ready(s, 10)
    assert apply_result(s, result("a"), now=NOW).newly_ready == []
    assert apply_result(s, result("b"), now=NOW).newly_ready == ["c"]
    assert [x.id for x in take_ready(s, 10)] == ["c"]
    apply_result(s, result("c"), now=NOW)
    assert s.finished and s.running == 0


# --- failure policies ------------------------------------------------------------------


def fan() -> list[Subtask]:
    #  a -> b -> c -> d        x (sibling of a)
    #  a ------------> e        x -> y;  b -> y (y also depends on x)
    return [st("a"), st("x"), st("b", "a"), st("c", "b"), st("d", "c"), st("e", "a"),
            st("y", "x", "b")]  # fmt: skip


def test_skip_dependents_skips_transitive_dependents_only() -> None:
    s = state_of(*fan())
    take_ready(s, 10)  # a, x
    applied = apply_result(s, result("a", S.FAILED), now=NOW)
    assert ids(applied.skipped) == {"b", "c", "d", "e", "y"}
    assert all(r.status is S.SKIPPED for r in applied.skipped)
    assert all(r.timings.finished_at == NOW for r in applied.skipped)  # the clock handed in
    assert all(r.error is not None and "'a'" in r.error.message for r in applied.skipped)
    assert s.status["x"] is S.RUNNING  # the sibling goes on
    assert s.stop_reason is None
    apply_result(s, result("x"), now=NOW)
    assert s.finished and s.results["x"].status is S.DONE


def test_skip_dependents_leaves_finished_and_running_alone() -> None:
    s = state_of(st("a"), st("b"), st("c", "a", "b"))
    take_ready(s, 10)
    apply_result(s, result("b"), now=NOW)
    applied = apply_result(s, result("a", S.FAILED), now=NOW)
    assert ids(applied.skipped) == {"c"}
    assert s.results["b"].status is S.DONE


def test_continue_releases_dependents_of_a_failure() -> None:
    s = state_of(*fan(), policy=FailurePolicy.CONTINUE)
    take_ready(s, 10)
    applied = apply_result(s, result("a", S.FAILED), now=NOW)
    assert applied.skipped == [] and set(applied.newly_ready) == {"b", "e"}
    assert s.stop_reason is None


def test_fail_fast_stops_everything_pending() -> None:
    s = state_of(*fan(), policy=FailurePolicy.FAIL_FAST)
    take_ready(s, 10)  # a, x running
    applied = apply_result(s, result("a", S.FAILED), now=NOW)
    assert ids(applied.skipped) == {"b", "c", "d", "e", "y"}
    assert s.stop_reason is not None and "'a'" in s.stop_reason and "fail_fast" in s.stop_reason
    assert s.status["x"] is S.RUNNING  # in flight: not cancelled, may finish
    assert take_ready(s, 10) == []
    apply_result(s, result("x"), now=NOW)
    assert s.finished


def test_non_failure_statuses_do_not_propagate() -> None:
    s = state_of(st("a"), st("b", "a"))
    take_ready(s, 10)
    applied = apply_result(s, result("a", S.CANCELLED), now=NOW)
    assert applied.newly_ready == [] and applied.skipped == []
    assert s.status["b"] is S.PENDING


def test_stop_pending() -> None:
    s = state_of(st("a"), st("b"), st("c", "a"))
    take_ready(s, 1)  # a running
    out = stop_pending(s, S.SKIPPED_BUDGET, "budget spent", now=NOW)
    assert ids(out) == {"b", "c"}
    assert all(r.status is S.SKIPPED_BUDGET and r.attempts == 0 for r in out)
    assert all(r.timings.finished_at == NOW and r.timings.started_at is None for r in out)
    assert all(r.error is not None and r.error.message == "budget spent" for r in out)
    assert s.stop_reason == "budget spent" and not s.ready
    assert stop_pending(s, S.SKIPPED, "again", now=NOW) == []
    assert s.stop_reason == "budget spent"  # the first reason stays
    apply_result(s, result("a"), now=NOW)
    assert s.finished


# --- spawning --------------------------------------------------------------------------


def spawning_state(policy: FailurePolicy = FailurePolicy.SKIP_DEPENDENTS) -> RunState:
    # root -> p (the spawner, running) -> w (the writer, pending)
    s = state_of(st("root"), st("p", "root"), st("w", "p"), st("other"), policy=policy)
    run(s, "root")
    take_ready(s, 10)  # p and other running
    return s


def test_spawn_accepted_with_parent_depth_and_feeds() -> None:
    s = spawning_state()
    fresh, edges = add_subtasks(s, "p", [st("n1"), st("n2", "n1"), st("n3", "p")], feeds=["w"])
    assert [x.id for x in fresh] == ["n1", "n2", "n3"]
    assert all(x.parent == "p" and x.depth == 1 for x in fresh)
    assert edges == [("n1", "w"), ("n2", "w"), ("n3", "w")]
    assert s.subtasks["w"].depends_on == ["p", "n1", "n2", "n3"]
    assert s.waiting["w"] == 4
    assert s.waiting["n2"] == 1 and s.waiting["n3"] == 1
    assert [x.id for x in take_ready(s, 10)] == ["n1"]
    apply_result(s, result("p"), now=NOW)
    assert [x.id for x in take_ready(s, 10)] == ["n3"]  # w still waits for the new ones
    for k in ("n1", "n3"):
        apply_result(s, result(k), now=NOW)
    assert [x.id for x in take_ready(s, 10)] == ["n2"]
    apply_result(s, result("n2"), now=NOW)
    assert [x.id for x in take_ready(s, 10)] == ["w"]


def test_feeding_a_ready_subtask_holds_it_back() -> None:
    s = state_of(st("p"), st("w"))
    take_ready(s, 1)  # p running; w ready but not taken
    add_subtasks(s, "p", [st("n")], feeds=["w"])
    assert [x.id for x in take_ready(s, 10)] == ["n"]
    apply_result(s, result("n"), now=NOW)
    assert [x.id for x in take_ready(s, 10)] == ["w"]


def test_spawn_cycle_through_feeds_refused_naming_the_cycle() -> None:
    # y -> x (x depends on y); the spawner adds n depending on x and feeding y:
    # y -> x -> n -> y is a cycle.
    s = state_of(st("p"), st("y"), st("x", "y"))
    take_ready(s, 1)  # p running; y, x pending
    before = (dict(s.subtasks), dict(s.status), dict(s.waiting), list(s.ready))
    with pytest.raises(SpawnError) as info:
        add_subtasks(s, "p", [st("n", "x")], feeds=["y"])
    msg = str(info.value)
    assert "cycle" in msg
    assert "y -> x -> n -> y" in msg or "x -> n -> y -> x" in msg or "n -> y -> x -> n" in msg
    assert set(info.value.ids) == {"n", "x", "y"}
    assert (dict(s.subtasks), dict(s.status), dict(s.waiting), list(s.ready)) == before
    assert s.dependents["x"] == []


def test_spawn_cycle_within_the_batch_refused() -> None:
    s = state_of(st("p"))
    take_ready(s, 1)
    with pytest.raises(SpawnError, match="cycle") as info:
        add_subtasks(s, "p", [st("n1", "n2"), st("n2", "n1")])
    assert set(info.value.ids) == {"n1", "n2"}
    assert set(s.subtasks) == {"p"}


def test_spawn_feeding_its_own_dependency_refused() -> None:
    s = state_of(st("p"), st("x"))
    take_ready(s, 1)
    with pytest.raises(SpawnError, match=r"x -> n -> x|n -> x -> n"):
        add_subtasks(s, "p", [st("n", "x")], feeds=["x"])


def test_spawn_depth_limit() -> None:
    s = state_of(st("p"))
    take_ready(s, 1)
    (child,) = add_subtasks(s, "p", [st("c")], max_depth=2)[0]
    take_ready(s, 1)
    (grandchild,) = add_subtasks(s, "c", [st("g")], max_depth=2)[0]
    assert (child.depth, grandchild.depth) == (1, 2)
    take_ready(s, 1)
    with pytest.raises(SpawnError, match="depth 3 exceeds max_depth 2"):
        add_subtasks(s, "g", [st("gg")], max_depth=2)
    assert "gg" not in s.subtasks


def test_spawn_subagent_limit() -> None:
    s = state_of(st("p"), st("q"))
    take_ready(s, 1)
    add_subtasks(s, "p", [st("n1")], max_subagents=3)
    with pytest.raises(SpawnError, match="max_subagents 4"):
        add_subtasks(s, "p", [st("n2"), st("n3")], max_subagents=4)
    assert set(s.subtasks) == {"p", "q", "n1"}


def test_identical_respawn_is_accepted_without_effect() -> None:
    s = spawning_state()
    new = [st("n1"), st("n2", "n1")]
    add_subtasks(s, "p", new, feeds=["w"])
    snapshot = (dict(s.subtasks), dict(s.waiting), list(s.ready), dict(s.dependents))
    assert add_subtasks(s, "p", new, feeds=["w"]) == ([], [])
    assert (dict(s.subtasks), dict(s.waiting), list(s.ready), dict(s.dependents)) == snapshot
    assert s.subtasks["w"].depends_on == ["p", "n1", "n2"]


def test_identical_respawn_after_the_fed_subtask_ran() -> None:
    # A retried (or resumed) spawner repeats its spawn after the writer it fed has finished.
    s = state_of(st("p"), st("w"))
    take_ready(s, 1)  # p running, w pending
    add_subtasks(s, "p", [st("n1")], feeds=["w"])
    for k in ("n1", "w"):
        run(s, k)
    assert s.status["p"] is S.RUNNING  # its next attempt spawns the same again
    assert add_subtasks(s, "p", [st("n1")], feeds=["w"]) == ([], [])
    with pytest.raises(SpawnError, match="cannot feed 'w'"):  # but new work cannot feed it
        add_subtasks(s, "p", [st("n2")], feeds=["w"])


def test_respawn_with_a_different_body_is_refused() -> None:
    s = spawning_state()
    add_subtasks(s, "p", [st("n1")])
    with pytest.raises(SpawnError, match="already in the run"):
        add_subtasks(s, "p", [Subtask(id="n1", role="r", instructions="changed")])


def test_spawn_on_a_failed_dependency_refused() -> None:
    s = state_of(st("p"), st("bad"))
    take_ready(s, 2)
    apply_result(s, result("bad", S.FAILED), now=NOW)
    with pytest.raises(SpawnError, match=r"depends on \['bad'\].*failed"):
        add_subtasks(s, "p", [st("n", "bad")])
    assert "n" not in s.subtasks


def test_spawn_on_a_failed_dependency_allowed_under_continue() -> None:
    s = state_of(st("p"), st("bad"), policy=FailurePolicy.CONTINUE)
    take_ready(s, 2)
    apply_result(s, result("bad", S.FAILED), now=NOW)
    add_subtasks(s, "p", [st("n", "bad")])
    assert [x.id for x in take_ready(s, 10)] == ["n"]


@pytest.mark.parametrize(
    "new, feeds, match",
    [
        ([st("n", "ghost")], [], "unknown ids"),
        ([st("p")], [], "already in the run"),
        ([st("n"), st("n")], [], "repeats ids"),
        ([st("n")], ["ghost"], "feeds unknown subtask 'ghost'"),
        ([st("n")], ["done"], "cannot feed 'done': it is already done"),
    ],
)
def test_spawn_refusals(new: list[Subtask], feeds: list[str], match: str) -> None:
    s = state_of(st("p"), st("done"))
    take_ready(s, 2)
    apply_result(s, result("done"), now=NOW)
    with pytest.raises(SpawnError, match=match):
        add_subtasks(s, "p", new, feeds=feeds)
    assert set(s.subtasks) == {"p", "done"}


def test_spawned_dependents_are_skipped_when_the_spawner_fails() -> None:
    s = spawning_state()
    add_subtasks(s, "p", [st("n", "p")], feeds=["w"])
    applied = apply_result(s, result("p", S.FAILED), now=NOW)
    assert ids(applied.skipped) == {"n", "w"}


# --- property: random DAGs, random outcomes, random order ------------------------------


@hs.composite
def scenarios(draw: hs.DrawFn) -> tuple[list[Subtask], FailurePolicy, int]:
    n = draw(hs.integers(1, 25))
    subtasks = []
    for i in range(n):
        deps = draw(hs.sets(hs.integers(0, i - 1), max_size=4)) if i else set()
        subtasks.append(st(f"s{i}", *(f"s{d}" for d in sorted(deps))))
    order = draw(hs.permutations(range(n)))
    policy = draw(hs.sampled_from(list(FailurePolicy)))
    seed = draw(hs.integers(0, 2**32 - 1))
    return [subtasks[k] for k in order], policy, seed


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_random_runs_finish_every_subtask_once_in_dependency_order(
    scenario: tuple[list[Subtask], FailurePolicy, int],
) -> None:
    subtasks, policy, seed = scenario
    rng = random.Random(seed)
    s = state_of(*subtasks, policy=policy)
    finished: list[str] = []
    running: list[str] = []
    ok = {S.DONE, S.FAILED} if policy is FailurePolicy.CONTINUE else {S.DONE}
    while not s.finished:
        for x in take_ready(s, rng.randint(0, 3) if running else rng.randint(1, 3)):
            for dep in x.depends_on:  # never dispatched before every dependency is usable
                assert s.status[dep] in ok, (x.id, dep, s.status[dep])
            running.append(x.id)
        assert running, "stalled: nothing running and nothing ready"
        key = running.pop(rng.randrange(len(running)))
        status = S.FAILED if rng.random() < 0.25 else S.DONE
        applied = apply_result(s, result(key, status), now=NOW)
        finished.append(key)
        finished.extend(r.id for r in applied.skipped)
        if s.stop_reason is not None:  # fail_fast: whatever runs still finishes
            for k in running:
                apply_result(s, result(k), now=NOW)
                finished.append(k)
            running.clear()
    assert sorted(finished) == sorted(x.id for x in subtasks)  # each exactly once
    assert set(s.results) == set(s.subtasks)
    assert all(v.finished for v in s.status.values())
    assert s.running == 0 and s.n_finished == len(subtasks)
    if policy is FailurePolicy.SKIP_DEPENDENTS:
        for x in subtasks:  # skipped exactly when some dependency did not end done
            deps_done = all(s.status[d] is S.DONE for d in x.depends_on)
            assert (s.status[x.id] is S.SKIPPED) is (not deps_done)
