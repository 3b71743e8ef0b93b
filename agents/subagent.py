"""`SubAgent`: one role at work, under a model policy or its offline procedure.

    agent = SubAgent(role, toolbox)            # a swarm Worker: await agent(ctx)

- **model policy** (the swarm has a model): the agent loop of `agents.loop` —
  system prompt, tool calls, a final JSON answer validated against the role's schema, one
  repair turn, a step limit.
- **offline policy** (no model, or `policy="offline"`): the role's deterministic procedure,
  run in a worker thread, calling the same tools through `Attempt.call`.
- **fallback** (`fallback=True`): when the model fails the subtask by its answers (invalid
  after the repair turn, the step limit, a task too long for its context), or its server
  fails the subtask's request on the last attempt, the role's procedure does it instead; an
  unreachable server still fails the subtask (`agents.fallback` says which errors fall
  back and how the output is marked).

Both record the same `AgentStep` / `ToolCalled` events and return the same schema. An
output whose schema is `agents.fallback.Provenance` says which made it (`made_by`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from concurrent.futures import Executor
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ValidationError

from kimmy_swarm.agents.fallback import (
    FALLBACK_ERRORS,
    MadeBy,
    Provenance,
    falls_back_on_server_error,
)
from kimmy_swarm.agents.loop import Attempt, error_text, run_model_policy
from kimmy_swarm.agents.roles import Role, RoleRegistry
from kimmy_swarm.agents.toolbox import ToolBox
from kimmy_swarm.swarm.errors import ConfigError, ModelError, OutputValidationError

if TYPE_CHECKING:
    from kimmy_swarm.swarm import Swarm
    from kimmy_swarm.swarm.context import SubtaskContext

Policy = Literal["auto", "model", "offline"]
_POLICIES = ("auto", "model", "offline")


def _made_by(output: BaseModel, made_by: MadeBy, error: str | None = None) -> BaseModel:
    """The output with who made it, when its schema records that (`Provenance`)."""
    if not isinstance(output, Provenance):
        return output
    return output.model_copy(update={"made_by": made_by, "fallback_error": error})


class SubAgent:
    """A swarm `Worker` that plays one role.

    Args:
        role: the role.
        tools: the pipeline's toolbox; the role gets the tools it names.
        policy: `auto` (model when the swarm has one, else offline), `model` or `offline`.
        executor: where offline procedures and tools run (default: the loop's executor).
        fallback: when the model fails the subtask by its answers, or its server fails
            the subtask's request with no retry left (`agents.fallback`), run the role's
            offline procedure instead (recorded as a `fallback` step and on
            the output); False: the subtask fails with the model's error (strict model
            mode). A role without a procedure always fails.

    Raises:
        ConfigError: a bad policy, or the role names a tool the toolbox lacks.
    """

    def __init__(
        self,
        role: Role,
        tools: ToolBox | None = None,
        *,
        policy: Policy = "auto",
        executor: Executor | None = None,
        fallback: bool = False,
    ) -> None:
        if policy not in _POLICIES:
            raise ConfigError(f"bad policy {policy!r}; use one of {', '.join(_POLICIES)}")
        box = tools if tools is not None else ToolBox()
        missing = [t for t in role.tools if t not in box]
        if missing:
            raise ConfigError(
                f"role {role.name!r} needs tools {missing} that the toolbox lacks; "
                f"tools here: {', '.join(sorted(box)) or '(none)'}"
            )
        self.role = role
        self.tools = box.subset(role.tools)
        self.policy = policy
        self.executor = executor
        self.fallback = bool(fallback)

    def policy_for(self, ctx: SubtaskContext) -> str:
        if self.policy == "auto":
            return "model" if ctx.has_model else "offline"
        return self.policy

    async def __call__(self, ctx: SubtaskContext) -> BaseModel:
        policy = self.policy_for(ctx)
        run = Attempt(ctx, self.role, self.tools, policy)
        if policy != "model":
            return _made_by(await self._offline(run), "offline")
        try:
            answer = await run_model_policy(run, self.executor)
        except FALLBACK_ERRORS as exc:
            if not self.fallback or self.role.procedure is None:
                raise
            return await self._fall_back(run, exc)
        except ModelError as exc:
            if not (self.fallback and self.role.procedure is not None):
                raise
            if not falls_back_on_server_error(exc, ctx.retries_left):
                raise
            return await self._fall_back(run, exc)
        return _made_by(answer, "model")

    async def _fall_back(self, failed: Attempt, exc: Exception) -> BaseModel:
        """The offline procedure's answer for a subtask the model failed: one `fallback`
        step (the model's error) first, then the procedure's steps, numbered on. A failing
        procedure fails the subtask with its own error (the model's is its context)."""
        error = error_text(exc)
        failed.steps += 1
        failed.ctx.record_step(failed.steps, policy="model", outcome="fallback", error=error)
        run = Attempt(failed.ctx, self.role, self.tools, "offline")
        run.steps = failed.steps
        return _made_by(await self._offline(run), "offline_fallback", error)

    async def _offline(self, run: Attempt) -> BaseModel:
        procedure = self.role.procedure
        if procedure is None:
            raise ConfigError(
                f"role {self.role.name!r} has no offline procedure, so it needs a model: "
                "pass --model / set KIMMY_BASE_URL"
            )
        loop = asyncio.get_running_loop()
        run.loop = loop
        answer = await loop.run_in_executor(self.executor, procedure, run)
        try:
            parsed = run.validate(answer)
        except (ValidationError, ValueError) as exc:
            raise OutputValidationError(
                f"role {self.role.name!r} (subtask {run.ctx.id!r}): the offline procedure's "
                f"answer is invalid: {exc}"
            ) from exc
        run.steps += 1
        run.ctx.record_step(run.steps, policy="offline", outcome="answer")
        return parsed


def install(
    swarm: Swarm,
    roles: RoleRegistry | Iterable[Role] | Mapping[str, Role],
    tools: ToolBox | None = None,
    *,
    policy: Policy = "auto",
    executor: Executor | None = None,
    fallback: bool = False,
) -> None:
    """Register a `SubAgent` for each role on `swarm` (with the role's output schema)."""
    items = roles.values() if isinstance(roles, Mapping) else roles
    for role in items:
        agent = SubAgent(role, tools, policy=policy, executor=executor, fallback=fallback)
        swarm.add_role(role.name, agent, output=role.output)


__all__ = ["Policy", "SubAgent", "install"]
