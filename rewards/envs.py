"""Completion environments: a task and a policy's completion → its PARL reward, by name.

A trainer's reward function sees only data: a task (a JSON object carried in the dataset
row) and the text the policy wrote. The task's `env` field names the environment that
carries the completion out and scores it; environments register themselves here, so the
reward functions for trainers (`rewards.trl`, `rewards.verl`) stay free of domain code:

    import kimmy_swarm.agents.parl           # registers "kimmy/wide_spawn"
    breakdown = score_completion(task, completion, step=120)   # a RewardBreakdown

`rewards` never imports `agents`; an environment is registered by the package that defines
it, on import (`agents.parl` registers `kimmy/wide_spawn`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from kimmy_swarm.swarm.errors import UserError

if TYPE_CHECKING:
    from kimmy_swarm.rewards.parl import RewardBreakdown, Schedule

#: Where each environment name shipped with Kimmy Swarm is registered (for error messages).
KNOWN_ENVS = {"kimmy/wide_spawn": "kimmy_swarm.agents.parl"}


class EnvTaskError(UserError):
    """A task is not a JSON object with a string `env` field."""


class UnknownEnvError(EnvTaskError):
    """A task names an environment that is not registered (in this process)."""


@runtime_checkable
class CompletionEnv(Protocol):
    """Carries out a policy's completion for a task and scores it with PARL."""

    def score(
        self,
        task: Mapping[str, Any],
        completion: str,
        *,
        step: int = 0,
        lambda1: Schedule | float | None = None,
        lambda2: Schedule | float | None = None,
    ) -> RewardBreakdown:
        """The reward of `completion` for `task` at training `step` (λs as
        `rewards.parl.score`)."""
        ...


_ENVS: dict[str, CompletionEnv] = {}
_LOCK = threading.Lock()


def register_env(name: str, env: CompletionEnv) -> None:
    """Make `env` the environment of tasks whose `env` field is `name` (replacing any
    earlier one of that name).

    Raises:
        UserError: `name` is empty, or `env` has no `score` method.
    """
    if not isinstance(name, str) or not name.strip():
        raise UserError(f"an environment name must be a non-empty string; got {name!r}")
    if not isinstance(env, CompletionEnv):
        raise UserError(
            f"environment {name!r} must have a score(task, completion, *, step, lambda1, "
            f"lambda2) method; got {type(env).__name__}"
        )
    with _LOCK:
        _ENVS[name] = env


def registered_envs() -> tuple[str, ...]:
    """The registered environment names, sorted."""
    with _LOCK:
        return tuple(sorted(_ENVS))


def task_mapping(task: Mapping[str, Any] | str | bytes) -> Mapping[str, Any]:
    """A task as a mapping: a mapping as it is, JSON text parsed.

    Raises:
        EnvTaskError: the text is not JSON, or not a JSON object with a string `env`.
    """
    if isinstance(task, str | bytes):
        try:
            task = json.loads(task)
        except json.JSONDecodeError as exc:
            raise EnvTaskError(
                f"a task must be a JSON object; got text that is not JSON ({exc})"
            ) from exc
    if not isinstance(task, Mapping):
        raise EnvTaskError(f"a task must be a JSON object; got {type(task).__name__}")
    name = task.get("env")
    if not isinstance(name, str) or not name:
        raise EnvTaskError(
            f"a task needs an 'env' field naming its environment; got {name!r} "
            f"(registered: {_names()})"
        )
    return task


def task_json(task: Mapping[str, Any] | str | Any) -> str:
    """A task as JSON text, the form datasets carry it in: a mapping or JSON text (checked
    by `task_mapping`), or a pydantic model (such as `agents.parl.SpawnTask`).

    Raises:
        EnvTaskError: as `task_mapping`.
    """
    dump = getattr(task, "model_dump", None)
    if callable(dump):
        task = dump(mode="json")
    mapping = task_mapping(task)
    return json.dumps(dict(mapping), ensure_ascii=False)


def _names() -> str:
    return ", ".join(registered_envs()) or "none"


def env_for(task: Mapping[str, Any] | str) -> CompletionEnv:
    """The registered environment of `task` (a task mapping or JSON text, or an env name).

    Raises:
        EnvTaskError: `task` is not a task.
        UnknownEnvError: no environment of that name is registered.
    """
    if isinstance(task, str) and not task.lstrip().startswith("{"):
        name = task
    else:
        name = task_mapping(task)["env"]
    with _LOCK:
        env = _ENVS.get(name)
    if env is not None:
        return env
    hint = "; ".join(f"`import {mod}` registers {n!r}" for n, mod in KNOWN_ENVS.items())
    raise UnknownEnvError(
        f"no completion environment is registered for env {name!r}; registered: {_names()} ({hint})"
    )


def score_completion(
    task: Mapping[str, Any] | str,
    completion: str,
    *,
    step: int = 0,
    lambda1: Schedule | float | None = None,
    lambda2: Schedule | float | None = None,
) -> RewardBreakdown:
    """`completion` for `task` carried out and scored by the task's registered environment.

    Raises:
        EnvTaskError, UnknownEnvError: as `env_for`.
    """
    mapping = task_mapping(task)
    return env_for(mapping).score(mapping, completion, step=step, lambda1=lambda1, lambda2=lambda2)


__all__ = [
    "KNOWN_ENVS",
    "CompletionEnv",
    "EnvTaskError",
    "UnknownEnvError",
    "env_for",
    "register_env",
    "registered_envs",
    "score_completion",
    "task_json",
    "task_mapping",
]
