"""Kimmy Swarm agents: roles (with their briefs for small models), sub-agents (model policy
or offline procedure), tools, and the pipelines behind one protocol (`Pipeline`;
`agents.review`: literature review;
`agents.analysis`: batch data analysis; `agents.widesearch`: wide search), run by
`run_pipeline` and registered with `register_pipeline`. Importing this package is light;
the pipelines import their libraries on use.
"""

from kimmy_swarm.agents.brief import SubtaskBrief
from kimmy_swarm.agents.fallback import MadeBy, Provenance, fallbacks, falls_back
from kimmy_swarm.agents.loop import AgentStepLimitError, Attempt
from kimmy_swarm.agents.pipeline import (
    Pipeline,
    PipelineFiles,
    PipelineRun,
    Rules,
    RunInputs,
    RunResources,
    resume_pipeline,
    run_pipeline,
)
from kimmy_swarm.agents.pipeline_record import PipelineSettings
from kimmy_swarm.agents.pipelines import pipelines, register_pipeline
from kimmy_swarm.agents.roles import (
    BUILTIN_ROLE_NAMES,
    Answer,
    Brief,
    Role,
    RoleRegistry,
    builtin_roles,
)
from kimmy_swarm.agents.subagent import SubAgent, install
from kimmy_swarm.agents.toolbox import Tool, ToolBox, ToolError, make_tool

__all__ = [
    "BUILTIN_ROLE_NAMES",
    "AgentStepLimitError",
    "Answer",
    "Attempt",
    "Brief",
    "MadeBy",
    "Pipeline",
    "PipelineFiles",
    "PipelineRun",
    "PipelineSettings",
    "Provenance",
    "Role",
    "RoleRegistry",
    "Rules",
    "RunInputs",
    "RunResources",
    "SubAgent",
    "SubtaskBrief",
    "Tool",
    "ToolBox",
    "ToolError",
    "builtin_roles",
    "fallbacks",
    "falls_back",
    "install",
    "make_tool",
    "pipelines",
    "register_pipeline",
    "resume_pipeline",
    "run_pipeline",
]
