"""TRL: a prompt dataset of tasks, and the PARL reward as a TRL reward function.

`trl.GRPOTrainer` samples completions of each row's `prompt` and calls its reward functions
with them and the row's other columns. Here a row carries its task as JSON (`task`), and
`parl_reward` hands each completion to the task's registered environment (`rewards.envs`:
`import kimmy_swarm.agents.parl` registers `kimmy/wide_spawn`, which carries the orchestrator's tool
calls out with a real swarm of frozen sub-agents), and returns r_PARL per completion:

    import kimmy_swarm.agents.parl
    from kimmy_swarm.agents.parl import make_spawn_tasks, prompt_pairs
    from kimmy_swarm.rewards.trl import parl_reward, trl_prompt_dataset

    dataset = trl_prompt_dataset(prompt_pairs(make_spawn_tasks(corpus, count=64, width=6,
                                                               source=corpus_path)))
    trainer = GRPOTrainer(model=..., reward_funcs=parl_reward, train_dataset=dataset, args=...)

λ1 and λ2 follow `rewards.parl.Schedule`s read at the trainer's `global_step`;
`make_parl_reward` sets other schedules (or constants: `lambda1=0, lambda2=0` rewards the
result only). Nothing here imports TRL; `trl_prompt_dataset` imports `datasets` on use.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kimmy_swarm.rewards._prompts import TaskPrompt, checked_messages
from kimmy_swarm.rewards.envs import score_completion, task_json
from kimmy_swarm.rewards.parl import Schedule
from kimmy_swarm.swarm.errors import UserError

if TYPE_CHECKING:
    from datasets import Dataset


def prompt_rows(pairs: Iterable[TaskPrompt]) -> list[dict[str, Any]]:
    """TRL conversational prompt rows: `prompt` (the chat messages) and `task` (the task's
    JSON, which TRL hands to the reward function as its `task` argument).

    Raises:
        EnvTaskError: a task is not a JSON object with an `env` field.
        UserError: a prompt is not a list of role/content messages.
    """
    rows = []
    for i, (task, messages) in enumerate(pairs):
        rows.append({"prompt": checked_messages(messages, f"prompt {i}"), "task": task_json(task)})
    return rows


def trl_prompt_dataset(pairs: Iterable[TaskPrompt]) -> Dataset:
    """`prompt_rows` as a `datasets.Dataset` (what `GRPOTrainer(train_dataset=)` takes).

    Raises:
        UserError: `datasets` is not installed; as `prompt_rows`.
    """
    try:
        from datasets import Dataset
    except ImportError:
        raise UserError(
            "trl_prompt_dataset needs the 'datasets' package: pip install datasets "
            "(or build a dataset from kimmy_swarm.rewards.trl.prompt_rows yourself)"
        ) from None
    return Dataset.from_list(prompt_rows(pairs))


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):  # content parts: [{"type": "text", "text": …}, …]
        return "".join(
            p["text"] for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str)
        )
    raise UserError(f"message content must be text or a list of parts; got {content!r}")


def completion_text(completion: str | Sequence[Mapping[str, Any]]) -> str:
    """What the policy wrote: a plain completion as it is; a conversational one (a list of
    messages) as its last assistant message — its tool calls (when the chat template's
    parser split them off) as one JSON object per line, then its text."""
    if isinstance(completion, str):
        return completion
    if not isinstance(completion, Sequence):
        raise UserError(
            f"a completion must be text or a list of messages; got {type(completion).__name__}"
        )
    replies = [m for m in completion if isinstance(m, Mapping) and m.get("role") == "assistant"]
    if not replies:
        return ""
    last = replies[-1]
    lines = []
    for call in last.get("tool_calls") or ():
        fn = call.get("function", call) if isinstance(call, Mapping) else None
        if isinstance(fn, Mapping):
            lines.append(json.dumps({"name": fn.get("name"), "arguments": fn.get("arguments")}))
    text = _content_text(last.get("content"))
    return "\n".join([*lines, text] if text else lines)


def _step(trainer_state: Any, default: int) -> int:
    step = getattr(trainer_state, "global_step", None) if trainer_state is not None else None
    return default if step is None else int(step)


class ParlReward:
    """A TRL reward function: r_PARL of each completion, from the task in its row.

    Called as TRL calls reward functions: `reward(prompts=, completions=, task=[…],
    trainer_state=, log_metric=, log_extra=, …)`. Returns one float per completion (None
    for a row whose task is None, which TRL leaves out of the sum). Where TRL passes
    `log_metric` / `log_extra`, the batch's mean r_inst, r_comp, r_result and λs are logged
    as `parl/<term>` and each completion's terms go to the completions table.

    Args:
        lambda1, lambda2: `Schedule`s or constants (default: linear from 1 to 0 over
            `total_steps`).
        total_steps: the default schedules' length.
        step: the step used when no `trainer_state` is passed.
        name: the name TRL logs the reward under.
    """

    def __init__(
        self,
        *,
        lambda1: Schedule | float | None = None,
        lambda2: Schedule | float | None = None,
        total_steps: int = 1000,
        step: int = 0,
        name: str = "parl_reward",
    ) -> None:
        linear = Schedule(kind="linear", total_steps=total_steps)
        self.lambda1 = lambda1 if lambda1 is not None else linear
        self.lambda2 = lambda2 if lambda2 is not None else linear
        self.step = step
        self.__name__ = name

    def __call__(
        self,
        prompts: Sequence[Any] | None = None,
        completions: Sequence[str | Sequence[Mapping[str, Any]]] = (),
        **kwargs: Any,
    ) -> list[float | None]:
        tasks = kwargs.get("task")
        if tasks is None:
            raise UserError(
                f"{self.__name__} needs the dataset's 'task' column (rows from "
                "rewards.trl.prompt_rows); the call had: "
                + (", ".join(sorted(kwargs)) or "no other columns")
            )
        if len(tasks) != len(completions):
            raise UserError(
                f"{self.__name__} got {len(completions)} completions but {len(tasks)} tasks"
            )
        step = _step(kwargs.get("trainer_state"), self.step)
        rewards: list[float | None] = []
        terms: dict[str, list[float | None]] = {"r_inst": [], "r_comp": [], "r_result": []}
        lambdas: tuple[float, float] | None = None
        for task, completion in zip(tasks, completions, strict=True):
            if task is None:
                rewards.append(None)
                for values in terms.values():
                    values.append(None)
                continue
            b = score_completion(task, completion_text(completion), step=step,
                                 lambda1=self.lambda1, lambda2=self.lambda2)  # fmt: skip
            rewards.append(b.total)
            for key, values in terms.items():
                values.append(getattr(b, key))
            lambdas = (b.lambda1, b.lambda2)
        _log(kwargs, terms, lambdas)
        return rewards


def _log(
    kwargs: Mapping[str, Any],
    terms: Mapping[str, list[float | None]],
    lambdas: tuple[float, float] | None,
) -> None:
    log_metric, log_extra = kwargs.get("log_metric"), kwargs.get("log_extra")
    if callable(log_extra):
        for key, values in terms.items():
            log_extra(key, list(values))
    if not callable(log_metric) or lambdas is None:
        return
    for key, values in terms.items():
        scored = [v for v in values if v is not None]
        log_metric(f"parl/{key}", sum(scored) / len(scored))
    log_metric("parl/lambda1", lambdas[0])
    log_metric("parl/lambda2", lambdas[1])


def make_parl_reward(
    *,
    lambda1: Schedule | float | None = None,
    lambda2: Schedule | float | None = None,
    total_steps: int = 1000,
    name: str = "parl_reward",
) -> ParlReward:
    """A PARL reward function for TRL with these λ (see `ParlReward`); its `__name__` is
    `name`, which TRL logs it under (`rewards/parl_reward/mean`)."""
    return ParlReward(lambda1=lambda1, lambda2=lambda2, total_steps=total_steps, name=name)


_DEFAULT = ParlReward()


def parl_reward(
    prompts: Sequence[Any] | None = None,
    completions: Sequence[str | Sequence[Mapping[str, Any]]] = (),
    **kwargs: Any,
) -> list[float | None]:
    """r_PARL of each completion for the task in its row (TRL's reward function form): λ1
    and λ2 linear from 1 to 0 over 1,000 steps, read at `trainer_state.global_step` (step
    0 without one). See `ParlReward`.

    Raises:
        UserError: no `task` column, or one task per completion missing.
        EnvTaskError, UnknownEnvError: a task that is not one, or whose environment is not
            registered (`import kimmy_swarm.agents.parl` registers `kimmy/wide_spawn`).
    """
    return _DEFAULT(prompts, completions, **kwargs)


__all__ = [
    "ParlReward",
    "TaskPrompt",
    "completion_text",
    "make_parl_reward",
    "parl_reward",
    "prompt_rows",
    "trl_prompt_dataset",
]
