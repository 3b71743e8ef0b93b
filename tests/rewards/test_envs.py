"""The completion-environment registry: lookup by a task's `env`, and errors that name it."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from kimmy_swarm.rewards import envs
from kimmy_swarm.rewards.envs import (
    EnvTaskError,
    UnknownEnvError,
    env_for,
    register_env,
    registered_envs,
    score_completion,
    task_json,
    task_mapping,
)
from kimmy_swarm.rewards.parl import Schedule
from kimmy_swarm.swarm.errors import UserError
from tests.rewards._fake_env import FAKE, FakeEnv, fake_task


def test_a_task_finds_its_env_by_mapping_json_or_name(fake_env: FakeEnv) -> None:
    task = fake_task()
    assert env_for(task) is env_for(json.dumps(task)) is env_for(FAKE) is fake_env
    assert registered_envs() == (FAKE,)


def test_score_completion_hands_over_task_step_and_lambdas(fake_env: FakeEnv) -> None:
    linear = Schedule(kind="linear", total_steps=1000)
    b = score_completion(json.dumps(fake_task(x=1)), "good", step=250, lambda1=linear, lambda2=0)
    assert fake_env.calls == [({"id": "t0", "env": FAKE, "x": 1}, "good", 250)]
    assert (b.lambda1, b.lambda2, b.total) == (0.75, 0.0, 0.75 * 0.5 + 1.0)


def test_an_unknown_env_names_itself_the_registered_ones_and_the_import(
    fake_env: FakeEnv,
) -> None:
    with pytest.raises(UnknownEnvError) as err:
        score_completion({"id": "t", "env": "kimmy/wide_spawn"}, "good")
    message = str(err.value)
    assert "'kimmy/wide_spawn'" in message and f"registered: {FAKE}" in message
    assert "`import kimmy_swarm.agents.parl` registers 'kimmy/wide_spawn'" in message
    assert isinstance(err.value, UserError) and fake_env.calls == []


def test_an_empty_registry_says_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(envs, "_ENVS", {})
    with pytest.raises(UnknownEnvError, match="for env 'x/y'; registered: none"):
        env_for("x/y")


@pytest.mark.parametrize(
    ("task", "message"),
    [
        ("not json", "a task must be a JSON object; got text that is not JSON"),
        ("[1, 2]", "a task must be a JSON object; got list"),
        ({"id": "t"}, "a task needs an 'env' field naming its environment; got None"),
        ({"id": "t", "env": 3}, "a task needs an 'env' field naming its environment; got 3"),
    ],
)
def test_a_task_that_is_not_one_is_refused(fake_env: FakeEnv, task: object, message: str) -> None:
    with pytest.raises(EnvTaskError, match=message):
        task_mapping(task)  # type: ignore[arg-type]


def test_an_env_needs_a_name_and_a_score_method(fake_env: FakeEnv) -> None:
    with pytest.raises(UserError, match="non-empty string; got ''"):
        register_env("", fake_env)
    with pytest.raises(UserError, match="'x' must have a score"):
        register_env("x", object())  # type: ignore[arg-type]
    assert registered_envs() == (FAKE,)


class _Task(BaseModel):
    id: str
    env: str = FAKE


def test_task_json_takes_mappings_text_and_pydantic_models(fake_env: FakeEnv) -> None:
    expected = {"id": "a", "env": FAKE}
    assert json.loads(task_json(_Task(id="a"))) == expected
    assert json.loads(task_json(expected)) == expected
    assert json.loads(task_json(json.dumps(expected))) == expected
