"""The orchestrator agent: a goal in words becomes a DAG of sub-agents it creates itself.

    from kimmy_swarm.agents.orchestrator import SolveConfig, run_solve
    outcome = run_solve(SolveConfig(goal="Review linear attention", corpus=Path("papers"),
                                    out=Path("out"), model=model))   # model=None: offline

- `solve`: `run_solve` / `resume_solve`, `SolveConfig`, `SolveOutcome`.
- `agent`: `OrchestratorAgent` (the loop, a swarm worker), `ModelTurns` (its model policy).
- `offline`: the rule-based planner (the offline policy behind the same interface), over
  the registered pipelines' rules (`agents.pipelines`).
- `resources`: a goal's resources, loaded by the registered pipelines.
- `tools`, `actions`: the orchestrator's tools and how they act on the live run;
  `conditions`: the `where` of `search` / `fan_out` (conditions on the records' fields the
  runtime checks itself).
- `agent_specs`: sub-agents made at run time (`AgentSpec`, the swarm's role factory).
"""

from kimmy_swarm.agents.orchestrator.agent import (
    ORCHESTRATOR_ID,
    ModelTurns,
    OrchestratorAgent,
    OrchestratorOutput,
    TurnPolicy,
)
from kimmy_swarm.agents.orchestrator.agent_specs import AgentSpec, spec_role_factory
from kimmy_swarm.agents.orchestrator.conditions import Condition
from kimmy_swarm.agents.orchestrator.offline import NO_OFFLINE_PLAN, OfflinePlanner, offline_rules
from kimmy_swarm.agents.orchestrator.prompts import ResourceBrief
from kimmy_swarm.agents.orchestrator.solve import (
    SolveConfig,
    SolveOutcome,
    SolveSettings,
    resume_solve,
    run_solve,
)
from kimmy_swarm.agents.orchestrator.tools import orchestrator_tools

__all__ = [
    "NO_OFFLINE_PLAN",
    "ORCHESTRATOR_ID",
    "AgentSpec",
    "Condition",
    "ModelTurns",
    "OfflinePlanner",
    "OrchestratorAgent",
    "OrchestratorOutput",
    "ResourceBrief",
    "SolveConfig",
    "SolveOutcome",
    "SolveSettings",
    "TurnPolicy",
    "offline_rules",
    "orchestrator_tools",
    "resume_solve",
    "run_solve",
    "spec_role_factory",
]
