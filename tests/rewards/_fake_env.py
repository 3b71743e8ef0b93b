"""A completion environment of our own for the trainer-export tests (no swarm run): it
scores "good" with r_result 1, anything else 0, r_inst 0.5 and r_comp 1 always, and records
what it was asked."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kimmy_swarm.rewards.parl import CriticalSteps, RewardBreakdown, Schedule, combine

FAKE = "test/fake"


def weight(value: Schedule | float | None, step: int) -> float:
    if value is None:
        return Schedule(kind="linear").value(step)
    return value.value(step) if isinstance(value, Schedule) else float(value)


@dataclass
class FakeEnv:
    calls: list[tuple[dict[str, Any], str, int]] = field(default_factory=list)

    def score(
        self,
        task: Mapping[str, Any],
        completion: str,
        *,
        step: int = 0,
        lambda1: Schedule | float | None = None,
        lambda2: Schedule | float | None = None,
    ) -> RewardBreakdown:
        self.calls.append((dict(task), completion, step))
        lam1, lam2 = weight(lambda1, step), weight(lambda2, step)
        r_result = 1.0 if completion.strip() == "good" else 0.0
        return RewardBreakdown(
            r_inst=0.5, r_comp=1.0, r_result=r_result, lambda1=lam1, lambda2=lam2,
            total=combine(0.5, 1.0, r_result, lam1, lam2),
            critical=CriticalSteps(steps=1, serial_steps=1, wall_s=0.0, serial_wall_s=0.0),
            grader="fake", step=step,
        )  # fmt: skip


def fake_task(task_id: str = "t0", **extra: Any) -> dict[str, Any]:
    return {"id": task_id, "env": FAKE, **extra}
