"""RL export: group-relative advantages and a versioned JSONL record per rollout.

K rollouts of one task form a group; each is scored (`rewards.parl.score`), its advantage
is its reward relative to the group (GRPO), and `rollout_record` turns it into a
`RolloutRecord`: the task, the orchestrator's turns as chat messages, per-spawn attribution,
token logprobs where the server gave them, the reward breakdown and the advantage.

    records = build_group(trajs, breakdowns, task=task, group="g1")
    write_rollouts("rollouts.jsonl", records)
    rows = to_trl(load_rollouts("rollouts.jsonl"))   # prompt / completion / reward rows

The JSONL layout is `ROLLOUT_SCHEMA` (`kimmy.rollout/v1`); every line names it in its
`schema` key and `load_rollouts` refuses any other version with a clear error.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from swarm.errors import UserError, validation_problems

if TYPE_CHECKING:
    from rewards.parl import RewardBreakdown
    from rewards.trajectory import Episode, Trajectory
    from swarm.schema import Plan

#: The record layout written by this version; bump the suffix when a field changes meaning.
ROLLOUT_SCHEMA = "kimmy.rollout/v1"


class RolloutSchemaError(UserError):
    """A rollouts file is not in the layout this version reads (or not JSONL at all)."""


def group_advantages(rewards: Sequence[float], eps: float = 1e-6) -> list[float]:
    """GRPO advantages of one group: `(r - mean) / (std + eps)`, population std.

    A group whose rewards are all equal gets advantages of exactly 0 (no learning signal).

    Raises:
        UserError: a reward is not a finite number, or `eps` is not positive.
    """
    if not eps > 0:
        raise UserError(f"eps must be a positive number, got {eps!r}")
    values = [float(r) for r in rewards]
    for i, r in enumerate(values):
        if not math.isfinite(r):
            raise UserError(f"reward {i} is {r!r}; rewards must be finite numbers")
    if not values or max(values) == min(values):
        return [0.0] * len(values)  # exactly 0: no rounding noise divided by eps
    mean = math.fsum(values) / len(values)
    std = math.sqrt(math.fsum((r - mean) ** 2 for r in values) / len(values))
    return [(r - mean) / (std + eps) for r in values]


class SpawnRecord(BaseModel):
    """What became of one sub-agent an orchestrator spawned (per-spawn attribution)."""

    model_config = ConfigDict(extra="forbid")

    #: Position of the spawning turn among the record's turns (its assistant messages), from 0.
    turn: int
    subtask_id: str
    role: str
    status: str
    steps: int
    #: Finished done with a non-empty output.
    completed: bool
    #: A dependent finished done, or it is a sink whose output is part of the result.
    used: bool


class RolloutRecord(BaseModel):
    """One rollout of a task, as one JSONL line (`ROLLOUT_SCHEMA`).

    The Python attribute `schema_` is written as the key `schema` (pydantic reserves the
    name on models).
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True, serialize_by_alias=True)

    schema_: str = Field(ROLLOUT_SCHEMA, alias="schema")
    #: The task the group ran (the task file's JSON).
    task: dict[str, Any]
    #: The group of rollouts this one's advantage is relative to.
    group: str
    #: Position in the group, from 0.
    index: int
    run_id: str
    #: System (the goal); user (the first orchestrator's subtask: instructions, inputs) when
    #: the plan was given; then per orchestrator turn: assistant (its spawns as JSON) and
    #: user (the spawned sub-agents' outcomes, refused spawns, as JSON).
    messages: list[dict[str, Any]]
    spawns: list[SpawnRecord]
    #: Per model call of the orchestrators: usage, and logprobs/token ids when available.
    tokens: list[dict[str, Any]]
    #: `RewardBreakdown.to_dict()`.
    reward: dict[str, Any]
    advantage: float


