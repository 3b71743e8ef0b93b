"""`ParlScorer`: a trainer's group of completions → PARL rewards and group advantages.

The trainer (`model.train.grpo.train_grpo`, or anything that hands over objects with the
completion's `text` and its `prompt.key`) asks for one score per sample; each completion is
carried out by the `SpawnEnv` (all of a group at once), scored with
r = λ1·r_inst + λ2·r_comp + r_result at the training step, and given its advantage within
the group (`rewards.export.group_advantages`, GRPO).

The experiment's arms are settings of λ: `ParlScorer(env, tasks)` is PARL with both λs
annealed linearly from 1 to 0 over `total_steps`; `lambda1=0, lambda2=0` rewards the result
only; `lambda2=0` is PARL without the completion reward.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from kimmy_swarm.agents.parl.env import SpawnEnv, SpawnRollout
from kimmy_swarm.agents.parl.tasks import SpawnTask
from kimmy_swarm.rewards.export import group_advantages
from kimmy_swarm.rewards.parl import Schedule
from kimmy_swarm.swarm.errors import UserError


class _PromptLike(Protocol):
    key: str


class SampleLike(Protocol):
    """What the scorer reads of a sample: its text and its prompt's key (the task id)."""

    text: str
    prompt: _PromptLike


@dataclass(frozen=True)
class GroupScore:
    """One sample's reward, advantage within its group, and the rollout's figures."""

    reward: float
    advantage: float
    metrics: dict[str, Any] = field(default_factory=dict)


class ParlScorer:
    """Scores groups of orchestrator completions for spawn tasks.

    Args:
        env: carries the completions out.
        tasks: the tasks by id (a sample's `prompt.key`).
        lambda1, lambda2: the λ of r_inst and r_comp: a `Schedule` or a constant (default:
            linear from 1 to 0 over `total_steps`).
        total_steps: the default schedules' length.
    """

    def __init__(
        self,
        env: SpawnEnv,
        tasks: Mapping[str, SpawnTask] | Sequence[SpawnTask],
        *,
        lambda1: Schedule | float | None = None,
        lambda2: Schedule | float | None = None,
        total_steps: int = 100,
    ) -> None:
        self.env = env
        items = tasks.values() if isinstance(tasks, Mapping) else tasks
        self.tasks = {t.id: t for t in items}
        linear = Schedule(kind="linear", total_steps=total_steps)
        self.lambda1 = lambda1 if lambda1 is not None else linear
        self.lambda2 = lambda2 if lambda2 is not None else linear
        #: Every rollout scored so far (newest last), for reports.
        self.rollouts: list[SpawnRollout] = []

    def _task(self, key: str) -> SpawnTask:
        try:
            return self.tasks[key]
        except KeyError:
            raise UserError(
                f"no spawn task with id {key!r}; the scorer has {len(self.tasks)} tasks"
            ) from None

    def __call__(self, group: Sequence[SampleLike], step: int) -> list[GroupScore]:
        items = [(self._task(s.prompt.key), s.text) for s in group]
        rollouts = asyncio.run(
            self.env.arun_many(items, step=step, lambda1=self.lambda1, lambda2=self.lambda2)
        )
        self.rollouts += rollouts
        totals = [r.breakdown.total for r in rollouts]
        advantages = group_advantages(totals)
        return [
            GroupScore(r.breakdown.total, a, {**r.metrics(), "lambda1": r.breakdown.lambda1,
                                             "lambda2": r.breakdown.lambda2})
            for r, a in zip(rollouts, advantages, strict=True)
        ]  # fmt: skip


__all__ = ["GroupScore", "ParlScorer", "SampleLike"]
