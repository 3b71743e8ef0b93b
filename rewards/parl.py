"""PARL rewards: pure functions over a `Trajectory`.

Parallel-Agent RL (Kimi K2.5's Agent Swarm) trains the orchestrator with

    r = λ1·r_inst + λ2·r_comp + r_result

where `r_inst` rewards instantiating sub-agents (against serial collapse: an orchestrator
that does everything itself), `r_comp` rewards sub-agents that finish with an output that
is used (against spurious parallelism: spawning many that do nothing), and `r_result` is
the task's own score. λ1 and λ2 are annealed to zero, so late in training only the result
counts. `critical_steps` measures latency the PARL way: per stage, the orchestrator's steps
plus the slowest sub-agent's, instead of the sum of everyone's steps.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, model_validator

from kimmy_swarm.swarm.errors import UserError

if TYPE_CHECKING:
    from kimmy_swarm.rewards.graders import Grader
    from kimmy_swarm.rewards.trajectory import Episode, Trajectory

SCHEDULE_KINDS = ("constant", "linear", "cosine", "step")


class RewardConfigError(UserError):
    """A reward setting (width, schedule, step, weight) is out of range."""


def _instantiated(traj: Trajectory) -> list[Episode]:
    """Sub-agents (not orchestrators) that were created and started."""
    return [e for e in traj.episodes.values() if e.started and not e.is_orchestrator]


def instantiation_reward(traj: Trajectory, *, width: int = 64) -> float:
    """r_inst = min(n, width) / width, n = sub-agents (not orchestrators) that started.

    Saturates at `width`: past it, more sub-agents earn nothing more.

    Raises:
        RewardConfigError: `width` < 1.
    """
    if isinstance(width, bool) or not isinstance(width, int) or width < 1:
        raise RewardConfigError(f"width must be an integer >= 1, got {width!r}")
    return min(len(_instantiated(traj)), width) / width


def completion_reward(traj: Trajectory) -> float:
    """r_comp = share of started sub-agents whose output is valid and used (0.0 when none).

    A sub-agent whose model failed and whose offline procedure made the output instead
    (`Episode.fell_back`) counts as not completed: the output is not the policy's.
    """
    subs = _instantiated(traj)
    if not subs:
        return 0.0
    return sum(e.output_valid and e.output_used and not e.fell_back for e in subs) / len(subs)


@dataclass(frozen=True)
class CriticalSteps:
    """Latency of a run along its stages, against running every step one after another.

    Attributes:
        steps: Σ over stages of (orchestrator steps in the stage + the most steps of any
            other sub-agent in it).
        serial_steps: Σ of every started episode's steps.
        wall_s: Σ over stages of the longest episode's duration.
        serial_wall_s: Σ of every started episode's duration.
    """

    steps: int
    serial_steps: int
    wall_s: float
    serial_wall_s: float

    @property
    def speedup(self) -> float:
        """serial_steps / steps (1.0 for an empty run)."""
        return self.serial_steps / self.steps if self.steps else 1.0

    @property
    def wall_speedup(self) -> float:
        """serial_wall_s / wall_s (1.0 when no time was measured)."""
        return self.serial_wall_s / self.wall_s if self.wall_s > 0 else 1.0


def critical_steps(traj: Trajectory) -> CriticalSteps:
    """The critical steps (and wall time) of a run over `traj.stages()`."""
    steps = serial = 0
    wall = serial_wall = 0.0
    for stage in traj.stages():
        episodes = [traj.episodes[k] for k in stage]
        orchestrators = sum(e.steps for e in episodes if e.is_orchestrator)
        others = max((e.steps for e in episodes if not e.is_orchestrator), default=0)
        steps += orchestrators + others
        serial += sum(e.steps for e in episodes)
        wall += max(e.duration_s for e in episodes)
        serial_wall += sum(e.duration_s for e in episodes)
    return CriticalSteps(steps=steps, serial_steps=serial, wall_s=wall, serial_wall_s=serial_wall)


class Schedule(BaseModel):
    """An annealing schedule for a reward weight λ over training steps.

    `linear`, `cosine` and `step` reach exactly 0 at `total_steps` (`step`: at
    `drop_at`·`total_steps`) and stay 0 after; `constant` stays `start`.
    """

    kind: Literal["constant", "linear", "cosine", "step"]
    start: float = 1.0
    total_steps: int = 1000
    #: For `step`: the fraction of `total_steps` where λ drops to 0.
    drop_at: float = 0.5

    @model_validator(mode="before")
    @classmethod
    def _check(cls, data: Any) -> Any:
        # Raised as a UserError (not pydantic's ValidationError) so the CLI shows one line.
        if not isinstance(data, dict):
            return data
        kind = data.get("kind")
        if kind not in SCHEDULE_KINDS:
            raise RewardConfigError(
                f"unknown schedule kind {kind!r}; use one of {', '.join(SCHEDULE_KINDS)}"
            )
        start = data.get("start", 1.0)
        if not _real(start) or start < 0:
            raise RewardConfigError(f"schedule start must be a finite number >= 0, got {start!r}")
        total = data.get("total_steps", 1000)
        if isinstance(total, bool) or not isinstance(total, int) or total < 1:
            raise RewardConfigError(f"total_steps must be an integer >= 1, got {total!r}")
        drop = data.get("drop_at", 0.5)
        if not _real(drop) or not 0 < drop <= 1:
            raise RewardConfigError(f"drop_at must be a fraction in (0, 1], got {drop!r}")
        return data

    def value(self, step: int) -> float:
        """λ at training step `step` (>= 0).

        Raises:
            RewardConfigError: `step` is negative.
        """
        _check_step(step)
        if self.kind == "constant":
            return self.start
        if self.kind == "step":
            return self.start if step < self.drop_at * self.total_steps else 0.0
        if step >= self.total_steps:
            return 0.0
        frac = step / self.total_steps
        if self.kind == "linear":
            return self.start * (1.0 - frac)
        return self.start * 0.5 * (1.0 + math.cos(math.pi * frac))


def _check_step(step: Any) -> None:
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise RewardConfigError(f"step must be an integer >= 0, got {step!r}")


def _real(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


@dataclass(frozen=True)
class RewardBreakdown:
    """Every term of one trajectory's PARL reward, and what it was computed with."""

    r_inst: float
    r_comp: float
    r_result: float
    lambda1: float
    lambda2: float
    total: float
    critical: CriticalSteps
    grader: str
    step: int

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict; `critical` also carries `speedup` and `wall_speedup`."""
        out = asdict(self)
        out["critical"] = {
            **asdict(self.critical),
            "speedup": self.critical.speedup,
            "wall_speedup": self.critical.wall_speedup,
        }
        return out


def combine(r_inst: float, r_comp: float, r_result: float, lambda1: float, lambda2: float) -> float:
    """The PARL reward λ1·r_inst + λ2·r_comp + r_result."""
    return lambda1 * r_inst + lambda2 * r_comp + r_result


def _weight(schedule: Schedule | float, step: int, name: str) -> float:
    if isinstance(schedule, Schedule):
        return schedule.value(step)
    if not _real(schedule) or schedule < 0:
        raise RewardConfigError(
            f"{name} must be a Schedule or a finite number >= 0, got {schedule!r}"
        )
    return float(schedule)


def score(
    traj: Trajectory,
    grader: Grader | None = None,
    *,
    step: int = 0,
    lambda1: Schedule | float | None = None,
    lambda2: Schedule | float | None = None,
    width: int = 64,
) -> RewardBreakdown:
    """Score a trajectory: every PARL term, λs at `step`, and the combined reward.

    Args:
        traj: the run.
        grader: scores the result in [0, 1] (None: `CompletionGrader`; a pipeline's own
            grader comes from `agents.graders.grader_for(traj)`).
        step: the training step the λ schedules are read at.
        lambda1, lambda2: schedules (default: linear from 1 over 1000 steps) or constants.
        width: where r_inst saturates.

    Raises:
        RewardConfigError: a bad width, step or weight.
        GraderError: the grader scored outside [0, 1].
    """
    from kimmy_swarm.rewards.graders import CompletionGrader, GraderError

    _check_step(step)
    grader = grader if grader is not None else CompletionGrader()
    lam1 = _weight(lambda1 if lambda1 is not None else Schedule(kind="linear"), step, "lambda1")
    lam2 = _weight(lambda2 if lambda2 is not None else Schedule(kind="linear"), step, "lambda2")
    r_inst = instantiation_reward(traj, width=width)
    r_comp = completion_reward(traj)
    r_result = grader(traj)
    if not _real(r_result) or not 0.0 <= r_result <= 1.0:
        raise GraderError(f"grader {grader.name!r} scored {r_result!r}; scores lie in [0, 1]")
    return RewardBreakdown(
        r_inst=r_inst,
        r_comp=r_comp,
        r_result=float(r_result),
        lambda1=lam1,
        lambda2=lam2,
        total=combine(r_inst, r_comp, r_result, lam1, lam2),
        critical=critical_steps(traj),
        grader=grader.name,
        step=step,
    )


__all__ = [
    "SCHEDULE_KINDS",
    "CriticalSteps",
    "RewardBreakdown",
    "RewardConfigError",
    "Schedule",
    "combine",
    "completion_reward",
    "critical_steps",
    "instantiation_reward",
    "score",
]
