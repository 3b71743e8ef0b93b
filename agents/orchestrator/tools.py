"""The orchestrator's tools, OpenAI function-calling style (several calls per turn allowed).

- `create_subagent(name, system_prompt, tools, output_schema?)`: a sub-agent made at run
  time; built-in roles stay available by name.
- `assign_task(agent, task, inputs?, depends_on?, id?)` → a task id: a subtask in the live
  DAG through the runtime's spawn path (limits, budgets, the store, retries all apply);
  `assign_tasks(agent, task, inputs_list, …)` assigns one task per inputs object at once.
- `wait(ids | "any" | "all", timeout_s?)` → a token-budgeted digest per finished task.
- `read_result(id, offset, limit)` → a page of a task's full output.
- `finish(answer)` → the run's answer.

`orchestrator_tools` makes them a `ToolBox` whose handlers carry them out against the live
run (`agents.orchestrator.actions.Actions`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, Field

from kimmy_swarm.agents.orchestrator.agent_specs import AgentSpec
from kimmy_swarm.agents.toolbox import Tool, ToolArgs, ToolBox
from kimmy_swarm.swarm.schema import SUBTASK_ID_PATTERN

#: The most characters of a task output `read_result` returns per page.
MAX_PAGE_CHARS = 8_000


class CreateSubagent(AgentSpec):
    """Create a sub-agent: its name, its system prompt, the tools it may call and
    (optionally) the JSON schema of its answer."""


class AssignTask(ToolArgs):
    """Assign a task to a sub-agent (created or built-in); returns its task id. Tasks run
    in parallel unless `depends_on` names tasks whose results they need."""

    agent: str = Field(description="A created sub-agent's name or a built-in role.")
    task: str = Field(min_length=1, description="What to do, in full.")
    inputs: dict[str, Any] = Field(default_factory=dict, description="Data for the task.")
    depends_on: list[str] = Field(default_factory=list, description="Task ids it needs.")
    id: str | None = Field(
        default=None, pattern=SUBTASK_ID_PATTERN, description="Its id (default: t1, t2, …)."
    )


class AssignTasks(ToolArgs):
    """Assign the same task to one sub-agent once per inputs object (a fan-out); returns
    the task ids in order."""

    agent: str = Field(description="A created sub-agent's name or a built-in role.")
    task: str = Field(min_length=1, description="What to do with each inputs object.")
    inputs_list: list[dict[str, Any]] = Field(min_length=1, description="One per task.")
    depends_on: list[str] = Field(default_factory=list, description="Task ids they need.")


class Wait(ToolArgs):
    """Wait for tasks: given ids, "all" (every unfinished task) or "any" (the next to
    finish); returns a short digest of each finished task and the ids still pending."""

    ids: list[str] | Literal["all", "any"] = "all"
    timeout_s: float | None = Field(default=None, ge=0, description="Most seconds to wait.")


class ReadResult(ToolArgs):
    """Read a page of a finished task's full output (JSON text)."""

    id: str
    offset: int = Field(default=0, ge=0)
    limit: int = Field(default=4_000, ge=1, le=MAX_PAGE_CHARS)


class Finish(ToolArgs):
    """Finish the run with its answer (what the user gets). With synthesize=true the answer
    is written by a hierarchical synthesis of every finished task's full output (for more
    or longer outputs than you can read), your answer text guiding it."""

    answer: str = Field(min_length=1)
    synthesize: bool = False


#: The tools by name, with the model of their arguments.
TOOLS: dict[str, type[BaseModel]] = {
    "create_subagent": CreateSubagent,
    "assign_task": AssignTask,
    "assign_tasks": AssignTasks,
    "wait": Wait,
    "read_result": ReadResult,
    "finish": Finish,
}


def orchestrator_tools(handlers: Mapping[str, Callable[..., Awaitable[Any]]]) -> ToolBox:
    """The orchestrator's tools (`TOOLS`, in that order), each carried out by its handler
    in `handlers` (called with the validated arguments as keywords). A tool's description
    is its argument model's docstring.

    Raises:
        KeyError: a tool has no handler.
    """
    return ToolBox(
        Tool(name, " ".join((model.__doc__ or name).split()), model, handlers[name])
        for name, model in TOOLS.items()
    )


__all__ = [
    "MAX_PAGE_CHARS",
    "TOOLS",
    "AssignTask",
    "AssignTasks",
    "CreateSubagent",
    "Finish",
    "ReadResult",
    "Wait",
    "orchestrator_tools",
]
