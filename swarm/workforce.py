"""`Workforce`: who does the work of a run — workers by role, output schemas, the model."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pydantic import BaseModel

from kimmy_swarm.swarm.schema import Subtask
from kimmy_swarm.swarm.worker import Worker

if TYPE_CHECKING:
    from kimmy_swarm.swarm.llm.protocol import ChatModel

#: Builds the worker of a role made at run time from the subtask that names it (its
#: `role_spec`); None when it cannot (the role is then unknown).
RoleFactory = Callable[[Subtask], Worker | None]


@dataclass(frozen=True, slots=True)
class Workforce:
    """What a run's sub-agents are made of.

    Attributes:
        workers: the worker of each registered role.
        schemas: output schemas by name (subtasks name them in `output_schema`).
        role_outputs: a role's default output schema name; subtasks without an
            `output_schema`, planned or spawned, get their role's.
        model: the `ChatModel` workers call (None: workers must not need one).
        role_factory: builds workers for roles made at run time (subtasks with a
            `role_spec` whose role is not registered).
    """

    workers: Mapping[str, Worker]
    schemas: Mapping[str, type[BaseModel]] = field(default_factory=dict)
    role_outputs: Mapping[str, str] = field(default_factory=dict)
    model: ChatModel | None = None
    role_factory: RoleFactory | None = None

    def worker_for(self, st: Subtask) -> Worker | None:
        """The worker that runs `st`: its role's, else one the role factory builds."""
        worker = self.workers.get(st.role)
        if worker is None and st.role_spec is not None and self.role_factory is not None:
            worker = self.role_factory(st)
        return worker


__all__ = ["RoleFactory", "Workforce"]
