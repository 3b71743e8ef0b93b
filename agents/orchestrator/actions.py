"""Carrying out the orchestrator's tool calls against the live run.

Every call's result is text for the model; a bad call (unknown agent, refused spawn, bad
arguments) comes back as `error: …` saying why, so the model can correct it. Assignments
go through `ctx.spawn` (the runtime's spawn path: limits, budgets, the store, retries);
`wait` through `ctx.wait`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import ValidationError

from kimmy_swarm.agents.orchestrator.agent_specs import AgentSpec
from kimmy_swarm.agents.orchestrator.conditions import Condition, goal_conditions
from kimmy_swarm.agents.orchestrator.corpus_view import (
    CorpusView,
    NothingMeetsError,
    UnknownFieldError,
    chunks,
)
from kimmy_swarm.agents.orchestrator.digest import digest, output_text, page
from kimmy_swarm.agents.orchestrator.plan_approval import PlanGate
from kimmy_swarm.agents.orchestrator.prompts import EXAMPLE_WHERE
from kimmy_swarm.agents.orchestrator.state import OrchestratorState, TaskRecord
from kimmy_swarm.agents.orchestrator.table import TableSpec, assemble
from kimmy_swarm.agents.orchestrator.tools import orchestrator_tools
from kimmy_swarm.agents.toolbox import Tool, ToolBox, ToolError
from kimmy_swarm.swarm.errors import SpawnError, WaitError, validation_problems

if TYPE_CHECKING:
    from kimmy_swarm.swarm.context import SubtaskContext
    from kimmy_swarm.swarm.llm.types import ToolCall
    from kimmy_swarm.swarm.schema import SubtaskResult


#: What a task of a fan-out with its documents is told about them.
DOCUMENTS_GIVEN = (
    "Your documents are below: read them here (call read_document only for a text that was "
    "cut). Decide for each one in turn."
)
#: What a task of a fan-out with its documents is told of the swarm's goal: a small
#: orchestrator model drops parts of a condition ("oral", "at google.com") from the task it
#: writes, and the sub-agent then judges against less than the user asked.
GOAL_GIVEN = (
    "The swarm's goal, in the user's words (a document meets the condition when it meets "
    "every part of it that the document shows): {goal}"
)

#: Said with a search the orchestrator made before in an earlier turn (the 0.5B made one
#: search nine turns in a row; its answer cannot change).
REPEATED_SEARCH = (
    "the same search as in turn {turn}, with the same answer: use it (fan_out over these "
    "documents), or search with other words"
)


@dataclass
class Outcome:
    """What one tool call did."""

    text: str
    spawned: list[str] = field(default_factory=list)
    #: The call failed (its text says why).
    failed: bool = False
    #: The call repeated one of an earlier turn whose answer cannot have changed (a
    #: search): its answer is given again, but the turn made no progress by it.
    repeated: bool = False


@dataclass
class Actions:
    """The orchestrator's tools bound to one attempt of its subtask.

    Args:
        ctx: the orchestrator's subtask context.
        state: its state (changed by the calls).
        roles: the built-in roles available by name.
        tools: the tools sub-agents may be given.
        digest_chars: the budget of one `wait` answer, in characters.
    """

    ctx: SubtaskContext
    state: OrchestratorState
    roles: Collection[str]
    tools: Collection[str]
    digest_chars: int = 12_000
    #: The model's context length and the answer's `max_tokens` (for `finish` synthesis).
    context_tokens: int = 4_096
    max_tokens: int = 2_048
    #: The run's corpus and its index, for `search` and `fan_out` (None: no corpus; those
    #: tools are not offered).
    corpus: CorpusView | None = None
    #: Results seen so far, by task id (kept out of the saved state: outputs can be large).
    seen: dict[str, SubtaskResult] = field(default_factory=dict)
    #: Tasks the current turn assigned (the agent sets it to 0 at each turn).
    turn_spawned: int = 0
    #: Tools not offered (`SMALL_CONTEXT_LEAVES_OUT` for a model with a small context).
    leave_out: Collection[str] = ()
    #: Check each fan-out against the conditions the goal reader finds in the goal (a
    #: model's plans; the offline planner's are the reader's own).
    check_goal: bool = False

    #: The orchestrator's tools, carried out by this attempt's handlers below.
    toolbox: ToolBox = field(init=False, repr=False)
    #: A person's approval of a turn's plan past `ApprovalPolicy.spawns_over`.
    plan_gate: PlanGate = field(init=False, repr=False)
    #: The id of the call being carried out.
    _call_id: str | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.plan_gate = PlanGate(self.ctx)
        self.toolbox = orchestrator_tools(
            {
                "create_subagent": self._create_subagent,
                "assign_task": self._assign_task,
                "assign_tasks": self._assign_tasks,
                "search": self._search,
                "fan_out": self._fan_out,
                "wait": self._wait,
                "read_result": self._read_result,
                "finish": self._finish,
            },
            corpus=self.corpus is not None,
            leave_out=self.leave_out,
        )

    async def run(self, call: ToolCall) -> Outcome:
        """Carry out one tool call; errors become the text `error: …`."""
        name = call.function.name
        tool = self.toolbox.get(name)
        self._call_id = call.id
        try:
            if tool is None:
                raise ToolError(f"unknown tool {name!r}; tools: {', '.join(self.toolbox)}")
            result: Outcome = await tool.fn(**_arguments(tool, call.function.arguments))
            return result
        except ToolError as exc:
            return Outcome(f"error: {exc}", failed=True)

    # --- the tools ----------------------------------------------------------------------

    async def _create_subagent(
        self, name: str, system_prompt: str, tools: tuple[str, ...],
        output_schema: dict[str, Any] | None, output_columns: tuple[str, ...] | None,
    ) -> Outcome:  # fmt: skip
        if name in self.roles:
            raise ToolError(
                f"{name!r} is a built-in role (available by name: assign_task to it); "
                "give your sub-agent another name"
            )
        known = self.state.agents.get(name)
        spec = AgentSpec(
            name=name,
            system_prompt=system_prompt,
            tools=tools,
            output_schema=output_schema,
            output_columns=output_columns,
        )
        if known is not None and known != spec:
            raise ToolError(f"a different sub-agent {name!r} exists; pick a new name")
        missing = [t for t in spec.tools if t not in self.tools]
        if missing:
            raise ToolError(
                f"unknown tools {missing}; tools you may give: {', '.join(sorted(self.tools))}"
            )
        self.state.agents[spec.name] = spec
        return Outcome(json.dumps({"created": spec.name, "tools": list(spec.tools)}))

    def _subtask(self, agent: str, task: str, inputs: Mapping[str, Any], deps: list[str],
                 key: str) -> dict[str, Any]:  # fmt: skip
        spec = self.state.agents.get(agent)
        if spec is None and agent not in self.roles:
            created = ", ".join(self.state.agents) or "(none yet)"
            raise ToolError(
                f"unknown agent {agent!r}; created: {created}; built-in: "
                f"{', '.join(sorted(self.roles))}"
            )
        unknown = [d for d in deps if d not in self.state.tasks]
        if unknown:
            raise ToolError(f"depends_on names unknown task ids {unknown}")
        out: dict[str, Any] = {
            "id": key, "role": agent, "instructions": task, "inputs": dict(inputs),
            "depends_on": deps,
        }  # fmt: skip
        if spec is not None:
            out["role_spec"] = spec.model_dump(mode="json")
        return out

    async def _spawn(self, subtasks: list[dict[str, Any]]) -> list[str]:
        """Spawn `subtasks` (once a person approved the turn's plan, when it needs that)."""
        await self.plan_gate.check(self._call_id, len(self.state.tasks), len(subtasks))
        try:
            self.ctx.spawn(subtasks)
        except SpawnError as exc:
            raise ToolError(f"refused: {exc}") from None
        self.turn_spawned += len(subtasks)
        for st in subtasks:
            self.state.tasks[st["id"]] = TaskRecord(
                id=st["id"], agent=st["role"], task=st["instructions"],
                depends_on=st["depends_on"],
            )  # fmt: skip
        return [st["id"] for st in subtasks]

    async def _assign_task(
        self, agent: str, task: str, inputs: dict[str, Any], depends_on: list[str],
        id: str | None,
    ) -> Outcome:  # fmt: skip
        if id is not None and id in self.state.tasks:
            raise ToolError(f"task id {id!r} is taken")
        key = id or self.state.new_task_id(set())
        st = self._subtask(agent, task, inputs, depends_on, key)
        ids = await self._spawn([st])
        return Outcome(json.dumps({"task_id": ids[0]}), ids)

    async def _assign_tasks(
        self, agent: str, task: str, inputs_list: list[dict[str, Any]], depends_on: list[str]
    ) -> Outcome:
        subtasks = [
            self._subtask(agent, task, inputs, depends_on, self.state.new_task_id(set()))
            for inputs in inputs_list
        ]
        ids = await self._spawn(subtasks)
        return Outcome(json.dumps({"task_ids": ids}), ids)

    def _goal(self) -> str:
        """The swarm's goal, as the user gave it."""
        return str(self.ctx.inputs.get("goal") or self.ctx.instructions or "")

    def _view(self) -> CorpusView:
        if self.corpus is None:
            raise ToolError("this run has no corpus: give one (--corpus) to search it")
        return self.corpus

    async def _search(self, query: str, where: list[Condition], limit: int) -> Outcome:
        where, dropped = _asked_for(self._goal(), where)
        try:
            found = self._view().search(query, limit, where)
        except UnknownFieldError as exc:
            raise ToolError(str(exc)) from None
        if dropped:
            found["dropped"] = dropped
        asked = json.dumps([query, [c.words() for c in where], limit])
        first = self.state.searches.setdefault(asked, self.state.turns)
        if first != self.state.turns:
            found["repeated"] = REPEATED_SEARCH.format(turn=first)
        return Outcome(json.dumps(found, ensure_ascii=False), repeated="repeated" in found)

    async def _fan_out(
        self, agent: str, task: str, query: str | None, ids: list[str] | None,
        all_documents: bool, where: list[Condition], per_task: int, tasks: int | None,
        inputs: dict[str, Any], depends_on: list[str], with_documents: bool,
    ) -> Outcome:  # fmt: skip
        view = self._view()
        where, dropped = _asked_for(self._goal(), where)
        spec = self.state.agents.get(agent)
        columns = spec.output_columns if spec is not None else None
        added: list[str] = []
        if self.check_goal:
            where, task, added = self._with_the_goals_conditions(query, where, task, spec)
        if query is not None:
            docs = view.matching(query)
            if not docs:
                raise ToolError(f"no document matches the query {query!r}: try other words")
        elif ids is not None:
            unknown = view.unknown(ids)
            if unknown:
                raise ToolError(f"unknown document ids {unknown[:10]}: search finds the ids")
            docs = list(dict.fromkeys(ids))
        else:
            docs = view.ids
        read_as: list[str] = []
        if where:
            try:
                docs, read_as = view.select(docs, where)
            except UnknownFieldError as exc:
                raise ToolError(str(exc)) from None
            except NothingMeetsError as exc:
                raise ToolError(_without_query(view, where, query, docs) or str(exc)) from None
        parts = chunks(docs, per_task=per_task, tasks=tasks)
        subtasks = []
        for part in parts:
            given: dict[str, Any] = {**inputs, "doc_ids": part}
            job = task
            if with_documents:  # the documents in the task's text; in inputs, their titles
                # and the cells of the agent's columns the records hold (its rows pin them)
                goal = GOAL_GIVEN.format(goal=self._goal())
                job = f"{task}\n\n{goal}\n\n{DOCUMENTS_GIVEN}\n\n{view.as_text(part)}"
                given["documents"] = (
                    view.cells(part, columns) if columns is not None else view.titles(part)
                )
            key = self.state.new_task_id(set())
            subtasks.append(self._subtask(agent, job, given, depends_on, key))
        spawned = await self._spawn(subtasks)
        told: dict[str, Any] = {"task_ids": spawned, "documents": len(docs),
                                "tasks": len(spawned)}  # fmt: skip
        if read_as:
            told["read_as"] = read_as
        if dropped:
            told["dropped"] = dropped
        if added:
            told["added"] = added
        return Outcome(json.dumps(told), spawned)

    def _with_the_goals_conditions(
        self, query: str | None, where: list[Condition], task: str, spec: AgentSpec | None
    ) -> tuple[list[Condition], str, list[str]]:
        """The fan-out's `where` and task with the conditions the goal reader finds in the
        goal: one that a `where` states (an e-mail domain, a decision, a threshold) and that
        neither this `where` nor a search made before it has is added to `where` — the
        runtime checks it exactly, where a sub-agent told it in words misjudges (the 1.5B's
        extractors passed papers cited 6 and 24 times as "more than 100"); one no single
        condition states is said in the task unless the fan-out says it somewhere. A note
        for each. (The 1.5B dropped "an author at google.com" and answered with every RL
        paper; refused instead, it gave one sub-agent all 40 documents and an invented row.)
        Returns the where, the task and the notes."""
        in_where = json.dumps([[c.words() for c in where], list(self.state.searches)]).lower()
        said = json.dumps([
            query, task, spec.system_prompt if spec is not None else "", in_where,
        ]).lower()  # fmt: skip
        added = []
        for missing in goal_conditions(self._goal()):
            if missing.where and not missing.said_in(in_where):
                where = [*where, *missing.where]
            elif not missing.where and not missing.said_in(said):
                task = f"{task}\n\nOnly documents with {missing.words} meet the condition."
            else:
                continue
            added.append(f"{missing.words} (the goal asks for it; this fan-out did not state it)")
        return where, task, added

    async def _wait(
        self, ids: list[str] | Literal["all", "any"], timeout_s: float | None
    ) -> Outcome:
        tasks = self.state.tasks
        if not tasks:
            raise ToolError("no task has been assigned yet: assign_task first")
        if ids == "all":
            keys, mode = list(tasks), "all"
        elif ids == "any":
            keys, mode = self.state.unreported(), "any"
            if not keys:
                raise ToolError("every task's result was already shown; nothing to wait for")
        else:
            unknown = [i for i in ids if i not in tasks]
            if unknown:
                raise ToolError(f"unknown task ids {unknown}")
            keys, mode = list(ids), "all"
        try:
            got = await self.ctx.wait(keys, mode=mode, timeout_s=timeout_s)  # type: ignore[arg-type]
        except WaitError as exc:
            raise ToolError(str(exc)) from None
        self.seen.update(got)
        shown = {k: r for k, r in got.items() if ids != "all" or not tasks[k].reported}
        for key in shown:
            tasks[key].reported = True
        pending = [k for k in tasks if k not in self.seen]
        agents = {k: t.agent for k, t in tasks.items()}
        return Outcome(digest(shown, agents, budget_chars=self.digest_chars, pending=pending))

    async def result_of(self, key: str) -> SubtaskResult | None:
        """The result of a task if it has finished (asking the run if not seen yet)."""
        if key not in self.seen and key in self.state.tasks:
            self.seen.update(await self.ctx.wait([key], timeout_s=0))
        return self.seen.get(key)

    async def _read_result(self, id: str, offset: int, limit: int) -> Outcome:
        if id not in self.state.tasks:
            raise ToolError(f"unknown task id {id!r}")
        result = await self.result_of(id)
        if result is None:
            raise ToolError(f"task {id!r} has not finished yet: wait for it first")
        return Outcome(page(result, offset, limit))

    async def _finish(self, answer: str, table: TableSpec | None, synthesize: bool) -> Outcome:
        if table is not None:
            return await self._finish_table(answer, table)
        if self.turn_spawned:
            raise ToolError(
                "finish in the turn that assigned tasks: their results were not in when you "
                "wrote the answer; wait for them, then finish in the next turn (or finish "
                "with a table to assemble their rows)"
            )
        if not synthesize:
            self.state.answer = answer
            return Outcome(json.dumps({"finished": True}))
        from kimmy_swarm.agents.synthesis import reduce_outputs
        from kimmy_swarm.swarm.llm import context_tokens

        done = [
            (key, output_text(r.output))
            for key in self.state.tasks
            if (r := await self.result_of(key)) is not None and r.status.value == "done"
        ]
        if not done:
            raise ToolError("no task has finished with an output: nothing to synthesize")
        goal = self._goal()
        reduced = await reduce_outputs(
            self.ctx.model,
            instructions=f"{goal}\n\nThe orchestrator's notes for the answer: {answer}",
            items=done,
            context_tokens=context_tokens(self.ctx.model, self.context_tokens),
            max_tokens=self.max_tokens,
        )
        self.state.answer = reduced.text
        return Outcome(json.dumps({"finished": True, "synthesized_from": len(reduced.ids)}))

    async def _finish_table(self, answer: str, spec: TableSpec) -> Outcome:
        """The answer: `answer` above the table assembled from the named tasks' outputs."""
        keys = list(self.state.tasks) if spec.tasks == "all" else list(spec.tasks)
        unknown = [k for k in keys if k not in self.state.tasks]
        if unknown:
            raise ToolError(f"unknown task ids {unknown[:10]}")
        if not keys:
            raise ToolError("no task has been assigned yet: nothing to assemble a table from")
        results = {k: await self.result_of(k) for k in keys}
        pending = [k for k, r in results.items() if r is None]
        if pending:
            raise ToolError(f"tasks {pending[:10]} have not finished: wait for them first")
        outputs = [r.output for r in results.values() if r is not None and r.error is None]
        titles = self.corpus.title_keys if self.corpus is not None else None
        built = assemble(spec, outputs, titles=titles)
        note = answer.strip()
        self.state.answer = (note + "\n\n" if note else "") + built.markdown
        failed = len(keys) - len(outputs)
        told = {"finished": True, "rows": len(built.rows), "repeats_dropped": built.dropped,
                "failed_tasks": failed}  # fmt: skip
        if built.unknown:
            told["rows_naming_no_document"] = built.unknown
        return Outcome(json.dumps(told))


#: Top-level domains say nothing of which domain a goal names.
_DOMAINS = frozenset({"com", "edu", "org", "net", "gov"})


def _asked_for(goal: str, where: list[Condition]) -> tuple[list[Condition], list[str]]:
    """`where` without the worked example's conditions that the goal does not say (a small
    model copies the example's "decision contains 'Accept'", "emails contains 'mit.edu'"
    into goals that name neither), and a note for each one dropped."""
    example = {(c["field"], c["op"], c["value"].lower()) for c in EXAMPLE_WHERE}
    said = goal.lower()
    kept, dropped = [], []
    for condition in where:
        copied = (condition.field, condition.op, str(condition.value).lower()) in example
        words = set(re.findall(r"[a-z0-9]{3,}", str(condition.value).lower())) - _DOMAINS
        if copied and not any(re.search(rf"\b{word}", said) for word in words):
            dropped.append(f"{condition.words()}: the worked example's condition, not the "
                           "goal's; take conditions from the goal's words")  # fmt: skip
        else:
            kept.append(condition)
    return kept, dropped


def _without_query(
    view: CorpusView, where: list[Condition], query: str | None, matched: list[str]
) -> str:
    """When a fan-out over a query kept nothing after `where` but documents of the whole
    corpus meet `where` alone: the query left them out, and the message says so first (the
    1.5B fanned out over the query "single author" with `where n_authors == 1`, was told
    "n_authors is one of: 2, 3, …" of the query's documents, and took the goal's condition
    for the wrong one). "" when the query is not the cause."""
    if query is None:
        return ""
    try:
        alone, _ = view.select(view.ids, where)
    except (UnknownFieldError, NothingMeetsError):
        return ""
    said = "; ".join(c.words() for c in where)
    n, k = len(matched), len(alone)
    return (f"the query {query!r} matched {n} document{'s' * (n != 1)} and none of them "
            f"meets where ({said}), but {k} document{'s' * (k != 1)} of the corpus "
            f"{'do' if k != 1 else 'does'}: the query left {'them' if k != 1 else 'it'} out. "
            "Give all_documents=true with the same where instead of the query")  # fmt: skip


def _arguments(tool: Tool, arguments: str) -> dict[str, Any]:
    """The validated keyword arguments of a call to `tool` from the model's JSON text.

    Raises:
        ToolError: not JSON, not an object, or not the tool's arguments (says which).
    """
    try:
        data = json.loads(arguments or "{}")
    except json.JSONDecodeError as exc:
        raise ToolError(f"the arguments are not JSON: {exc.msg}") from None
    if not isinstance(data, dict):
        raise ToolError("the arguments must be a JSON object")
    try:
        parsed = tool.params.model_validate(data)
    except ValidationError as exc:
        problems = validation_problems(exc, root="(arguments)")
        raise ToolError(f"bad arguments: {problems}") from None
    return {name: getattr(parsed, name) for name in type(parsed).model_fields}


__all__ = ["Actions", "Outcome"]
