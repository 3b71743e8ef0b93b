"""The orchestrator's conversation in a rollout record: its own messages and tokens when it
recorded its turns, else a description of its spawns that says it is one.

An agent that records its turns (the orchestrator agent: `AgentTurn` events) leaves its
conversation in the run as it went: the opening messages (system, user; from the run's
transcript), then per turn the model's message — content and tool calls exactly as the model
gave them, with the token logprobs (and ids) the server sent — and the messages that
followed it (its tool calls' results, role `tool` with `tool_call_id`). `conversation`
returns exactly those, and nothing in between.

Spawns made without a recorded turn (a worker calling `ctx.spawn`, e.g. a scripted
orchestrator) have no model text. They are described instead, each spawn turn as
an assistant message `{"spawn": […]}` (with `"feeds"` for extra edges) and a user message
with the spawned sub-agents' outcomes (and refused spawns). Every such message carries
`"reconstructed": true`, as does an opening the transcript did not keep whole: a text cut at
the capture's `max_chars` keeps its cut text; with no opening captured (content capture off,
or no model call) the goal and the orchestrator's subtask stand in for it. Trainers drop
records with a reconstructed message (`RolloutRecord.reconstructed`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from kimmy_swarm.rewards.trajectory_models import Episode, OrchestratorTurn, Trajectory
    from kimmy_swarm.swarm.schema import Plan

#: The key that marks a message which is not the orchestrator's own text.
RECONSTRUCTED = "reconstructed"
#: The end `swarm.transcript_capture.cut` writes on a text it cut.
_CUT = re.compile(r" … \[cut at [\d,]+ of [\d,]+ characters\]\Z")


class SpawnRecord(BaseModel):
    """What became of one sub-agent an orchestrator spawned (per-spawn attribution)."""

    model_config = ConfigDict(extra="forbid")

    #: Position of the spawning turn among the record's assistant messages, from 0; None
    #: when another agent spawned it (`parent`), whose conversation is not the record's.
    turn: int | None
    #: The subtask that spawned it.
    parent: str
    subtask_id: str
    role: str
    status: str
    steps: int
    #: Finished done with a non-empty output.
    completed: bool
    #: A dependent finished done, or it is a sink whose output is part of the result.
    used: bool


class TurnTokens(BaseModel):
    """The tokens of one assistant message of a record, as the server reported them.

    `token_ids` are the exact completion (a tool call's message holds the call parsed from
    the text; `text` joined is the text itself). All three are None when the turn carries
    no logprobs: not asked for, not given by the server, or a reconstructed turn.
    """

    model_config = ConfigDict(extra="forbid")

    #: Position among the record's assistant messages, from 0.
    turn: int
    #: Index of the message in `RolloutRecord.messages`.
    message: int
    #: The sampled token ids; None when the server sent none (e.g. OpenAI's API).
    token_ids: list[int] | None = None
    #: The sampled tokens' log-probabilities.
    logprobs: list[float] | None = None
    #: The sampled tokens' text pieces.
    text: list[str] | None = None


@dataclass(frozen=True)
class Conversation:
    """A rollout's orchestrator conversation (see the module docstring)."""

    #: The subtask whose conversation `messages` is (None: the run made no spawn turn).
    orchestrator: str | None
    messages: list[dict[str, Any]]
    spawns: list[SpawnRecord]
    tokens: list[TurnTokens]

    @property
    def reconstructed(self) -> bool:
        """Some message is not the orchestrator's own text."""
        return any(m.get(RECONSTRUCTED) for m in self.messages)


def _own(turn: OrchestratorTurn) -> bool:
    """The turn holds the model's own (assistant) message."""
    return turn.message is not None and turn.message.get("role") == "assistant"


def _described(message: dict[str, Any]) -> dict[str, Any]:
    return {**message, RECONSTRUCTED: True}


def _described_opening(traj: Trajectory, specs: dict[str, Any], k: str | None) -> list[dict]:
    """The goal, and the orchestrator's subtask when the plan has it (both reconstructed)."""
    messages = [_described({"role": "system", "content": traj.goal})]
    spec = specs.get(k) if k is not None else None
    if spec is not None:  # what the orchestrator's subtask asked of it
        charge = {"subtask": spec.id, "instructions": spec.instructions, "inputs": spec.inputs}
        messages.append(_described({"role": "user", "content": json.dumps(charge, sort_keys=True)}))
    return messages