def _spawn_action(ids: list[str], traj: Trajectory, specs: dict[str, Any]) -> dict[str, Any]:
    """The JSON of one spawn decision: the subtasks as the orchestrator gave them."""
    out = []
    for k in ids:
        spec = specs.get(k)
        if spec is not None:
            item = {"id": k, "role": spec.role, "instructions": spec.instructions}
            item |= {"inputs": spec.inputs, "depends_on": list(spec.depends_on)}
        else:
            e = traj.episodes.get(k)
            item = {"id": k, "role": e.role if e else "", "depends_on": e.depends_on if e else []}
        out.append(item)
    return {"spawn": out}


def _outcome(e: Episode | None, k: str) -> dict[str, Any]:
    if e is None:
        return {"id": k, "status": "unknown"}
    return {
        "id": k,
        "role": e.role,
        "status": e.status,
        "steps": e.steps,
        "completed": e.output_valid,
        "used": e.output_used,
    }


def _messages_and_spawns(
    traj: Trajectory, plan: Plan | None
) -> tuple[list[dict[str, Any]], list[SpawnRecord]]:
    specs: dict[str, Any] = plan.by_id() if plan is not None else {}
    messages: list[dict[str, Any]] = [{"role": "system", "content": traj.goal}]
    spawns: list[SpawnRecord] = []
    turns = sorted(traj.turns, key=lambda t: (t.ts, t.subtask_id, t.index))
    first = specs.get(turns[0].subtask_id) if turns else None
    if first is not None:  # the orchestrator's own subtask: what its policy was asked
        charge = {"subtask": first.id, "instructions": first.instructions, "inputs": first.inputs}
        messages.append({"role": "user", "content": json.dumps(charge, sort_keys=True)})
    for n, turn in enumerate(turns):
        action = _spawn_action(turn.spawned, traj, specs)
        if turn.edges:
            action["feeds"] = [list(edge) for edge in turn.edges]
        messages.append({"role": "assistant", "content": json.dumps(action, sort_keys=True)})
        feedback: dict[str, Any] = {
            "outcomes": [_outcome(traj.episodes.get(k), k) for k in turn.spawned]
        }
        if turn.refused:
            feedback["refused"] = list(turn.refused)
        messages.append({"role": "user", "content": json.dumps(feedback, sort_keys=True)})
        for k in turn.spawned:
            e = traj.episodes.get(k)
            spawns.append(
                SpawnRecord(
                    turn=n,
                    subtask_id=k,
                    role=e.role if e else "",
                    status=e.status if e else "unknown",
                    steps=e.steps if e else 0,
                    completed=bool(e and e.output_valid),
                    used=bool(e and e.output_used),
                )
            )
    return messages, spawns


def _tokens(traj: Trajectory) -> list[dict[str, Any]]:
    out = []
    for k, e in traj.episodes.items():
        if not e.is_orchestrator:
            continue
        for i, call in enumerate(e.model_calls):
            out.append(
                {
                    "subtask_id": k,
                    "call": i,
                    "attempt": call.attempt,
                    "usage": call.usage.model_dump(),
                    "error": call.error,
                    "logprobs": call.logprobs,
                }
            )
    return out


def rollout_record(
    traj: Trajectory,
    breakdown: RewardBreakdown,
    *,
    task: dict[str, Any],
    group: str,
    index: int,
    advantage: float,
    plan: Plan | None = None,
) -> RolloutRecord:
    """The export record of one scored rollout.

    Args:
        traj: the rollout's trajectory.
        breakdown: its reward (`rewards.parl.score`).
        task: the task the group ran (kept verbatim in the record).
        group: the group id; index: its position in the group.
        advantage: its group-relative advantage (`group_advantages`).
        plan: the stored plan (`RunStore.load_run(...).plan`); with it the assistant turns
            hold each spawn's instructions and inputs, without it only id, role, depends_on.
    """
    messages, spawns = _messages_and_spawns(traj, plan)
    return RolloutRecord(
        task=dict(task),
        group=group,
        index=index,
        run_id=traj.run_id,
        messages=messages,
        spawns=spawns,
        tokens=_tokens(traj),
        reward=breakdown.to_dict(),
        advantage=float(advantage),
    )


