"""RL export: group-relative advantages and a versioned JSONL record per rollout.

K rollouts of one task form a group; each is scored (`rewards.parl.score`), its advantage
is its reward relative to the group (GRPO), and `rollout_record` turns it into a
`RolloutRecord`: the task, the orchestrator's own conversation (`rewards.conversation`: its
messages and tool calls as the model gave them, the tool results as recorded), per-spawn
attribution, per assistant message its token ids, logprobs and text pieces where the server
gave them, the reward breakdown and the advantage. Spawns made without a recorded model turn
are described instead, and the record says so (`reconstructed`).

    records = build_group(trajs, breakdowns, task=task, group="g1")
    write_rollouts("rollouts.jsonl", records)
    rows = to_trl(load_rollouts("rollouts.jsonl"))   # prompt / completion / reward rows

The JSONL layout is `ROLLOUT_SCHEMA` (`kimmy.rollout/v2`); every line names it in its
`schema` key and `load_rollouts` refuses any other version with a clear error (for v1: what
changed, and how to export again).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kimmy_swarm.rewards.conversation import SpawnRecord, TurnTokens, conversation
from kimmy_swarm.swarm.errors import UserError, validation_problems

if TYPE_CHECKING:
    from kimmy_swarm.rewards.parl import RewardBreakdown
    from kimmy_swarm.rewards.trajectory import Trajectory
    from kimmy_swarm.swarm.schema import Plan

#: The record layout written by this version; bump the suffix when a field changes meaning.
ROLLOUT_SCHEMA = "kimmy.rollout/v2"
#: Layouts this version no longer reads, and what changed since.
_RETIRED = {
    "kimmy.rollout/v1": (
        'v1 records described the orchestrator\'s turns as reconstructed {"spawn": […]} '
        "JSON, each followed by a user feedback message; v2 records hold its own "
        "conversation (its messages and tool calls as the model gave them, the tool results, "
        "token ids and logprobs per turn)"
    ),
}


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
    #: The subtask whose conversation `messages` is (None: the run made no spawn turn).
    orchestrator: str | None = None
    #: The orchestrator's conversation (`rewards.conversation`): its opening messages, then
    #: per turn its assistant message as the model gave it and the tool results that
    #: followed, as recorded. A message that is not its own text says `"reconstructed": true`.
    messages: list[dict[str, Any]]
    #: Some message is reconstructed (spawns made without a recorded turn, described as
    #: `{"spawn": […]}` JSON, or an opening the transcript did not keep whole): train only on
    #: records where this is false.
    reconstructed: bool
    spawns: list[SpawnRecord]
    #: Per assistant message, in order: its token ids, logprobs and text pieces.
    tokens: list[TurnTokens]
    #: `RewardBreakdown.to_dict()`.
    reward: dict[str, Any]
    advantage: float


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
        plan: the stored plan (`RunStore.load_run(...).plan`); with it, spawns described for
            want of a recorded turn hold their instructions and inputs (without it only id,
            role, depends_on), and a described opening holds the orchestrator's subtask.
    """
    talk = conversation(traj, plan)
    return RolloutRecord(
        task=dict(task),
        group=group,
        index=index,
        run_id=traj.run_id,
        orchestrator=talk.orchestrator,
        messages=talk.messages,
        reconstructed=talk.reconstructed,
        spawns=talk.spawns,
        tokens=talk.tokens,
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
    if isinstance(found, str) and found in _RETIRED:
        raise RolloutSchemaError(
            f"{path}:{n}: rollout schema {found!r} is retired ({_RETIRED[found]}). "
            f"Export the runs again for {ROLLOUT_SCHEMA!r}: run `kimmy rollouts` again (or "
            "rebuild the records of the stored runs with rewards.export.build_group and "
            "write_rollouts)"
        )
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
    """TRL-style conversational rows, one per record.

    `prompt`: the messages before the first assistant message; `completion`: from it to the
    last assistant message — the orchestrator's turns and the tool results between them,
    never a trailing tool or user message (empty when there is no assistant message);
    `reward` (the total) and `advantage`; `reconstructed` (the record's flag: drop such rows
    to train only on the orchestrator's own text).
    """
    rows = []
    for r in records:
        turns = [i for i, m in enumerate(r.messages) if m.get("role") == "assistant"]
        first, last = (turns[0], turns[-1] + 1) if turns else (len(r.messages),) * 2
        rows.append(
            {
                "prompt": [dict(m) for m in r.messages[:first]],
                "completion": [dict(m) for m in r.messages[first:last]],
                "reward": float(r.reward["total"]),
                "advantage": r.advantage,
                "reconstructed": r.reconstructed,
            }
        )
    return rows


__all__ = [
    "ROLLOUT_SCHEMA",
    "RolloutRecord",
    "RolloutSchemaError",
    "SpawnRecord",
    "TurnTokens",
    "build_group",
    "group_advantages",
    "load_rollouts",
    "rollout_record",
    "to_trl",
    "write_rollouts",
]
