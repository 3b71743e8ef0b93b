"""The rule-based planner: the orchestrator's offline policy, behind the same interface.

It answers each turn with the tool calls a competent orchestrator would make for the
goals it knows how to plan without a model — and the run then looks like any other:
assignments through the spawn path, waits, a finish, every turn recorded.

The rules come from the registered pipelines (`agents.pipelines`): the first whose
`offline_rules` plans the goal over the run's resources plans it — a wide task's goal over
the paper corpus (the wide search), a corpus (the literature review), datasets (the batch
analysis), or a goal your own registered pipeline knows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kimmy_swarm.agents.loop import calls_response
from kimmy_swarm.agents.pipeline import OFFLINE_PLANS
from kimmy_swarm.swarm.errors import ConfigError, UserError

if TYPE_CHECKING:
    from kimmy_swarm.agents.orchestrator.actions import Actions
    from kimmy_swarm.agents.pipeline import Pipeline, Rules, RunResources
    from kimmy_swarm.swarm.context import SubtaskContext
    from kimmy_swarm.swarm.llm.types import ChatResponse

NO_OFFLINE_PLAN = f"this goal needs a model to plan it: {OFFLINE_PLANS}"


class PlanDeniedError(UserError):
    """A person denied the offline planner's plan (`--approve-spawns-over`): its rules plan
    each goal one way, so the orchestrator fails with the person's reason."""


@dataclass
class OfflinePlanner:
    """The orchestrator's policy when there is no model: a pipeline's offline rules."""

    rules: Rules
    name: str = "offline"

    async def next_turn(
        self, ctx: SubtaskContext, messages: Sequence[dict[str, Any]], actions: Actions
    ) -> ChatResponse:
        turn = actions.state.turns + 1  # counted over attempts and sessions
        denied = actions.plan_gate.denied
        if denied is not None:  # rules plan one way only: a denied plan ends the attempt
            raise PlanDeniedError(
                f"a person denied the plan ({denied}); the offline planner knows no other: "
                f"{OFFLINE_PLANS}"
            )
        return calls_response(await self.rules.calls(ctx, actions), turn)


def offline_rules(goal: str, resources: RunResources) -> tuple[Pipeline[Any, Any], Rules]:
    """The registered pipeline that plans `goal` over `resources` without a model, and its
    rules (the pipelines are asked in registration order).

    Raises:
        ConfigError: no pipeline plans this goal without a model (says how to give one).
    """
    from kimmy_swarm.agents.pipelines import pipelines

    for pipeline in pipelines().values():
        rules = pipeline.offline_rules(goal, resources)
        if rules is not None:
            return pipeline, rules
    raise ConfigError(NO_OFFLINE_PLAN)


__all__ = ["NO_OFFLINE_PLAN", "OfflinePlanner", "PlanDeniedError", "offline_rules"]