def build_group(
    trajs: Sequence[Trajectory],
    breakdowns: Sequence[RewardBreakdown],
    *,
    task: dict[str, Any],
    group: str,
    plans: Sequence[Plan | None] | None = None,
    eps: float = 1e-6,
) -> list[RolloutRecord]:
    """The records of one group: advantages from the breakdowns' totals, one record each.

    Raises:
        UserError: the sequences differ in length.
    """
    plans = list(plans) if plans is not None else [None] * len(trajs)
    if not len(trajs) == len(breakdowns) == len(plans):
        raise UserError(
            f"a group needs one breakdown (and plan) per trajectory: got {len(trajs)} "
            f"trajectories, {len(breakdowns)} breakdowns, {len(plans)} plans"
        )
    advantages = group_advantages([b.total for b in breakdowns], eps)
    return [
        rollout_record(t, b, task=task, group=group, index=i, advantage=a, plan=p)
        for i, (t, b, a, p) in enumerate(zip(trajs, breakdowns, advantages, plans, strict=True))
    ]


def write_rollouts(path: str | Path, records: Iterable[RolloutRecord]) -> Path:
    """Write records as JSONL (one per line, `ROLLOUT_SCHEMA`); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for record in records:
            f.write(record.model_dump_json() + "\n")
    return path


def _parse_line(path: Path, n: int, line: str) -> RolloutRecord:
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise RolloutSchemaError(f"{path}:{n}: not a JSON object ({exc.msg})") from None
    if not isinstance(data, dict):
        raise RolloutSchemaError(f"{path}:{n}: not a JSON object (got {type(data).__name__})")
    found = data.get("schema")
    if found != ROLLOUT_SCHEMA:
        raise RolloutSchemaError(
            f"{path}:{n}: rollout schema {found!r} is not supported; "
            f"this version reads {ROLLOUT_SCHEMA!r} only"
        )
    try:
        return RolloutRecord.model_validate(data)
    except ValidationError as exc:
        problem = validation_problems(exc, limit=1, root="(record)")
        raise RolloutSchemaError(f"{path}:{n}: bad {ROLLOUT_SCHEMA} record at {problem}") from None


def load_rollouts(path: str | Path) -> list[RolloutRecord]:
    """Read a rollouts JSONL file back (blank lines are skipped).

    Raises:
        UserError: the file does not exist.
        RolloutSchemaError: a line is not JSON, names another schema version, or does not
            match the record layout (the message names the file and line).
    """
    path = Path(path)
    if not path.is_file():
        raise UserError(f"rollouts file {str(path)!r} does not exist (expected a .jsonl file)")
    records = []
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.strip():
                records.append(_parse_line(path, n, line))
    return records


def to_trl(records: Iterable[RolloutRecord]) -> list[dict[str, Any]]:
    """TRL-style conversational rows: prompt (messages before the first assistant turn),
    completion (the orchestrator's turns and their feedback), reward (total), advantage.
    """
    rows = []
    for r in records:
        first = next(
            (i for i, m in enumerate(r.messages) if m.get("role") == "assistant"),
            len(r.messages),
        )
        rows.append(
            {
                "prompt": [dict(m) for m in r.messages[:first]],
                "completion": [dict(m) for m in r.messages[first:]],
                "reward": float(r.reward["total"]),
                "advantage": r.advantage,
            }
        )
    return rows


__all__ = [
    "ROLLOUT_SCHEMA",
    "RolloutRecord",
    "RolloutSchemaError",
    "SpawnRecord",
    "build_group",
    "group_advantages",
    "load_rollouts",
    "rollout_record",
    "to_trl",
    "write_rollouts",
]