def _opening(traj: Trajectory, specs: dict[str, Any], k: str) -> list[dict[str, Any]]:
    """The opening as the transcript kept it; cut texts marked, none kept: described."""
    kept = traj.openings.get(k)
    if not kept or not all(isinstance(m.get("content"), str) for m in kept):
        return _described_opening(traj, specs, k)
    return [_described(m) if _CUT.search(m["content"]) else dict(m) for m in kept]


def _spawn_action(turn: OrchestratorTurn, traj: Trajectory, specs: dict[str, Any]) -> dict:
    """The JSON of one spawn decision: the subtasks as the orchestrator gave them."""
    out = []
    for k in turn.spawned:
        spec = specs.get(k)
        if spec is not None:
            item = {"id": k, "role": spec.role, "instructions": spec.instructions}
            item |= {"inputs": spec.inputs, "depends_on": list(spec.depends_on)}
        else:
            e = traj.episodes.get(k)
            item = {"id": k, "role": e.role if e else "", "depends_on": e.depends_on if e else []}
        out.append(item)
    action: dict[str, Any] = {"spawn": out}
    if turn.edges:
        action["feeds"] = [list(edge) for edge in turn.edges]
    return action


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


def _description(turn: OrchestratorTurn, traj: Trajectory, specs: dict[str, Any]) -> list[dict]:
    """A turn without a recorded message: its spawns, then their outcomes (reconstructed)."""
    action = _spawn_action(turn, traj, specs)
    feedback: dict[str, Any] = {
        "outcomes": [_outcome(traj.episodes.get(k), k) for k in turn.spawned]
    }
    if turn.refused:
        feedback["refused"] = list(turn.refused)
    return [
        _described({"role": "assistant", "content": json.dumps(action, sort_keys=True)}),
        _described({"role": "user", "content": json.dumps(feedback, sort_keys=True)}),
    ]


def turn_tokens(turn: int, message: int, logprobs: list[dict[str, Any]] | None) -> TurnTokens:
    """The tokens of one assistant message from its recorded logprob entries."""
    if logprobs is None:
        return TurnTokens(turn=turn, message=message)
    ids = [i for lp in logprobs if type(i := lp.get("token_id")) is int]
    return TurnTokens(
        turn=turn,
        message=message,
        token_ids=ids if len(ids) == len(logprobs) else None,  # all, or none at all
        logprobs=[float(lp["logprob"]) for lp in logprobs],
        text=[str(lp.get("token", "")) for lp in logprobs],
    )


def _spawn(turn: int | None, parent: str, k: str, traj: Trajectory) -> SpawnRecord:
    e = traj.episodes.get(k)
    return SpawnRecord(
        turn=turn,
        parent=parent,
        subtask_id=k,
        role=e.role if e else "",
        status=e.status if e else "unknown",
        steps=e.steps if e else 0,
        completed=bool(e and e.output_valid),
        used=bool(e and e.output_used),
    )


def conversation(traj: Trajectory, plan: Plan | None = None) -> Conversation:
    """The orchestrator's conversation of a rollout, its spawns and its tokens.

    The conversation is that of the first agent that recorded its turns; without one, every
    spawn turn of the run is described, in time order, after the goal. Spawns of other agents
    are kept in `spawns` with `turn` None.

    Args:
        traj: the rollout's trajectory.
        plan: the stored plan; with it, described spawns hold their instructions and inputs
            and a described opening holds the orchestrator's subtask.
    """
    specs: dict[str, Any] = plan.by_id() if plan is not None else {}
    turns = sorted(traj.turns, key=lambda t: (t.ts, t.subtask_id, t.index))
    recorded = next((t.subtask_id for t in turns if _own(t)), None)
    if recorded is not None:
        mine = [t for t in turns if t.subtask_id == recorded]
        main: str | None = recorded
        messages = _opening(traj, specs, recorded)
    else:
        mine = turns
        main = turns[0].subtask_id if turns else None
        messages = _described_opening(traj, specs, main)
    tokens: list[TurnTokens] = []
    position: dict[int, int] = {}  # id(turn) → its assistant message's position
    for n, t in enumerate(mine):
        position[id(t)] = n
        own = t.message
        if own is not None and own.get("role") == "assistant":
            tokens.append(turn_tokens(n, len(messages), t.logprobs))
            messages += [dict(own), *(dict(m) for m in t.results)]
        else:
            tokens.append(TurnTokens(turn=n, message=len(messages)))
            messages += _description(t, traj, specs)
    spawns = [_spawn(position.get(id(t)), t.subtask_id, k, traj) for t in turns for k in t.spawned]
    return Conversation(main, messages, spawns, tokens)


__all__ = ["RECONSTRUCTED", "Conversation", "SpawnRecord", "TurnTokens", "conversation"]
