"""`Attempt`: one attempt of one sub-agent, what its procedure and the agent loop work with.

A `SubAgent` makes one per attempt of its subtask (and a fresh one when the offline
procedure stands in for a failed model). It carries the subtask's context, the role, the
tools the role may call, and the steps taken so far; tool calls go through it so that
every call — the procedure's (`call`) and the model's (`call_for_model`) — is recorded
the same way (`ToolCalled`, `AgentStep`).
"""

from __future__ import annotations

import asyncio
import json
import time
from concurrent.futures import Executor
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from kimmy_swarm.agents.loop.errors import error_text
from kimmy_swarm.agents.toolbox import CallDenied, ToolError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from kimmy_swarm.agents.brief import SubtaskBrief
    from kimmy_swarm.agents.roles import Role
    from kimmy_swarm.agents.toolbox import Tool, ToolBox
    from kimmy_swarm.swarm.context import SubtaskContext


class Attempt:
    """One attempt of one sub-agent: what its procedure (or the agent loop) works with.

    Attributes:
        ctx: the swarm's `SubtaskContext` (inputs, upstream outputs, model, spawn).
        role: the role being played.
        tools: the tools it may call.
        policy: `model` or `offline`.
        steps: steps taken so far.
        loop: the event loop that records its events; set while its procedure runs in a
            worker thread, whose calls hand their events to it (None: record in place).
        brief: the role's brief for this subtask, once the model policy has made it
            (`agents.brief`; None: the role has none, or the policy is offline).
    """

    def __init__(self, ctx: SubtaskContext, role: Role, tools: ToolBox, policy: str) -> None:
        self.ctx = ctx
        self.role = role
        self.tools = tools
        self.policy = policy
        self.steps = 0
        self.loop: asyncio.AbstractEventLoop | None = None
        self.brief: SubtaskBrief | None = None

    @property
    def inputs(self) -> dict[str, Any]:
        return self.ctx.inputs

    @property
    def upstream(self) -> dict[str, Any]:
        return self.ctx.upstream

    def _record(self, fn: Any, *args: Any, **kwargs: Any) -> None:
        """Record an event from the loop thread, or hand it to the loop from a worker thread."""
        loop = self.loop
        if loop is None or _on_loop(loop):
            fn(*args, **kwargs)
        else:
            loop.call_soon_threadsafe(lambda: fn(*args, **kwargs))

    def call(self, tool: str, /, **arguments: Any) -> Any:
        """Call a tool from an offline procedure: one step, recorded like a model's call.

        Raises whatever the tool raises (after recording the failed call).
        """
        self.steps += 1
        step = self.steps
        t0 = time.perf_counter()
        error: str | None = None
        result: Any = None
        try:
            found = self.tools.get_tool(tool)
            kwargs = found.parse(arguments)
            if self._needs_approval(found):
                kwargs = self._approved_from_thread(found, kwargs)
            result = found.fn(**kwargs)
            return result
        except Exception as exc:
            error = error_text(exc)
            raise
        finally:
            latency = time.perf_counter() - t0
            self._record(
                self.ctx.record_tool,
                tool,
                step=step,
                latency_s=latency,
                error=error,
                arguments=arguments,
                result=result,
            )
            self._record(
                self.ctx.record_step, step, policy=self.policy, tools=[tool], outcome="tools"
            )

    async def call_for_model(
        self, name: str, arguments: str, executor: Executor | None, call_id: str | None = None
    ) -> str:
        """Run one tool call the model made; the result (or the error) as text for the model."""
        t0 = time.perf_counter()
        error: str | None = None
        try:
            tool = self.tools.get_tool(name)
            kwargs = tool.parse(arguments)
            if self._needs_approval(tool):
                kwargs = await self._approved(tool, kwargs)
            loop = asyncio.get_running_loop()
            result = await loop.run_in_executor(executor, lambda: tool.fn(**kwargs))
            text = result if isinstance(result, str) else json.dumps(result, default=_jsonable)
        except Exception as exc:  # noqa: BLE001  (any tool failure goes back to the model)
            error = error_text(exc)
            text = f"error: {error}"
        self.ctx.record_tool(
            name,
            step=self.steps,
            latency_s=time.perf_counter() - t0,
            error=error,
            call_id=call_id,
            arguments=arguments,
            result=text,
        )
        return text

    def _needs_approval(self, tool: Tool) -> bool:
        asks = tool.requires_approval or self.role.requires_approval
        return self.ctx.needs_approval(tool.name, asks=asks)

    async def _approved(self, tool: Tool, kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """The arguments `tool` runs with once a person approved the call (edited ones
        checked like the model's).

        Raises:
            CallDenied: the person denied it (or nobody answered and the run denies then).
        """
        decision = await self.ctx.approval(tool.name, kwargs)
        if decision.verdict == "deny":
            why = f": {decision.reason}" if decision.reason else ""
            raise CallDenied(f"the call of {tool.name!r} was denied ({decision.by}){why}")
        return tool.parse(decision.arguments) if decision.arguments is not None else dict(kwargs)

    def _approved_from_thread(self, tool: Tool, kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """`_approved` for a procedure running in a worker thread (it blocks that thread)."""
        loop = self.loop
        if loop is None or _on_loop(loop):
            raise ToolError(
                f"tool {tool.name!r} needs approval, which a procedure can wait for only in "
                "a worker thread"
            )
        return asyncio.run_coroutine_threadsafe(self._approved(tool, kwargs), loop).result()

    def validate(self, answer: Any) -> BaseModel:
        """The answer as the role's schema, checked for meaning.

        Raises:
            ValidationError: it does not fit the schema.
            ValueError: the role's check rejected it.
        """
        out = self.role.output
        parsed = answer if isinstance(answer, out) else out.model_validate(answer)
        if self.role.check is not None:
            self.role.check(parsed, self)
        return parsed


def _on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


def _jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if hasattr(value, "__dataclass_fields__"):
        return {k: getattr(value, k) for k in value.__dataclass_fields__}
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    return str(value)


__all__ = ["Attempt"]
