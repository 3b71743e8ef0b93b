"""Spawn tasks for outside trainers: prompts with the tools in the system message, the
registered completion environment, and the TRL / verl exports scored by a real swarm."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from kimmy_swarm.agents.parl import (
    SPAWN_COMPLETION_ENV,
    SPAWN_ENV,
    SpawnEnv,
    SpawnTask,
    SpawnTaskError,
    chat_messages,
    make_spawn_tasks,
    prompt_pairs,
    spawn_messages,
    spawn_tools,
)
from kimmy_swarm.agents.tools.corpus import load_corpus
from kimmy_swarm.rewards.envs import env_for
from kimmy_swarm.rewards.trl import parl_reward, prompt_rows
from kimmy_swarm.rewards.verl import compute_score, verl_rows, write_verl_parquet
from tests.agents.parl.conftest import write_notes

ROOT = Path(__file__).resolve().parents[3]


def split(k: int) -> str:
    return json.dumps({"name": "split_documents", "arguments": {"extractors": k}})


@pytest.fixture
def tasks(tmp_path: Path) -> Iterator[list[SpawnTask]]:
    folder = write_notes(tmp_path / "notes")
    yield make_spawn_tasks(load_corpus(folder), count=2, width=4, seed=3, source=folder)
    SPAWN_COMPLETION_ENV.close()  # the environments loaded for this corpus


def test_import_registers_the_spawn_env() -> None:
    assert env_for({"id": "t", "env": SPAWN_ENV}) is SPAWN_COMPLETION_ENV


@pytest.mark.parametrize("actions", ["split", "lists"])
def test_the_tools_are_described_as_our_engine_does(tasks: list[SpawnTask], actions: str) -> None:
    chat = pytest.importorskip("kimmy_swarm.model.serve.chat", reason="the engine's chat module")
    from kimmy_swarm.model.serve.protocol import ChatMessage, Tool

    task = tasks[0].model_copy(update={"actions": actions})
    messages = chat_messages(task)
    engine = chat.template_messages(
        [ChatMessage.model_validate(m) for m in spawn_messages(task)],
        [Tool.model_validate(t) for t in spawn_tools(task)],
        native_tools=False,
    )
    assert messages == engine
    system = messages[0]["content"]
    assert system.startswith(spawn_messages(task)[0]["content"] + "\n\n# Tools\n")
    listed = system.split("<tools>\n")[1].split("\n</tools>")[0].splitlines()
    assert [json.loads(line)["name"] for line in listed] == [
        t["function"]["name"] for t in spawn_tools(task)
    ]


def test_trl_reward_runs_the_swarm_per_completion(tasks: list[SpawnTask]) -> None:
    rows = prompt_rows(prompt_pairs(tasks))
    assert rows[0]["prompt"] == chat_messages(tasks[0])
    assert SpawnTask.model_validate_json(rows[0]["task"]) == tasks[0]
    completions = [split(4), split(1), [{"role": "assistant", "content": split(4)}], "I read."]
    rewards = parl_reward(None, completions, task=[rows[0]["task"]] * 4)
    assert rewards == [3.0, 2.25, 3.0, 0.0]  # parallel, serial collapse, the same, no call
    with SpawnEnv(load_corpus(tasks[0].corpus or "")) as env:  # the env itself agrees
        assert env.run(tasks[0], split(1)).breakdown.total == rewards[1]


def test_verl_parquet_loads_and_scores(tasks: list[SpawnTask], tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets", reason="reading parquet back needs datasets")
    path = write_verl_parquet(tmp_path / "train.parquet", verl_rows(prompt_pairs(tasks)))
    ds = datasets.Dataset.from_parquet(str(path), cache_dir=str(tmp_path / "cache"))
    assert len(ds) == 2 and ds[0]["data_source"] == SPAWN_ENV
    assert ds[0]["ability"] == "agent_swarm" and ds[0]["prompt"] == chat_messages(tasks[0])
    assert ds[1]["extra_info"] == {"split": "train", "index": 1, "task_id": "task1",
                                   "env": SPAWN_ENV}  # fmt: skip
    row = ds[0]
    gt = row["reward_model"]["ground_truth"]
    assert SpawnTask.model_validate_json(gt) == tasks[0]
    assert compute_score(row["data_source"], split(4), gt, row["extra_info"]) == 3.0
    assert compute_score(row["data_source"], "junk", gt, row["extra_info"]) == 0.0


def test_the_file_verl_loads_by_path_scores(tasks: list[SpawnTask]) -> None:
    path = ROOT / "agents" / "parl" / "verl_reward.py"
    spec = importlib.util.spec_from_file_location("custom_module", path)  # as verl loads it
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    gt = tasks[1].model_dump_json()
    assert module.compute_score(SPAWN_ENV, split(4), gt, lambda1=0, lambda2=0) == 1.0


def test_tasks_the_env_cannot_carry_out_are_named(tasks: list[SpawnTask]) -> None:
    no_corpus = tasks[0].model_copy(update={"corpus": None})
    with pytest.raises(SpawnTaskError, match=r"task 'task0' has no corpus path.*source="):
        compute_score(SPAWN_ENV, split(4), no_corpus.model_dump_json())
    gone = tasks[0].model_copy(update={"corpus": "no/such/folder"})
    with pytest.raises(SpawnTaskError, match="the corpus 'no/such/folder' of task 'task0' does"):
        compute_score(SPAWN_ENV, split(4), gone.model_dump_json())
    with pytest.raises(SpawnTaskError, match="task 'x' is not a spawn task: wide: Field required"):
        compute_score(SPAWN_ENV, split(4), json.dumps({"id": "x", "env": SPAWN_ENV}))


def test_one_env_per_corpus_is_loaded_and_kept(
    tasks: list[SpawnTask], monkeypatch: pytest.MonkeyPatch
) -> None:
    first = SPAWN_COMPLETION_ENV.env(tasks[0])
    assert SPAWN_COMPLETION_ENV.env(tasks[1]) is first
    folder = Path(tasks[0].corpus or "")
    monkeypatch.chdir(folder.parent)  # the same folder, named relative to the working dir
    assert SPAWN_COMPLETION_ENV.env(tasks[0].model_copy(update={"corpus": folder.name})) is first


async def test_scoring_works_from_inside_an_event_loop(tasks: list[SpawnTask]) -> None:
    # an async reward loop (or a notebook) calls the sync reward function with a loop running
    assert compute_score(SPAWN_ENV, split(4), tasks[0].model_dump_json()) == 3.0
