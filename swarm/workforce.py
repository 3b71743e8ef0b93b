"""`Workforce`: who does the work of a run — workers by role, output schemas, the model."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pydantic import BaseModel

from swarm.context import Worker

if TYPE_CHECKING:
    from swarm.llm.protocol import ChatModel


@dataclass(frozen=True, slots=True)
class Workforce:
    """What a run's sub-agents are made of.

    Attributes:
        workers: the worker of each role.
        schemas: output schemas by name (subtasks name them in `output_schema`).
        role_outputs: a role's default output schema name; subtasks without an
            `output_schema`, planned or spawned, get their role's.
        model: the `ChatModel` workers call (None: workers must not need one).
    """

    workers: Mapping[str, Worker]
    schemas: Mapping[str, type[BaseModel]] = field(default_factory=dict)
    role_outputs: Mapping[str, str] = field(default_factory=dict)
    model: ChatModel | None = None


__all__ = ["Workforce"]
