"""`rewards.trl`: prompt rows and the PARL reward as TRL calls it (with a fake environment;
the spawn environment and a real `GRPOTrainer` run: tests/agents/parl/test_trl_grpo.py)."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from kimmy_swarm.rewards.envs import EnvTaskError, UnknownEnvError
from kimmy_swarm.rewards.parl import Schedule
from kimmy_swarm.rewards.trl import completion_text, make_parl_reward, parl_reward, prompt_rows
from kimmy_swarm.swarm.errors import UserError
from tests.rewards._fake_env import FAKE, FakeEnv, fake_task

PROMPT = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "go"}]


def test_prompt_rows_carry_the_messages_and_the_task_json(fake_env: FakeEnv) -> None:
    rows = prompt_rows([(fake_task("a"), PROMPT), (json.dumps(fake_task("b")), PROMPT[1:])])
    assert [r["prompt"] for r in rows] == [PROMPT, PROMPT[1:]]
    assert [json.loads(r["task"]) for r in rows] == [fake_task("a"), fake_task("b")]
    with pytest.raises(UserError, match="prompt 0: message 0 must be a dict with string"):
        prompt_rows([(fake_task(), [{"role": "user"}])])
    with pytest.raises(UserError, match="prompt 0: a prompt needs at least one message"):
        prompt_rows([(fake_task(), [])])
    with pytest.raises(EnvTaskError, match="needs an 'env' field"):
        prompt_rows([({"id": "x"}, PROMPT)])


def test_the_dataset_loads_with_datasets(fake_env: FakeEnv) -> None:
    pytest.importorskip("datasets", reason="trl_prompt_dataset needs the datasets package")
    from kimmy_swarm.rewards.trl import trl_prompt_dataset

    ds = trl_prompt_dataset([(fake_task("a"), PROMPT), (fake_task("b"), PROMPT)])
    assert ds.column_names == ["prompt", "task"] and len(ds) == 2
    assert ds[1]["prompt"] == PROMPT and json.loads(ds[1]["task"])["id"] == "b"


def test_plain_and_conversational_completions_are_read(fake_env: FakeEnv) -> None:
    task = json.dumps(fake_task())
    completions: list[Any] = [
        "good",
        "bad",
        [{"role": "assistant", "content": "good"}],
        [{"role": "assistant", "content": "good"}, {"role": "assistant", "content": "no"}],
        [{"role": "assistant", "content": [{"type": "text", "text": "good"}]}],
    ]
    rewards = parl_reward(None, completions, task=[task] * len(completions))
    assert rewards == [2.5, 1.5, 2.5, 1.5, 2.5]  # λ = 1 at step 0: 0.5 + 1 + r_result
    assert all(isinstance(r, float) for r in rewards)


def test_tool_calls_split_off_by_a_chat_template_parser_are_kept() -> None:
    call = {"type": "function", "function": {"name": "split_documents",
                                             "arguments": {"extractors": 4}}}  # fmt: skip
    text = completion_text([{"role": "assistant", "content": "", "tool_calls": [call]}])
    assert json.loads(text) == {"name": "split_documents", "arguments": {"extractors": 4}}
    both = completion_text([{"role": "assistant", "content": "sure", "tool_calls": [call]}])
    assert both.splitlines()[1] == "sure"
    assert completion_text([{"role": "user", "content": "x"}]) == ""


def test_lambda_is_read_at_the_trainers_global_step(fake_env: FakeEnv) -> None:
    task = json.dumps(fake_task())
    state = SimpleNamespace(global_step=250)
    assert parl_reward(["p"], ["good"], task=[task], trainer_state=state) == [0.75 * 1.5 + 1.0]
    assert fake_env.calls[-1][2] == 250
    late = SimpleNamespace(global_step=5000)
    assert parl_reward(["p"], ["bad"], task=[task], trainer_state=late) == [0.0]


def test_make_parl_reward_sets_the_schedules_and_the_name(fake_env: FakeEnv) -> None:
    result_only = make_parl_reward(lambda1=0.0, lambda2=0.0)
    assert result_only.__name__ == "parl_reward"
    assert result_only(["p", "p"], ["good", "bad"], task=[json.dumps(fake_task())] * 2) == [1, 0]
    short = make_parl_reward(total_steps=10, name="parl_short")
    state = SimpleNamespace(global_step=5)
    assert short.__name__ == "parl_short"
    assert short(["p"], ["bad"], task=[json.dumps(fake_task())], trainer_state=state) == [0.75]
    cosine = make_parl_reward(lambda1=Schedule(kind="cosine", total_steps=4), lambda2=0.0)
    halfway = SimpleNamespace(global_step=2)
    assert cosine(["p"], ["bad"], task=[json.dumps(fake_task())], trainer_state=halfway) == [
        pytest.approx(0.25)
    ]


def test_metrics_and_table_columns_go_to_trls_loggers(fake_env: FakeEnv) -> None:
    metrics: dict[str, float] = {}
    columns: dict[str, list[Any]] = {}
    task = json.dumps(fake_task())
    rewards = parl_reward(
        None, ["good", "bad", "good"], task=[task, None, task],
        log_metric=metrics.__setitem__, log_extra=columns.__setitem__,
    )  # fmt: skip
    assert rewards == [2.5, None, 2.5]  # a row without a task: None, which TRL leaves out
    assert metrics == {"parl/r_inst": 0.5, "parl/r_comp": 1.0, "parl/r_result": 1.0,
                       "parl/lambda1": 1.0, "parl/lambda2": 1.0}  # fmt: skip
    assert columns["r_result"] == [1.0, None, 1.0]


def test_missing_tasks_and_unknown_envs_are_named(fake_env: FakeEnv) -> None:
    with pytest.raises(UserError, match=r"needs the dataset's 'task' column .* had: trainer_state"):
        parl_reward(["p"], ["good"], trainer_state=None)
    with pytest.raises(UserError, match="got 2 completions but 1 tasks"):
        parl_reward(["p", "p"], ["good", "good"], task=[json.dumps(fake_task())])
    with pytest.raises(UnknownEnvError, match=f"'kimmy/wide_spawn'; registered: {FAKE}"):
        parl_reward(["p"], ["good"], task=[json.dumps({"id": "t", "env": "kimmy/wide_spawn"})])
