"""Kimmy Swarm agents: roles, sub-agents (model policy or offline procedure), tools, and
the two pipelines (`agents.review`: literature review; `agents.analysis`: batch data
analysis). Importing this package is light; the pipelines import their libraries on use.
"""

from agents.fallback import MadeBy, Provenance, fallbacks, falls_back
from agents.loop import AgentStepLimitError, Attempt
from agents.roles import BUILTIN_ROLE_NAMES, Answer, Role, RoleRegistry, builtin_roles
from agents.subagent import SubAgent, install
from agents.toolbox import Tool, ToolBox, ToolError, make_tool

__all__ = [
    "BUILTIN_ROLE_NAMES",
    "AgentStepLimitError",
    "Answer",
    "Attempt",
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
