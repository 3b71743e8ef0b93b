"""A person approves the orchestrator's plan before it spawns past `ApprovalPolicy.spawns_over`.

The plan is one turn's spawning calls (`assign_task`, `assign_tasks`, `fan_out`). The first
of them that would take the sub-agents the orchestrator created past the policy's number
waits for a person, like any call that needs approval (`swarm.approvals`), as the tool
`spawn` whose arguments list the turn's spawning calls from that one on (numbered by their
place in the turn). The answer holds for the rest of the turn:

- approved: the calls spawn;
- approved with an edited `calls` list: the calls left out are refused (the orchestrator
  reads that a person left them out), the others spawn;
- denied: every spawning call of the turn is refused with the person's reason, which the
  orchestrator reads as its tool's error and can plan around.

The next turn that spawns past the number asks again.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kimmy_swarm.agents.toolbox import ToolError
from kimmy_swarm.swarm.approval_policy import SPAWN_TOOL

if TYPE_CHECKING:
    from kimmy_swarm.swarm.approval_records import Decision
    from kimmy_swarm.swarm.context import SubtaskContext
    from kimmy_swarm.swarm.llm.types import ToolCall

#: The orchestrator's tools that spawn sub-agents.
SPAWNING = ("assign_task", "assign_tasks", "fan_out")
#: Characters of each call's task shown to the person who approves the plan.
TASK_CHARS = 160
#: What a person is shown of each spawning call's arguments, beside its agent and task.
_SHOWN = ("query", "ids", "all_documents", "where", "per_task", "tasks", "depends_on", "id")


def _summary(number: int, call: ToolCall) -> dict[str, Any]:
    """One spawning call as a person reads it: its place in the turn, tool, agent, task."""
    try:
        args = json.loads(call.function.arguments or "{}")
    except json.JSONDecodeError:
        args = {}
    if not isinstance(args, dict):
        args = {}
    out: dict[str, Any] = {
        "call": number,
        "tool": call.function.name,
        "agent": args.get("agent"),
        "task": str(args.get("task", ""))[:TASK_CHARS],
    }
    if isinstance(args.get("inputs_list"), list):
        out["sub_agents"] = len(args["inputs_list"])
    out.update({k: args[k] for k in _SHOWN if args.get(k) not in (None, [], {}, False)})
    return out


class PlanGate:
    """One orchestrator attempt's plan approvals, a turn at a time."""

    def __init__(self, ctx: SubtaskContext) -> None:
        self.ctx = ctx
        self._calls: list[dict[str, Any]] = []
        self._numbers: dict[str, int] = {}
        self._answer: Decision | None = None
        #: Why a person denied a plan of this attempt (None: nobody did).
        self.denied: str | None = None

    def begin_turn(self, calls: Sequence[ToolCall]) -> None:
        """A new turn: its spawning calls make the plan a person may be asked about."""
        self._answer = None
        self._numbers = {c.id: n for n, c in enumerate(calls, start=1)}
        self._calls = [
            _summary(n, c) for n, c in enumerate(calls, start=1) if c.function.name in SPAWNING
        ]

    async def check(self, call_id: str | None, created: int, new: int) -> None:
        """Let the spawn of `new` sub-agents by the turn's call `call_id` go on, asking a
        person first when it would take the `created` ones past the policy's number.

        Raises:
            ToolError: the person denied the plan, or left this call out of it.
        """
        limit = self.ctx.approval_policy.spawns_over
        if limit is None:
            return
        number = self._numbers.get(call_id or "", 0)
        if self._answer is None:
            if created + new <= limit:
                return
            plan = {
                "created_so_far": created,
                "over": limit,
                "calls": [c for c in self._calls if c["call"] >= number],
            }
            self._answer = await self.ctx.approval(SPAWN_TOOL, plan)
        answer = self._answer
        if answer.verdict == "deny":
            why = f": {answer.reason}" if answer.reason else ""
            self.denied = answer.reason or "no reason given"
            raise ToolError(f"a person denied this turn's plan to spawn sub-agents{why}")
        if answer.arguments is not None:
            kept = answer.arguments.get("calls")
            numbers = {c.get("call") if isinstance(c, dict) else c for c in kept or []}
            if number not in numbers:
                raise ToolError("a person left this call out of the approved plan")


__all__ = ["SPAWNING", "TASK_CHARS", "PlanGate"]
