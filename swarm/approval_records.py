"""What an approval is made of: the call that waits (`Approval`) and a person's `Decision`.

The store keeps both (`RunStore.approvals`, `RunStore.decide`); the run that waits reads
decisions from it (`swarm.approvals`), whoever wrote them: `kimmy approve`, the dashboard,
Python, or the run itself when the policy's timeout came.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from kimmy_swarm.swarm.errors import SwarmError, UserError

#: A person's answer: the call runs (as asked, or with edited arguments), or it does not.
Verdict = Literal["approve", "deny"]


class ApprovalError(UserError):
    """An approval cannot be given: no such call, already decided, bad edited arguments."""


class ApprovalTimeoutError(SwarmError):
    """Nobody answered a call in the policy's time, and the policy says its sub-agent fails."""


@dataclass(frozen=True, slots=True)
class Decision:
    """A person's answer to one waiting call.

    Attributes:
        verdict: `approve` or `deny`.
        arguments: the arguments the call runs with instead of the asked ones (an edit;
            None: as asked). Only with `approve`.
        reason: why (shown to the model on a denial).
        by: who decided: `cli`, `dashboard`, `python`, `timeout`, or a name.
    """

    verdict: Verdict
    arguments: dict[str, Any] | None = None
    reason: str | None = None
    by: str = "python"

    def __post_init__(self) -> None:
        if self.verdict not in ("approve", "deny"):
            raise ApprovalError(f"a verdict is 'approve' or 'deny', got {self.verdict!r}")
        if self.arguments is not None:
            if self.verdict == "deny":
                raise ApprovalError("a denied call runs with no arguments: give a reason instead")
            if not isinstance(self.arguments, dict):
                raise ApprovalError(
                    f"edited arguments must be a JSON object, got {self.arguments!r}"
                )


def parse_arguments(text: str) -> dict[str, Any]:
    """Edited arguments from the JSON text a person typed.

    Raises:
        ApprovalError: not JSON, or not an object.
    """
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ApprovalError(f"--args is not JSON ({exc.msg} at char {exc.pos}): {text!r}") from None
    if not isinstance(value, dict):
        raise ApprovalError(f"--args must be a JSON object of the tool's arguments, got {text!r}")
    return value


@dataclass(frozen=True, slots=True)
class Approval:
    """One call that asked for approval, and its decision once there is one.

    Attributes:
        run_id: the run.
        call_id: its id in the run (`a1`, `a2`, …): what `kimmy approve RUN CALL` names.
        subtask_id: the sub-agent that made the call.
        tool: the tool called (`spawn` for an orchestrator's plan; `SPAWN_TOOL`).
        arguments: the arguments asked for.
        requested_at: when it asked (seconds since the epoch).
        decision: the answer (None: it waits).
        decided_at: when it was answered.
    """

    run_id: str
    call_id: str
    subtask_id: str
    tool: str
    arguments: dict[str, Any]
    requested_at: float
    decision: Decision | None = None
    decided_at: float | None = None

    @property
    def pending(self) -> bool:
        return self.decision is None

    @property
    def status(self) -> str:
        """`pending`, `approved` or `denied`."""
        if self.decision is None:
            return "pending"
        return "approved" if self.decision.verdict == "approve" else "denied"

    def as_json(self) -> dict[str, Any]:
        """Plain JSON (the dashboard's and `kimmy approvals --json`'s shape)."""
        d = self.decision
        return {
            "run_id": self.run_id,
            "call_id": self.call_id,
            "subtask_id": self.subtask_id,
            "tool": self.tool,
            "arguments": self.arguments,
            "requested_at": self.requested_at,
            "status": self.status,
            "edited_arguments": d.arguments if d is not None else None,
            "reason": d.reason if d is not None else None,
            "by": d.by if d is not None else None,
            "decided_at": self.decided_at,
        }


__all__ = [
    "Approval",
    "ApprovalError",
    "ApprovalTimeoutError",
    "Decision",
    "Verdict",
    "parse_arguments",
]
