"""RL export: GRPO advantages by hand, rollout records of a real stored run, the JSONL round
trip and its schema check, and TRL rows."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kimmy_swarm.rewards.export import (
    ROLLOUT_SCHEMA,
    RolloutRecord,
    RolloutSchemaError,
    build_group,
    group_advantages,
    load_rollouts,
    rollout_record,
    to_trl,
    write_rollouts,
)
from kimmy_swarm.rewards.parl import score
from kimmy_swarm.rewards.trajectory import build_trajectory
from kimmy_swarm.swarm.errors import UserError
from kimmy_swarm.swarm.store import RunStore
from tests.rewards._fixtures import GOAL, ROOT, run_small


def test_advantages_by_hand() -> None:
    # mean 2.5; population variance (2.25 + 0.25 + 0.25 + 2.25) / 4 = 1.25
    std = math.sqrt(1.25)
    got = group_advantages([1.0, 2.0, 3.0, 4.0], eps=1e-6)
    want = [-1.5 / (std + 1e-6), -0.5 / (std + 1e-6), 0.5 / (std + 1e-6), 1.5 / (std + 1e-6)]
    assert got == pytest.approx(want, rel=1e-12)
    # two rewards: ±1 (less the epsilon); equal rewards: exactly 0; no rewards: none
    assert group_advantages([0.2, 0.8]) == pytest.approx([-0.3 / 0.300001, 0.3 / 0.300001])
    assert group_advantages([0.7, 0.7, 0.7]) == [0.0, 0.0, 0.0]
    assert group_advantages([]) == []


def test_advantages_reject_bad_input() -> None:
    with pytest.raises(UserError, match=r"reward 1 is nan"):
        group_advantages([1.0, float("nan")])
    with pytest.raises(UserError, match=r"eps must be a positive number, got 0"):
        group_advantages([1.0, 2.0], eps=0)


@given(st.lists(st.floats(-10, 10, allow_nan=False), min_size=2, max_size=16))
def test_advantages_are_centred_and_order_preserving(rewards: list[float]) -> None:
    adv = group_advantages(rewards)
    assert math.fsum(adv) == pytest.approx(0.0, abs=1e-6)
    ranked = [a for _, a in sorted(zip(rewards, adv, strict=True))]
    assert ranked == sorted(ranked)  # a higher reward never gets a lower advantage


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    runs = tmp_path_factory.mktemp("runs")
    run_id = run_small(runs)
    with RunStore(runs, create=False) as store:
        run = store.load_run(run_id)
        traj = build_trajectory(store.events(run_id), plan=run.plan)
    return traj, run.plan


def test_record_of_spawns_without_recorded_turns_is_marked_reconstructed(stored) -> None:  # type: ignore[no-untyped-def]
    traj, plan = stored
    breakdown = score(traj, step=0, width=8)
    rec = rollout_record(
        traj, breakdown, task={"t": 1}, group="g", index=3, advantage=0.5, plan=plan
    )
    assert (rec.schema_, rec.group, rec.index, rec.run_id) == (ROLLOUT_SCHEMA, "g", 3, traj.run_id)
    assert ROLLOUT_SCHEMA == "kimmy.rollout/v2" and rec.orchestrator == "plan"
    roles = [m["role"] for m in rec.messages]
    # `lead` spawns with ctx.spawn, recording no turn: system (goal), user (its subtask), then
    # the granted and the refused spawn described, each with its outcomes — all said so
    assert roles == ["system", "user", "assistant", "user", "assistant", "user"]
    assert rec.reconstructed and all(m["reconstructed"] is True for m in rec.messages)
    assert rec.messages[0]["content"] == GOAL
    assert json.loads(rec.messages[1]["content"])["instructions"] == "decompose"
    action = json.loads(rec.messages[2]["content"])["spawn"]
    assert [s["id"] for s in action] == ["w:0", "w:1", "w:2", "join"]
    assert action[1] == {
        "id": "w:1",
        "role": "idle",
        "instructions": "add 2",
        "inputs": {"x": 2},
        "depends_on": [],
    }
    outcomes = {o["id"]: o for o in json.loads(rec.messages[3]["content"])["outcomes"]}
    assert outcomes["w:1"]["completed"] is False and outcomes["w:0"]["completed"] is True
    refused = json.loads(rec.messages[5]["content"])["refused"]
    assert len(refused) == 1 and "nobody" in refused[0]
    # per-spawn attribution: the idle worker is the one that did not complete
    assert [(s.subtask_id, s.parent, s.turn, s.completed, s.used) for s in rec.spawns] == [
        ("w:0", "plan", 0, True, True),
        ("w:1", "plan", 0, False, True),  # not valid, though its dependent ran
        ("w:2", "plan", 0, True, True),
        ("join", "plan", 0, True, True),
    ]
    # one entry per assistant message; a described turn has no tokens of its own (the
    # model call `lead` made is no message of the record)
    assert [(t.turn, t.message, t.token_ids, t.logprobs, t.text) for t in rec.tokens] == [
        (0, 2, None, None, None),
        (1, 4, None, None, None),
    ]
    assert rec.reward == breakdown.to_dict()
    assert rec.reward["r_inst"] == 0.5 and rec.reward["r_comp"] == 0.75


def test_without_the_plan_spawns_carry_id_role_and_dependencies(stored) -> None:  # type: ignore[no-untyped-def]
    traj, _ = stored
    rec = rollout_record(traj, score(traj), task={}, group="g", index=0, advantage=0.0)
    assert [m["role"] for m in rec.messages][:2] == ["system", "assistant"]
    join = json.loads(rec.messages[1]["content"])["spawn"][3]
    assert join == {"id": "join", "role": "join", "depends_on": ["w:0", "w:1", "w:2"]}


def test_jsonl_round_trip_and_schema_check(stored, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    traj, plan = stored
    early = score(traj, step=0, width=8)
    late = score(traj, step=1000, width=8)
    records = build_group([traj, traj], [early, late], task={"k": 2}, group="g", plans=[plan] * 2)
    # totals 2.25 and 1.0 + λ2·0.75 at step 1000 (λ2 default linear → 0): advantages ±1
    assert [r.advantage for r in records] == pytest.approx([1.0, -1.0], abs=1e-5)
    path = write_rollouts(tmp_path / "out" / "r.jsonl", records)
    lines = path.read_text().splitlines()
    assert len(lines) == 2 and json.loads(lines[0])["schema"] == ROLLOUT_SCHEMA
    assert load_rollouts(path) == records

    other = json.loads(lines[1]) | {"schema": "kimmy.rollout/v3"}
    (tmp_path / "v3.jsonl").write_text(lines[0] + "\n" + json.dumps(other) + "\n")
    with pytest.raises(RolloutSchemaError, match=r"v3.jsonl:2: rollout schema 'kimmy.rollout/v3'"):
        load_rollouts(tmp_path / "v3.jsonl")
    (tmp_path / "bad.jsonl").write_text("{not json\n")
    with pytest.raises(RolloutSchemaError, match=r"bad.jsonl:1: not a JSON object"):
        load_rollouts(tmp_path / "bad.jsonl")
    missing = json.loads(lines[0])
    del missing["advantage"]
    (tmp_path / "short.jsonl").write_text(json.dumps(missing) + "\n")
    with pytest.raises(RolloutSchemaError, match=r"short.jsonl:1: .* at advantage"):
        load_rollouts(tmp_path / "short.jsonl")
    with pytest.raises(UserError, match=r"does not exist"):
        load_rollouts(tmp_path / "nowhere.jsonl")


def test_group_needs_one_breakdown_per_trajectory(stored) -> None:  # type: ignore[no-untyped-def]
    traj, _ = stored
    with pytest.raises(UserError, match=r"got 2 trajectories, 1 breakdowns"):
        build_group([traj, traj], [score(traj)], task={}, group="g")


def test_trl_rows(stored) -> None:  # type: ignore[no-untyped-def]
    traj, plan = stored
    b = score(traj, step=0, width=8)
    rec = rollout_record(traj, b, task={}, group="g", index=0, advantage=-0.25, plan=plan)
    (row,) = to_trl([rec])
    assert set(row) == {"prompt", "completion", "reward", "advantage", "reconstructed"}
    assert [m["role"] for m in row["prompt"]] == ["system", "user"]
    # from the first assistant message to the last: the trailing outcomes message is left out
    assert [m["role"] for m in row["completion"]] == ["assistant", "user", "assistant"]
    assert row["prompt"] + row["completion"] == rec.messages[:-1]
    assert row["reward"] == b.total and row["advantage"] == -0.25
    assert row["reconstructed"] is True
    # a record without any turn: everything is prompt, the completion is empty
    bare = RolloutRecord.model_validate(rec.model_dump() | {"messages": rec.messages[:1]})
    assert to_trl([bare])[0]["completion"] == []


def test_example_turns_rollouts_into_trl_rows(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("rl_export", ROOT / "examples" / "rl_export.py")
    assert spec and spec.loader
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    out = tmp_path / "rollouts.jsonl"
    assert example.main(["--k", "4", "--seed", "3", "--out", str(out)]) == 0
    records = load_rollouts(out)
    rows = to_trl(records)
    assert len(rows) == 4 and "4 rollouts" in capsys.readouterr().out
    assert [r["reward"] for r in rows] == [rec.reward["total"] for rec in records]
    assert math.fsum(r["advantage"] for r in rows) == pytest.approx(0.0, abs=1e-9)
    for row, rec in zip(rows, records, strict=True):
        # scripted orchestrators spawn without a model turn: described, and said so
        assert row["reconstructed"] is True and rec.reconstructed
        goal = {"role": "system", "content": example.TASK["goal"], "reconstructed": True}
        assert row["prompt"][0] == goal
        spawned = json.loads(row["completion"][0]["content"])["spawn"]
        assert [s["id"] for s in spawned] == [s.subtask_id for s in rec.spawns]
