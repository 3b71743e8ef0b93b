"""The orchestrator's tools, OpenAI function-calling style (several calls per turn allowed).

- `create_subagent(name, system_prompt, tools, output_schema?)`: a sub-agent made at run
  time; built-in roles stay available by name.
- `assign_task(agent, task, inputs?, depends_on?, id?)` → a task id: a subtask in the live
  DAG through the runtime's spawn path (limits, budgets, the store, retries all apply);
  `assign_tasks(agent, task, inputs_list, …)` assigns one task per inputs object at once.
- `search(query, where?, limit?)` → how many documents of the corpus match (BM25) and the
  best ones' ids and titles (with a corpus only).
- `fan_out(agent, task, query | ids | all_documents, where?, per_task | tasks, inputs?)` →
  task ids: one task per part of the matching documents, without listing them (with a
  corpus only). `where` holds conditions on the records' fields (`conditions.Condition`)
  that the runtime checks itself: only the documents that meet them all are searched or
  fanned out.
- `wait(ids | "any" | "all", timeout_s?)` → a token-budgeted digest per finished task.
- `read_result(id, offset, limit)` → a page of a task's full output.
- `finish(answer, table?)` → the run's answer; `table` assembles a table from sub-agents'
  structured outputs by reference (`agents.orchestrator.table`) instead of retyping it.

`orchestrator_tools` makes them a `ToolBox` whose handlers carry them out against the live
run (`agents.orchestrator.actions.Actions`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from kimmy_swarm.agents.orchestrator.agent_specs import AgentSpec
from kimmy_swarm.agents.orchestrator.conditions import Condition
from kimmy_swarm.agents.orchestrator.table import TableSpec
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


#: What `where` is, as the tools describe it.
WHERE = (
    "Conditions on the documents' fields, checked for you: only documents meeting them all "
    "are kept."
)


class Search(ToolArgs):
    """Search the corpus (BM25 over titles and abstracts): how many documents match the query
    and the best ones' ids and titles. Quoted phrases keep only the documents that hold one of
    them; `where` keeps only the documents whose fields meet its conditions. Use it to see
    what a fan-out would cover."""

    query: str = Field(
        default="",
        description="""Key words, e.g. dropout, or quoted phrases: "'GAN' or 'GANs'" (empty: \
every document).""",
    )
    where: list[Condition] = Field(default_factory=list, description=WHERE)
    limit: int = Field(default=10, ge=1, le=100, description="Most documents to show.")


class FanOut(ToolArgs):
    """Assign one task per group of documents without listing them: over every document
    matching `query`, over the `ids` you give, or over `all_documents`, keeping only those
    whose fields meet `where`; each task gets its documents (title, authors, text and
    metadata) in its text and {"doc_ids": [...]} plus `inputs` as its inputs. Returns the
    task ids."""

    agent: str = Field(description="A created sub-agent's name or a built-in role.")
    task: str = Field(min_length=1, description="What to do with each group of documents.")
    query: str | None = Field(default=None, description="Fan out over the documents it matches.")
    ids: list[str] | None = Field(default=None, description="Fan out over these document ids.")
    all_documents: bool = Field(default=False, description="Fan out over the whole corpus.")
    where: list[Condition] = Field(default_factory=list, description=WHERE)
    per_task: int = Field(default=5, ge=1, le=200, description="Documents per task.")
    tasks: int | None = Field(
        default=None, ge=1, le=1_000, description="Split into this many tasks instead."
    )
    inputs: dict[str, Any] = Field(default_factory=dict, description="Inputs every task gets.")
    depends_on: list[str] = Field(default_factory=list, description="Task ids they need.")
    with_documents: bool = Field(
        default=True, description="Put the documents themselves in the inputs too."
    )

    @model_validator(mode="after")
    def _one_source(self) -> FanOut:
        given = [self.query is not None, self.ids is not None, self.all_documents]
        if sum(given) != 1:
            raise ValueError("give exactly one of query, ids or all_documents=true")
        if self.ids is not None and not self.ids:
            raise ValueError("ids is empty: give document ids, a query or all_documents=true")
        return self


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
    """Finish the run with its answer (what the user gets). With `table`, the answer is a
    Markdown table assembled from the rows in sub-agents' outputs (do not retype them; your
    answer text, if any, goes above it). With synthesize=true the answer is written by a
    hierarchical synthesis of every finished task's full output, your answer text guiding it."""

    answer: str = Field(default="", description="The answer, or a note above the table.")
    table: TableSpec | None = Field(
        default=None, description="Assemble the answer table from the tasks' output rows."
    )
    synthesize: bool = False

    @model_validator(mode="after")
    def _something(self) -> Finish:
        if not self.answer.strip() and self.table is None:
            raise ValueError("give the answer text, or a table to assemble")
        if self.table is not None and self.synthesize:
            raise ValueError("a table is assembled, not synthesized: give one of the two")
        return self


#: The tools that work on the run's corpus (offered only when it has one).
CORPUS_TOOLS = frozenset({"search", "fan_out"})
#: Left out of a corpus run's tools when its model's context is small (their schemas are a
#: seventh of the opening; `fan_out` over ids gives any document a task).
SMALL_CONTEXT_LEAVES_OUT = frozenset({"assign_task", "assign_tasks"})
#: The tools by name, with the model of their arguments.
TOOLS: dict[str, type[BaseModel]] = {
    "create_subagent": CreateSubagent,
    "assign_task": AssignTask,
    "assign_tasks": AssignTasks,
    "search": Search,
    "fan_out": FanOut,
    "wait": Wait,
    "read_result": ReadResult,
    "finish": Finish,
}


def orchestrator_tools(
    handlers: Mapping[str, Callable[..., Awaitable[Any]]],
    *,
    corpus: bool = True,
    leave_out: Collection[str] = (),
) -> ToolBox:
    """The orchestrator's tools (`TOOLS`, in that order; without a `corpus`, not the
    `CORPUS_TOOLS`; never those named in `leave_out`), each carried out by its handler in
    `handlers` (called with the validated arguments as keywords). A tool's description is
    its argument model's docstring.

    Raises:
        KeyError: a tool has no handler.
    """
    return ToolBox(
        Tool(name, " ".join((model.__doc__ or name).split()), model, handlers[name])
        for name, model in TOOLS.items()
        if (corpus or name not in CORPUS_TOOLS) and name not in leave_out
    )


__all__ = [
    "CORPUS_TOOLS",
    "MAX_PAGE_CHARS",
    "SMALL_CONTEXT_LEAVES_OUT",
    "TOOLS",
    "WHERE",
    "AssignTask",
    "AssignTasks",
    "CreateSubagent",
    "FanOut",
    "Finish",
    "ReadResult",
    "Search",
    "Wait",
    "orchestrator_tools",
]
