"""`ApprovalPolicy`: which calls of a run wait for a person, and what happens when nobody answers.

    RunConfig(approvals=ApprovalPolicy(tools=("run_python", "git.*"), timeout_s=600))

A call that needs approval parks its sub-agent (its slot goes to the rest of the swarm)
until a person approves it (as asked, or with edited arguments) or denies it with a reason
(`swarm.approvals`). The policy is part of `RunConfig`, so it is stored with the run and a
resumed run keeps it. A tool can also ask for approval itself (`Tool.requires_approval`),
and a role for all its calls (`Role.requires_approval`): the policy adds to those.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, get_args

from kimmy_swarm.swarm.errors import ConfigError

#: What a call waiting longer than the policy's `timeout_s` gets: denied (the model hears
#: so), approved as asked, or its sub-agent fails.
OnTimeout = Literal["deny", "approve", "fail"]
ON_TIMEOUT: tuple[str, ...] = get_args(OnTimeout)
#: The tool name under which an orchestrator asks to spawn sub-agents past `spawns_over`.
SPAWN_TOOL = "spawn"


def _names(field_name: str, value: object) -> tuple[str, ...]:
    """Names from a list or a comma-separated string, stripped, each once."""
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or not all(isinstance(v, str) for v in items):
        raise ConfigError(f"approvals.{field_name} must be a list of names, got {value!r}")
    names = tuple(v.strip() for v in items)
    if any(not v for v in names) and not (isinstance(value, str) and not value.strip()):
        raise ConfigError(
            f"approvals.{field_name} must be names separated by commas, got {value!r}"
        )
    return tuple(dict.fromkeys(v for v in names if v))


@dataclass(frozen=True, slots=True)
class ApprovalPolicy:
    """Which calls wait for a person.

    Attributes:
        tools: tool names whose every call waits (`server.tool` for an MCP server's tool;
            shell-style patterns match too: `git.*` is every tool of the server `git`).
        roles: roles whose every tool call waits.
        timeout_s: seconds a call may wait (counted from when it was asked, across
            resumes); None: it waits until a person answers.
        on_timeout: what a call gets after `timeout_s`: `deny` (the default; the model is
            told nobody answered), `approve` (it runs as asked), or `fail` (its sub-agent
            fails).
        spawns_over: an orchestrator asks before a spawn that would take the sub-agents it
            created past this many (None: it never asks).
    """

    tools: tuple[str, ...] = ()
    roles: tuple[str, ...] = ()
    timeout_s: float | None = None
    on_timeout: OnTimeout = "deny"
    spawns_over: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "tools", _names("tools", self.tools))
        object.__setattr__(self, "roles", _names("roles", self.roles))
        t = self.timeout_s
        if t is not None and (
            isinstance(t, bool) or not isinstance(t, int | float) or not 0 < t < math.inf
        ):
            raise ConfigError(
                f"approvals.timeout_s must be a positive number of seconds or None, got {t!r}"
            )
        if self.on_timeout not in ON_TIMEOUT:
            raise ConfigError(
                f"approvals.on_timeout must be one of {', '.join(ON_TIMEOUT)}, "
                f"got {self.on_timeout!r}"
            )
        n = self.spawns_over
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 0):
            raise ConfigError(f"approvals.spawns_over must be an integer ≥ 0 or None, got {n!r}")

    @property
    def active(self) -> bool:
        """Whether the policy itself makes any call wait."""
        return bool(self.tools or self.roles) or self.spawns_over is not None

    def covers(self, tool: str, role: str) -> bool:
        """Whether a call of `tool` by a sub-agent of `role` waits under this policy."""
        if role in self.roles:
            return True
        return any(tool == p or fnmatch.fnmatchcase(tool, p) for p in self.tools)

    @classmethod
    def coerce(cls, value: object) -> ApprovalPolicy:
        """`value` as a policy: one already, a mapping of its fields (as stored), or None
        (nothing waits).

        Raises:
            ConfigError: an unknown field, or a bad value.
        """
        if isinstance(value, ApprovalPolicy):
            return value
        if value is None:
            return cls()
        if not isinstance(value, Mapping):
            raise ConfigError(f"approvals must be an ApprovalPolicy or a mapping, got {value!r}")
        allowed = [f.name for f in dataclasses.fields(cls)]
        unknown = sorted(set(value) - set(allowed))
        if unknown:
            raise ConfigError(
                f"unknown approval setting(s) {unknown}; allowed: {', '.join(allowed)}"
            )
        return cls(**dict(value))


__all__ = ["ON_TIMEOUT", "SPAWN_TOOL", "ApprovalPolicy", "OnTimeout"]
