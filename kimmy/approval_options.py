"""The approval flags of the commands that start runs (`swarm`, `run`, `review`, `analyze`),
read into one `ApprovalPolicy` (`swarm.approvals`; answered with `kimmy approve`/`deny`)."""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

import typer

from kimmy_swarm.cli.options import at_least, positive_seconds

if TYPE_CHECKING:
    from kimmy_swarm.swarm import ApprovalPolicy


class OnTimeout(StrEnum):
    """What a call that waited `--approval-timeout` gets."""

    deny = "deny"
    approve = "approve"
    fail = "fail"


ApproveTools = Annotated[
    str | None,
    typer.Option(
        "--approve-tools",
        help="Tools whose every call waits for a person (kimmy approvals / approve / deny): "
        "NAME,… (server.tool for an MCP server's tool; git.* for all of one server's).",
    ),
]
ApproveSpawnsOver = Annotated[
    int | None,
    typer.Option(
        "--approve-spawns-over",
        callback=at_least(0),
        help="The orchestrator asks a person before spawning past N sub-agents.",
    ),
]
ApprovalTimeout = Annotated[
    float | None,
    typer.Option(
        "--approval-timeout",
        callback=positive_seconds,
        help="Seconds a call may wait for an answer [default: no limit].",
    ),
]
OnApprovalTimeout = Annotated[
    OnTimeout,
    typer.Option("--on-approval-timeout", help="What a call gets after --approval-timeout."),
]


def approval_policy(
    tools: str | None,
    spawns_over: int | None,
    timeout_s: float | None,
    on_timeout: OnTimeout | str = OnTimeout.deny,
) -> ApprovalPolicy | None:
    """The flags as one policy (None: no flag asks for approvals)."""
    if tools is None and spawns_over is None and timeout_s is None:
        return None
    from kimmy_swarm.swarm import ApprovalPolicy

    how = on_timeout.value if isinstance(on_timeout, OnTimeout) else on_timeout
    return ApprovalPolicy(
        tools=tools or (), spawns_over=spawns_over, timeout_s=timeout_s, on_timeout=how
    )


__all__ = [
    "ApprovalTimeout",
    "ApproveSpawnsOver",
    "ApproveTools",
    "OnApprovalTimeout",
    "OnTimeout",
    "approval_policy",
]
