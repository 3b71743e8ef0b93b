"""MCP servers' tools for sub-agents: the servers a run names in an `{"mcpServers": …}`
file (`McpConfig`), started once per run and shared (`McpHost`), their tools joining the
run's `ToolBox` as `server.tool` with the servers' own JSON schemas.

The SDK (`mcp`, the `mcp` extra) is imported when a host starts, not by this package.
"""

from kimmy_swarm.agents.tools.mcp.config import (
    NOT_STORED,
    HttpServer,
    McpConfig,
    McpServer,
    StdioServer,
    as_mcp_config,
)
from kimmy_swarm.agents.tools.mcp.host import MAX_RESULT_CHARS, McpHost, ServerStats, result_text

__all__ = [
    "MAX_RESULT_CHARS",
    "NOT_STORED",
    "HttpServer",
    "McpConfig",
    "McpHost",
    "McpServer",
    "ServerStats",
    "StdioServer",
    "as_mcp_config",
    "result_text",
]
