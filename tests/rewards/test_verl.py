"""`rewards.verl`: verl's parquet rows and its custom reward function (with a fake
environment; the spawn environment: tests/agents/parl/test_trainer_env.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kimmy_swarm.rewards.envs import EnvTaskError, UnknownEnvError
from kimmy_swarm.rewards.verl import (
    ABILITY,
    VERL_COLUMNS,
    compute_score,
    verl_rows,
    write_verl_parquet,
)
from kimmy_swarm.swarm.errors import UserError
from tests.rewards._fake_env import FAKE, FakeEnv, fake_task

PROMPT = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "go"}]


def test_rows_have_verls_fields(fake_env: FakeEnv) -> None:
    rows = verl_rows([(fake_task("a"), PROMPT), (fake_task("b"), PROMPT)], split="test")
    assert [tuple(r) for r in rows] == [VERL_COLUMNS] * 2
    first = rows[1]
    assert (first["data_source"], first["ability"], first["prompt"]) == (FAKE, ABILITY, PROMPT)
    assert first["reward_model"]["style"] == "rule"
    assert json.loads(first["reward_model"]["ground_truth"]) == fake_task("b")
    assert first["extra_info"] == {"split": "test", "index": 1, "task_id": "b", "env": FAKE}


def test_parquet_is_read_back_by_datasets(fake_env: FakeEnv, tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets", reason="reading parquet back needs datasets")
    rows = verl_rows([(fake_task(f"t{i}"), PROMPT) for i in range(3)])
    path = write_verl_parquet(tmp_path / "data" / "train.parquet", rows)
    ds = datasets.load_dataset(
        "parquet", data_files=str(path), split="train", cache_dir=str(tmp_path / "cache")
    )
    assert ds.column_names == list(VERL_COLUMNS) and len(ds) == 3
    message = {"role": datasets.Value("string"), "content": datasets.Value("string")}
    assert ds.features["prompt"] == datasets.List(message)
    assert ds.features["reward_model"] == {"style": datasets.Value("string"),
                                           "ground_truth": datasets.Value("string")}  # fmt: skip
    assert ds.features["extra_info"]["index"] == datasets.Value("int64")
    assert ds[2]["prompt"] == PROMPT and ds[2]["extra_info"]["task_id"] == "t2"
    gt = ds[2]["reward_model"]["ground_truth"]
    assert compute_score(ds[2]["data_source"], "good", gt, ds[2]["extra_info"]) == 2.5


def test_nothing_or_rows_without_verls_columns_are_refused(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no rows to write"):
        write_verl_parquet(tmp_path / "x.parquet", [])
    with pytest.raises(UserError, match="row 0 lacks verl's column\\(s\\) ability, reward_model"):
        write_verl_parquet(tmp_path / "x.parquet", [{"data_source": FAKE, "prompt": PROMPT,
                                                     "extra_info": {}}])  # fmt: skip


def test_compute_score_takes_lambdas_from_reward_kwargs(fake_env: FakeEnv) -> None:
    gt = json.dumps(fake_task())
    assert compute_score(FAKE, "good", gt) == 2.5  # verl passes no step: λ at step 0
    assert compute_score(FAKE, "good", gt, None, lambda1=0.0, lambda2=0.0) == 1.0
    assert compute_score(FAKE, "bad", gt, {"index": 0}, step=1000, other="ignored") == 0.0
    assert isinstance(compute_score(FAKE, "bad", gt), float)


def test_a_task_without_env_takes_the_data_source(fake_env: FakeEnv) -> None:
    assert compute_score(FAKE, "good", json.dumps({"id": "t"})) == 2.5
    assert fake_env.calls[-1][0] == {"id": "t", "env": FAKE}
    with pytest.raises(UnknownEnvError, match="for env 'other'"):
        compute_score("other", "good", json.dumps({"id": "t"}))
    with pytest.raises(EnvTaskError, match="not JSON"):
        compute_score(FAKE, "good", "the answer is 4")
