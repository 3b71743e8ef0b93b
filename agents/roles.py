"""Roles: what a kind of sub-agent is told, may call, must return, and does offline.

A `Role` is data: a system prompt, the names of the tools it may call, the pydantic schema
its final answer must match, an optional offline `procedure` (a deterministic algorithm
over the same tools) and an optional `check` of the answer's meaning (e.g. a quoted passage
really occurs in the document). `builtin_roles()` gives the seven built-in roles; pipelines
derive their variants (`role.derive(procedure=..., output=...)`) and users register theirs.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, Field

from kimmy_swarm.swarm.errors import ConfigError
from kimmy_swarm.swarm.schema import ROLE_PATTERN

if TYPE_CHECKING:
    from kimmy_swarm.agents.brief import SubtaskBrief
    from kimmy_swarm.agents.toolbox import ToolBox
    from kimmy_swarm.swarm.context import SubtaskContext


class AttemptView(Protocol):
    """What a role's procedure and check are given: one attempt of a sub-agent
    (`agents.loop.Attempt`), seen through what they use of it."""

    @property
    def ctx(self) -> SubtaskContext: ...

    @property
    def tools(self) -> ToolBox: ...

    @property
    def policy(self) -> str: ...

    @property
    def inputs(self) -> dict[str, Any]: ...

    @property
    def upstream(self) -> dict[str, Any]: ...

    def call(self, tool: str, /, **arguments: Any) -> Any: ...


#: An offline procedure: runs in a worker thread, calls tools via `run.call`, returns the
#: answer (an instance of the role's output schema, or a mapping that validates as one).
Procedure = Callable[[AttemptView], "BaseModel | Mapping[str, Any]"]
#: A check of an answer's meaning; raises `ValueError` saying what is wrong.
Check = Callable[[Any, AttemptView], None]
#: A role's brief (`agents.brief`): what its model is given for one subtask (None: nothing
#: for this one, its model calls the tools); called once per model attempt, in a worker
#: thread (its tool calls are the sub-agent's steps).
Brief = Callable[[AttemptView], "SubtaskBrief | None"]


class Answer(BaseModel):
    """The default answer of a built-in role: text plus what it rests on."""

    answer: str = Field(min_length=1)
    #: Document ids, dataset names or URLs the answer rests on.
    sources: list[str] = Field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Role:
    """One kind of sub-agent.

    Attributes:
        name: the role name plans use (`researcher`, ...).
        system_prompt: the model policy's system message.
        output: the pydantic schema of the final answer (both policies).
        tools: names of the tools the role may call (looked up in the pipeline's toolbox).
        procedure: the offline policy (None: the role needs a model).
        check: an extra check of the answer's meaning (both policies).
        max_steps: the most model turns of the model policy.
        max_tokens: `max_tokens` of each of its model calls (the answer's longest length).
        brief: what its model is given for one subtask, to answer from in its first turn
            under a schema made for that subtask (`agents.brief`; None: the model calls the
            tools itself). A role with a brief offers its model no tools.
        first_tool: the tool its first turn must call, and only it (`tool_choice` names it
            where the model's server calls tools natively; None: any or none): for a role
            that must look before it answers, whose small model would otherwise answer from
            memory at once, or call other tools with arguments it cannot know yet.
    """

    name: str
    system_prompt: str
    output: type[BaseModel] = Answer
    tools: tuple[str, ...] = ()
    procedure: Procedure | None = None
    check: Check | None = None
    max_steps: int = 8
    max_tokens: int = 1_024
    brief: Brief | None = None
    requires_approval: bool = False
    first_tool: str | None = None

    def __post_init__(self) -> None:
        if not re.fullmatch(ROLE_PATTERN, self.name):
            raise ConfigError(
                f"bad role name {self.name!r}: start with a letter; letters, digits, _ . - only"
            )
        if not (isinstance(self.output, type) and issubclass(self.output, BaseModel)):
            raise ConfigError(f"role {self.name!r}: output must be a pydantic model class")
        if self.max_steps < 1:
            raise ConfigError(f"role {self.name!r}: max_steps must be >= 1, got {self.max_steps}")
        if isinstance(self.max_tokens, bool) or not isinstance(self.max_tokens, int):
            raise ConfigError(
                f"role {self.name!r}: max_tokens must be an integer >= 1, got {self.max_tokens!r}"
            )
        if self.max_tokens < 1:
            raise ConfigError(f"role {self.name!r}: max_tokens must be >= 1, got {self.max_tokens}")
        object.__setattr__(self, "tools", tuple(self.tools))

    def derive(self, **changes: Any) -> Role:
        """A copy with some attributes changed (validated like a new role)."""
        return dataclasses.replace(self, **changes)


class RoleRegistry(Mapping[str, Role]):
    """Roles by name."""

    def __init__(self, roles: Mapping[str, Role] | None = None) -> None:
        self._roles: dict[str, Role] = dict(roles or {})

    def register(self, role: Role, *, replace: bool = False) -> Role:
        """Add `role` (raises `ConfigError` if the name is taken and `replace` is False)."""
        if role.name in self._roles and not replace:
            raise ConfigError(
                f"role {role.name!r} is already registered (pass replace=True to override it)"
            )
        self._roles[role.name] = role
        return role

    def role(
        self,
        name: str,
        *,
        system_prompt: str,
        output: type[BaseModel] = Answer,
        tools: tuple[str, ...] = (),
        max_steps: int = 8,
    ) -> Callable[[Procedure], Procedure]:
        """Decorator: register a role whose offline procedure is the decorated function."""

        def register(fn: Procedure) -> Procedure:
            self.register(Role(name, system_prompt, output, tools, fn, None, max_steps))
            return fn

        return register

    def get_role(self, name: str) -> Role:
        """The role called `name` (raises `ConfigError` listing the known ones)."""
        found = self._roles.get(name)
        if found is None:
            known = ", ".join(sorted(self._roles)) or "(none)"
            raise ConfigError(f"unknown role {name!r}; known roles: {known}")
        return found

    def copy(self) -> RoleRegistry:
        return RoleRegistry(self._roles)

    def __getitem__(self, name: str) -> Role:
        return self._roles[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._roles)

    def __len__(self) -> int:
        return len(self._roles)


#: The names of the built-in roles (plans run by `kimmy run` may use them).
BUILTIN_ROLE_NAMES: tuple[str, ...] = (
    "planner",
    "researcher",
    "fact_checker",
    "writer",
    "data_analyst",
    "frontend_engineer",
    "physics_researcher",
)

_BUILTIN_PROMPTS: dict[str, str] = {
    "planner": (
        "You are the planner of a swarm of sub-agents. Decompose the task into "
        "independent subtasks that can run in parallel, group them into stages, and say "
        "which results each stage needs. Prefer width: many small parallel subtasks."
    ),
    "researcher": (
        "You are a researcher. Read the sources with the tools, and report key findings. "
        "Every finding quotes, word for word, the passage of the source that supports it."
    ),
    "fact_checker": (
        "You are a fact-checker. For every claim, find the passage of the cited source "
        "(or recompute the number from the data) and say whether it supports the claim. "
        "A claim whose numbers or names do not appear in the support is unsupported."
    ),
    "writer": (
        "You are a writer and synthesizer. Turn the upstream findings into clear, "
        "well-organized prose. Every claim cites the id of the source it comes from; "
        "never state anything the findings do not support."
    ),
    "data_analyst": (
        "You are a data analyst. Profile the data, check missing values and distributions, "
        "fit an appropriate model or test, and report every number with the columns it is "
        "about, so that anyone can recompute it from the raw data."
    ),
    "frontend_engineer": (
        "You are a frontend engineer. Build a clear, accessible, self-contained HTML report "
        "from the verified results: a summary first, one section per topic, figures inline."
    ),
    "physics_researcher": (
        "You are a physics researcher. Read the sources with the tools; report the "
        "quantities, units and conditions they state, quoting the passage for each, and "
        "state your assumptions."
    ),
}


def builtin_roles() -> RoleRegistry:
    """A new registry holding the seven built-in roles (generic `Answer` output).

    Their offline procedures come from the pipelines (`agents.review`, `agents.analysis`),
    which derive each role with its pipeline's tools, schema and procedure.
    """
    return RoleRegistry({name: Role(name, _BUILTIN_PROMPTS[name]) for name in BUILTIN_ROLE_NAMES})


__all__ = [
    "BUILTIN_ROLE_NAMES",
    "Answer",
    "AttemptView",
    "Brief",
    "Check",
    "Procedure",
    "Role",
    "RoleRegistry",
    "builtin_roles",
]
