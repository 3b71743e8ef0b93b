"""The PARL spawn environment: completions carried out by a real swarm and scored."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from kimmy_swarm.agents.parl import (
    ParlScorer,
    SpawnEnv,
    SpawnTask,
    SpawnTaskError,
    make_spawn_tasks,
    parse_calls,
    spawn_messages,
    spawn_tools,
)
from kimmy_swarm.rewards.parl import Schedule


def split(k: int) -> str:
    return json.dumps({"name": "split_documents", "arguments": {"extractors": k}})


def test_tasks_need_every_document_read(env: SpawnEnv) -> None:
    tasks = make_spawn_tasks(env.corpus, count=3, width=4, seed=0)
    assert [t.id for t in tasks] == ["task0", "task1", "task2"]
    for t in tasks:
        assert len(set(t.doc_ids)) == 4
        assert 0 < len(t.truth) < 4  # some meet the condition, some do not
        assert all(d in t.goal() for d in t.doc_ids)
        assert SpawnTask.model_validate_json(t.model_dump_json()) == t
    assert make_spawn_tasks(env.corpus, count=3, width=4, seed=0) == tasks  # seeded


def test_split_deals_round_robin(task: SpawnTask) -> None:
    assert task.split(1) == [list(task.doc_ids)]
    assert task.split(2) == [list(task.doc_ids[0::2]), list(task.doc_ids[1::2])]
    assert task.split(6)[4:] == [[], []]


def test_bad_task_settings_are_named(env: SpawnEnv) -> None:
    with pytest.raises(SpawnTaskError, match="width ≥ 2; got count=1, width=1"):
        make_spawn_tasks(env.corpus, count=1, width=1)
    with pytest.raises(SpawnTaskError, match="8 documents with a title; a task of width 9"):
        make_spawn_tasks(env.corpus, count=1, width=9)
    with pytest.raises(SpawnTaskError, match="actions must be one of split, lists; got 'x'"):
        make_spawn_tasks(env.corpus, count=1, width=3, actions="x")  # type: ignore[arg-type]


def test_parallel_serial_and_spurious_splits_score_as_parl_says(
    env: SpawnEnv, task: SpawnTask
) -> None:
    parallel = env.run(task, split(4), step=0)
    m = parallel.metrics()
    assert (m["spawned"], m["completed"], m["r_inst"], m["r_comp"], m["r_result"]) == (
        4, 4, 1.0, 1.0, 1.0
    )  # fmt: skip
    assert m["critical_steps"] == 3 + 2  # orchestrator turns + one read and the answer
    assert parallel.breakdown.total == 3.0  # λ1 = λ2 = 1 at step 0

    serial = env.run(task, split(1), step=0).metrics()
    assert (serial["spawned"], serial["r_inst"], serial["r_result"]) == (1, 0.25, 1.0)
    assert serial["critical_steps"] == 3 + 4 + 1  # every read one after another

    spurious = env.run(task, split(8), step=0).metrics()
    assert (spurious["spawned"], spurious["completed"], spurious["r_comp"]) == (8, 4, 0.5)
    assert spurious["r_result"] == 1.0 and spurious["total"] < m["total"]

    late = env.run(task, split(1), step=1000)  # λs annealed to 0: only the result counts
    assert late.breakdown.total == late.breakdown.r_result == 1.0


def test_a_completion_without_a_call_spawns_nothing_and_scores_zero(
    env: SpawnEnv, task: SpawnTask
) -> None:
    r = env.run(task, "I will read the documents myself.")
    assert r.calls == [] and r.spawned == 0
    assert (r.breakdown.r_inst, r.breakdown.r_result, r.breakdown.total) == (0.0, 0.0, 0.0)


def test_the_run_records_the_completion_as_the_orchestrators_turn(
    env: SpawnEnv, task: SpawnTask
) -> None:
    text = "  " + split(2) + "\n"
    r = env.run(task, text)
    first = r.trajectory.turns[0]
    assert first.message is not None and first.message["content"] == text
    assert [c["function"]["name"] for c in first.message["tool_calls"]] == ["assign_tasks"]
    assert len(first.spawned) == 2


def test_lists_actions_copy_ids_and_an_unknown_id_fails_its_extractor(env: SpawnEnv) -> None:
    task = make_spawn_tasks(env.corpus, count=1, width=4, seed=3, actions="lists")[0]
    assert [t["function"]["name"] for t in spawn_tools(task)] == ["assign_tasks", "assign_task"]
    assert "assign_tasks(agent, task, inputs_list)" in spawn_messages(task)[0]["content"]
    inputs = [{"doc_ids": [d]} for d in task.doc_ids] + [{"doc_ids": ["no-such-doc"]}]
    call = {"name": "assign_tasks",
            "arguments": {"agent": "extractor", "task": "read", "inputs_list": inputs}}  # fmt: skip
    r = env.run(task, json.dumps(call)).metrics()
    assert (r["spawned"], r["completed"], r["r_result"]) == (5, 4, 1.0)
    assert r["r_comp"] == pytest.approx(0.8)


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "split_documents", "arguments": {"extractors": 3}}',
        'Sure. <tool_call>{"name": "split_documents", "arguments": {"extractors": 3}}</tool_call>',
        '```json\n[{"name": "split_documents", "arguments": {"extractors": 3}}]\n```',
        '{"type": "function", "function": {"name": "split_documents", '
        '"arguments": "{\\"extractors\\": 3}"}}',
    ],
)
def test_calls_are_read_in_the_shapes_models_write(text: str) -> None:
    assert parse_calls(text) == [("split_documents", {"extractors": 3})]


def test_no_call_in_prose_or_broken_json() -> None:
    assert parse_calls("call split_documents with 3") == []
    assert parse_calls('{"name": "split_documents", "arguments": {"extractors": 3}') == []
    assert parse_calls('{"answer": 3}') == []


def test_the_scorer_gives_group_advantages_and_anneals(env: SpawnEnv, task: SpawnTask) -> None:
    scorer = ParlScorer(env, [task], total_steps=10)
    prompt = SimpleNamespace(key=task.id)
    group = [SimpleNamespace(text=t, prompt=prompt) for t in (split(4), split(1), "no call")]
    early = scorer(group, 0)
    assert [s.reward for s in early] == [3.0, 2.25, 0.0]
    assert early[0].advantage > early[1].advantage > 0 > early[2].advantage
    assert sum(s.advantage for s in early) == pytest.approx(0.0, abs=1e-9)
    assert early[0].metrics["lambda1"] == 1.0 and early[0].metrics["spawned"] == 4
    late = scorer(group, 10)  # λ1 = λ2 = 0: parallel and serial are the same result
    assert [s.reward for s in late] == [1.0, 1.0, 0.0]
    assert late[0].advantage == late[1].advantage
    result_only = ParlScorer(env, [task], lambda1=0.0, lambda2=0.0)
    assert [s.reward for s in result_only(group, 0)] == [1.0, 1.0, 0.0]
    no_comp = ParlScorer(env, [task], lambda1=Schedule(kind="constant"), lambda2=0.0)
    assert [s.reward for s in no_comp(group, 0)] == [2.0, 1.25, 0.0]
    assert len(scorer.rollouts) == 6


def test_an_unknown_task_id_is_named(env: SpawnEnv, task: SpawnTask) -> None:
    scorer = ParlScorer(env, [task])
    with pytest.raises(Exception, match="no spawn task with id 'other'; the scorer has 1"):
        scorer([SimpleNamespace(text="", prompt=SimpleNamespace(key="other"))], 0)
