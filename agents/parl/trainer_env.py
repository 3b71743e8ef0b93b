"""Spawn tasks for outside trainers (TRL, verl): prompts as plain chat messages, and the
completion environment their reward functions reach through `rewards.envs`.

Importing this module (as `import kimmy_swarm.agents.parl` does) registers
`SPAWN_COMPLETION_ENV` for
the env name `kimmy/wide_spawn`: a reward function then scores a completion from the task's
JSON alone. The task's `corpus` path (`make_spawn_tasks(..., source=path)`) says where the
documents are; one `SpawnEnv` per corpus is loaded on first use and kept.

Trainers render prompts with their own chat templates and pass no tool list, so the tools
are described inside the system message, as our engine does (`model.serve.chat`): a
`# Tools` block that asks for a reply of only `{"name": …, "arguments": {…}}`, one JSON
line per tool.

    pairs = prompt_pairs(tasks)                       # (task, chat messages) per task
    rows = rewards.trl.prompt_rows(pairs)             # or rewards.verl.verl_rows(pairs)
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Coroutine, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import ValidationError

from kimmy_swarm.agents.parl.env import SpawnEnv, SpawnRollout, load_spawn_env
from kimmy_swarm.agents.parl.tasks import (
    SPAWN_ENV,
    SpawnTask,
    SpawnTaskError,
    spawn_messages,
    spawn_tools,
)
from kimmy_swarm.rewards.envs import register_env
from kimmy_swarm.swarm.errors import validation_problems

if TYPE_CHECKING:
    from kimmy_swarm.rewards.parl import RewardBreakdown, Schedule

T = TypeVar("T")

#: The tools block's opening, word for word as `model.serve.chat.TOOLS_HEADER`.
TOOLS_HEADER = (
    "# Tools\n"
    "You can call the tools below. To call one, reply with only a JSON object "
    '{"name": "<tool name>", "arguments": {<its arguments>}} and nothing else.\n'
)


def tools_prompt(tools: Sequence[Mapping[str, Any]]) -> str:
    """OpenAI tool dicts described as our engine writes them into the system prompt: the
    header, then `<tools>` with one JSON line per tool (name, description, parameters)."""
    lines = []
    for tool in tools:
        fn = tool["function"]
        spec = {"name": fn["name"], "description": fn.get("description"),
                "parameters": fn.get("parameters")}  # fmt: skip
        lines.append(json.dumps({k: v for k, v in spec.items() if v is not None},
                                ensure_ascii=False))  # fmt: skip
    return TOOLS_HEADER + "<tools>\n" + "\n".join(lines) + "\n</tools>"


def chat_messages(task: SpawnTask) -> list[dict[str, str]]:
    """The task's prompt for trainers that take plain chat messages: `spawn_messages` with
    the task's tools (`spawn_tools`) described at the end of the system message."""
    system, *rest = spawn_messages(task)
    described = tools_prompt(spawn_tools(task))
    return [{"role": "system", "content": f"{system['content']}\n\n{described}"}, *rest]


def prompt_pairs(tasks: Iterable[SpawnTask]) -> list[tuple[SpawnTask, list[dict[str, str]]]]:
    """Each task with its `chat_messages`: what `rewards.trl.prompt_rows` and
    `rewards.verl.verl_rows` take."""
    return [(t, chat_messages(t)) for t in tasks]


def _run(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro` to the end from synchronous code, also where this thread already runs
    an event loop (a notebook, an async reward loop): then in a thread of its own."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with ThreadPoolExecutor(1, thread_name_prefix="kimmy-parl-reward") as pool:
        return pool.submit(asyncio.run, coro).result()


class SpawnCompletionEnv:
    """The `rewards.envs.CompletionEnv` of spawn tasks: a task's JSON and a completion →
    the rollout's PARL reward.

    Args:
        step_latency_s: simulated work per document read by a frozen extractor (as
            `SpawnEnv`).
    """

    def __init__(self, *, step_latency_s: float = 0.0) -> None:
        self.step_latency_s = step_latency_s
        self._envs: dict[Path, SpawnEnv] = {}
        self._lock = threading.Lock()

    @staticmethod
    def task(task: Mapping[str, Any] | SpawnTask) -> SpawnTask:
        """`task` validated as a `SpawnTask`.

        Raises:
            SpawnTaskError: it is not one (the problems named).
        """
        if isinstance(task, SpawnTask):
            return task
        try:
            return SpawnTask.model_validate(dict(task))
        except ValidationError as exc:
            raise SpawnTaskError(
                f"task {task.get('id')!r} is not a spawn task: {validation_problems(exc)}"
            ) from None

    def env(self, task: SpawnTask) -> SpawnEnv:
        """The `SpawnEnv` over `task.corpus`, loaded once per corpus path.

        Raises:
            SpawnTaskError: the task has no corpus path, or its path does not exist.
            CorpusError: the corpus cannot be loaded.
        """
        if task.corpus is None:
            raise SpawnTaskError(
                f"task {task.id!r} has no corpus path, so its completions cannot be carried "
                "out: make tasks with make_spawn_tasks(..., source=<corpus path>)"
            )
        path = Path(task.corpus).expanduser()
        if not path.exists():
            raise SpawnTaskError(
                f"the corpus {task.corpus!r} of task {task.id!r} does not exist (relative "
                f"paths are read from the working directory, {Path.cwd()})"
            )
        key = path.resolve()
        with self._lock:
            if key not in self._envs:
                self._envs[key] = load_spawn_env(key, step_latency_s=self.step_latency_s)
            return self._envs[key]

    def rollout(
        self,
        task: Mapping[str, Any] | SpawnTask,
        completion: str,
        *,
        step: int = 0,
        lambda1: Schedule | float | None = None,
        lambda2: Schedule | float | None = None,
    ) -> SpawnRollout:
        """`completion` carried out for `task` (a `SpawnTask` or its JSON) and scored."""
        spawn = self.task(task)
        env = self.env(spawn)
        return _run(env.arun(spawn, completion, step=step, lambda1=lambda1, lambda2=lambda2))

    def score(
        self,
        task: Mapping[str, Any],
        completion: str,
        *,
        step: int = 0,
        lambda1: Schedule | float | None = None,
        lambda2: Schedule | float | None = None,
    ) -> RewardBreakdown:
        """The reward breakdown of `rollout` (what `rewards.envs` asks of an environment)."""
        return self.rollout(task, completion, step=step, lambda1=lambda1, lambda2=lambda2).breakdown

    def close(self) -> None:
        """Shut the loaded environments' thread pools down (they load again on use)."""
        with self._lock:
            envs, self._envs = list(self._envs.values()), {}
        for env in envs:
            env.close()


#: The environment registered for `SPAWN_ENV` when this module is imported.
SPAWN_COMPLETION_ENV = SpawnCompletionEnv()
register_env(SPAWN_ENV, SPAWN_COMPLETION_ENV)


__all__ = [
    "SPAWN_COMPLETION_ENV",
    "TOOLS_HEADER",
    "SpawnCompletionEnv",
    "chat_messages",
    "prompt_pairs",
    "tools_prompt",
]
