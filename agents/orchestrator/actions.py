"""Carrying out the orchestrator's tool calls against the live run.

Every call's result is text for the model; a bad call (unknown agent, refused spawn, bad
arguments) comes back as `error: …` saying why, so the model can correct it. Assignments
go through `ctx.spawn` (the runtime's spawn path: limits, budgets, the store, retries);
`wait` through `ctx.wait`.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from agents.orchestrator.agent_specs import AgentSpec
from agents.orchestrator.digest import digest, output_text, page
from agents.orchestrator.state import OrchestratorState, TaskRecord
from agents.orchestrator.tools import (
    TOOLS,
    AssignTask,
    AssignTasks,
    CreateSubagent,
    Finish,
    ReadResult,
    Wait,
)
from swarm.errors import SpawnError, WaitError, validation_problems

if TYPE_CHECKING:
    from swarm.context import SubtaskContext
    from swarm.llm.types import ToolCall
    from swarm.schema import SubtaskResult


class ToolCallError(Exception):
    """A tool call the orchestrator must correct (the message goes back to it)."""


@dataclass
class Outcome:
    """What one tool call did."""

    text: str
    spawned: list[str] = field(default_factory=list)


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
    #: Results seen so far, by task id (kept out of the saved state: outputs can be large).
    seen: dict[str, SubtaskResult] = field(default_factory=dict)

    async def run(self, call: ToolCall) -> Outcome:
        """Carry out one tool call; errors become the text `error: …`."""
        name = call.function.name
        model = TOOLS.get(name)
        try:
            if model is None:
                raise ToolCallError(f"unknown tool {name!r}; tools: {', '.join(TOOLS)}")
            args = _parse(model, call.function.arguments)
            return await getattr(self, f"_{name}")(args)
        except ToolCallError as exc:
            return Outcome(f"error: {exc}")

    # --- the tools ----------------------------------------------------------------------

    async def _create_subagent(self, args: CreateSubagent) -> Outcome:
        if args.name in self.roles:
            raise ToolCallError(
                f"{args.name!r} is a built-in role (available by name: assign_task to it); "
                "give your sub-agent another name"
            )
        known = self.state.agents.get(args.name)
        spec = AgentSpec.model_validate(args.model_dump())
        if known is not None and known != spec:
            raise ToolCallError(f"a different sub-agent {args.name!r} exists; pick a new name")
        missing = [t for t in spec.tools if t not in self.tools]
        if missing:
            raise ToolCallError(
                f"unknown tools {missing}; tools you may give: {', '.join(sorted(self.tools))}"
            )
        self.state.agents[spec.name] = spec
        return Outcome(json.dumps({"created": spec.name, "tools": list(spec.tools)}))

    def _subtask(self, agent: str, task: str, inputs: Mapping[str, Any], deps: list[str],
                 key: str) -> dict[str, Any]:  # fmt: skip
        spec = self.state.agents.get(agent)
        if spec is None and agent not in self.roles:
            created = ", ".join(self.state.agents) or "(none yet)"
            raise ToolCallError(
                f"unknown agent {agent!r}; created: {created}; built-in: "
                f"{', '.join(sorted(self.roles))}"
            )
        unknown = [d for d in deps if d not in self.state.tasks]
        if unknown:
            raise ToolCallError(f"depends_on names unknown task ids {unknown}")
        out: dict[str, Any] = {
            "id": key, "role": agent, "instructions": task, "inputs": dict(inputs),
            "depends_on": deps,
        }  # fmt: skip
        if spec is not None:
            out["role_spec"] = spec.model_dump(mode="json")
        return out

    def _spawn(self, subtasks: list[dict[str, Any]]) -> list[str]:
        try:
            self.ctx.spawn(subtasks)
        except SpawnError as exc:
            raise ToolCallError(f"refused: {exc}") from None
        for st in subtasks:
            self.state.tasks[st["id"]] = TaskRecord(
                id=st["id"], agent=st["role"], task=st["instructions"],
                depends_on=st["depends_on"],
            )  # fmt: skip
        return [st["id"] for st in subtasks]

    async def _assign_task(self, args: AssignTask) -> Outcome:
        if args.id is not None and args.id in self.state.tasks:
            raise ToolCallError(f"task id {args.id!r} is taken")
        key = args.id or self.state.new_task_id(set())
        st = self._subtask(args.agent, args.task, args.inputs, args.depends_on, key)
        ids = self._spawn([st])
        return Outcome(json.dumps({"task_id": ids[0]}), ids)

    async def _assign_tasks(self, args: AssignTasks) -> Outcome:
        subtasks = [
            self._subtask(
                args.agent, args.task, inputs, args.depends_on, self.state.new_task_id(set())
            )
            for inputs in args.inputs_list
        ]
        ids = self._spawn(subtasks)
        return Outcome(json.dumps({"task_ids": ids}), ids)

    async def _wait(self, args: Wait) -> Outcome:
        tasks = self.state.tasks
        if not tasks:
            raise ToolCallError("no task has been assigned yet: assign_task first")
        if args.ids == "all":
            ids, mode = list(tasks), "all"
        elif args.ids == "any":
            ids, mode = self.state.unreported(), "any"
            if not ids:
                raise ToolCallError("every task's result was already shown; nothing to wait for")
        else:
            unknown = [i for i in args.ids if i not in tasks]
            if unknown:
                raise ToolCallError(f"unknown task ids {unknown}")
            ids, mode = list(args.ids), "all"
        try:
            got = await self.ctx.wait(ids, mode=mode, timeout_s=args.timeout_s)  # type: ignore[arg-type]
        except WaitError as exc:
            raise ToolCallError(str(exc)) from None
        self.seen.update(got)
        shown = {k: r for k, r in got.items() if args.ids != "all" or not tasks[k].reported}
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

    async def _read_result(self, args: ReadResult) -> Outcome:
        if args.id not in self.state.tasks:
            raise ToolCallError(f"unknown task id {args.id!r}")
        result = await self.result_of(args.id)
        if result is None:
            raise ToolCallError(f"task {args.id!r} has not finished yet: wait for it first")
        return Outcome(page(result, args.offset, args.limit))

    async def _finish(self, args: Finish) -> Outcome:
        if not args.synthesize:
            self.state.answer = args.answer
            return Outcome(json.dumps({"finished": True}))
        from agents.synthesis import reduce_outputs
        from swarm.llm import context_tokens

        done = [
            (key, output_text(r.output))
            for key in self.state.tasks
            if (r := await self.result_of(key)) is not None and r.status.value == "done"
        ]
        if not done:
            raise ToolCallError("no task has finished with an output: nothing to synthesize")
        goal = self.ctx.inputs.get("goal") or self.ctx.instructions
        reduced = await reduce_outputs(
            self.ctx.model,
            instructions=f"{goal}\n\nThe orchestrator's notes for the answer: {args.answer}",
            items=done,
            context_tokens=context_tokens(self.ctx.model, self.context_tokens),
            max_tokens=self.max_tokens,
        )
        self.state.answer = reduced.text
        return Outcome(json.dumps({"finished": True, "synthesized_from": len(reduced.ids)}))


def _parse(model: type[BaseModel], arguments: str) -> Any:
    try:
        data = json.loads(arguments or "{}")
    except json.JSONDecodeError as exc:
        raise ToolCallError(f"the arguments are not JSON: {exc.msg}") from None
    if not isinstance(data, dict):
        raise ToolCallError("the arguments must be a JSON object")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = validation_problems(exc, root='(arguments)')
        raise ToolCallError(f"bad arguments: {problems}") from None


__all__ = ["Actions", "Outcome", "ToolCallError"]
