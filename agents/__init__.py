"""Kimmy Swarm agents: roles, sub-agents (model policy or offline procedure), tools, and
the two pipelines (`agents.review`: literature review; `agents.analysis`: batch data
analysis). Importing this package is light; the pipelines import their libraries on use.
"""

from agents._model_policy import AgentStepLimitError
from agents.fallback import MadeBy, Provenance, fallbacks, falls_back
from agents.roles import BUILTIN_ROLE_NAMES, Answer, Role, RoleRegistry, builtin_roles
from agents.subagent import AgentRun, SubAgent, install
from agents.toolbox import Tool, ToolBox, ToolError, make_tool

__all__ = [
    "BUILTIN_ROLE_NAMES",
    "AgentRun",
    "AgentStepLimitError",
    "Answer",
    "MadeBy",
    "Provenance",
    "Role",
    "RoleRegistry",
    "SubAgent",
    "Tool",
    "ToolBox",
    "ToolError",
    "builtin_roles",
    "fallbacks",
    "falls_back",
    "install",
    "make_tool",
]
