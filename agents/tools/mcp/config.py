"""Which MCP servers a run uses: the `{"mcpServers": {...}}` file users already have.

The format is Claude Desktop's (and Cursor's, and most MCP clients'): each server by name,
either a program to start that speaks MCP on its stdin/stdout, or the URL of a server that
speaks streamable HTTP:

    {"mcpServers": {
        "time": {"command": "mcp-server-time", "args": ["--local-timezone", "UTC"]},
        "git": {"command": "uvx", "args": ["mcp-server-git", "--repository", "."],
                "env": {"GIT_AUTHOR_NAME": "swarm"}},
        "search": {"url": "http://127.0.0.1:8931/mcp", "headers": {"Authorization": "…"}}
    }}

Our own settings for a server sit beside those keys: `max_in_flight` (calls at once on its
one session, 8 by default) and `timeout_s` (one call's limit, 60 s). Unknown keys that other
clients write (`disabled`, `autoApprove`, `type`) are accepted; `disabled: true` leaves the
server out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from kimmy_swarm.swarm.errors import ConfigError, validation_problems

#: What a run's stored settings hold in place of each `env` and `headers` value: those are
#: where API keys go, and the run store is read by other tools (exports, the dashboard).
NOT_STORED = "<not stored>"
#: A server's name becomes the first part of its tools' names (`git.git_status`).
SERVER_NAME = re.compile(r"^[A-Za-z0-9_-]{1,32}$")


class _Server(BaseModel):
    model_config = ConfigDict(extra="ignore")

    #: Calls in flight at once on this server's session; more wait their turn.
    max_in_flight: int = Field(8, ge=1, le=1_024)
    #: One call's limit in seconds; a call past it is cancelled and its caller told.
    timeout_s: float = Field(60.0, gt=0, le=86_400)
    #: Written by other clients to switch a server off; such a server is left out.
    disabled: bool = False


class StdioServer(_Server):
    """A program that speaks MCP on its stdin and stdout, started once per run."""

    command: str = Field(min_length=1)
    args: list[str] = Field(default_factory=list)
    #: Added to the few variables the SDK passes on (HOME, PATH, USER, …): API keys go here.
    env: dict[str, str] = Field(default_factory=dict)
    cwd: Path | None = None


class HttpServer(_Server):
    """A server that speaks MCP's streamable HTTP at `url`."""

    url: str
    headers: dict[str, str] = Field(default_factory=dict)

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not re.match(r"^https?://[^\s/]+", value):
            raise ValueError(f"{value!r} is not an http:// or https:// URL")
        return value


McpServer = StdioServer | HttpServer


class McpConfig(BaseModel):
    """The MCP servers of a run, by name (the ones not disabled)."""

    model_config = ConfigDict(frozen=True)

    servers: dict[str, StdioServer | HttpServer] = Field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any, *, source: str = "the MCP config") -> McpConfig:
        """The config from the parsed JSON of an `{"mcpServers": {...}}` file.

        Raises:
            ConfigError: not that shape; a server with neither `command` nor `url`, or both;
                a name that cannot name tools; a bad value (each one named).
        """
        if not isinstance(data, dict) or not isinstance(data.get("mcpServers"), dict):
            raise ConfigError(
                f'{source}: expected {{"mcpServers": {{name: {{"command": …}} or '
                '{"url": …}}}}}' + f", got {_shape(data)}"
            )
        servers: dict[str, StdioServer | HttpServer] = {}
        for name, entry in data["mcpServers"].items():
            if not SERVER_NAME.match(name):
                raise ConfigError(
                    f"{source}: server name {name!r} must be 1-32 letters, digits, '_' or '-' "
                    "(it names the server's tools: NAME.tool)"
                )
            if not isinstance(entry, dict):
                raise ConfigError(
                    f"{source}: server {name!r} must be an object, got {_shape(entry)}"
                )
            has = [key for key in ("command", "url") if key in entry]
            if len(has) != 1:
                raise ConfigError(
                    f"{source}: server {name!r} needs exactly one of 'command' (a program "
                    f"speaking MCP on stdio) or 'url' (streamable HTTP); it has "
                    f"{' and '.join(repr(k) for k in has) or 'neither'}"
                )
            kind = StdioServer if has == ["command"] else HttpServer
            try:
                server = kind.model_validate(entry)
            except ValidationError as exc:
                problems = validation_problems(exc, show_input=True)
                raise ConfigError(f"{source}: server {name!r}: {problems}") from None
            if not server.disabled:
                servers[name] = server
        return cls(servers=servers)

    def without_secrets(self) -> McpConfig:
        """This config as a run stores it: every `env` and `headers` value `NOT_STORED`."""
        servers: dict[str, StdioServer | HttpServer] = {}
        for name, server in self.servers.items():
            if isinstance(server, StdioServer):
                hidden = {key: NOT_STORED for key in server.env}
                servers[name] = server.model_copy(update={"env": hidden})
            else:
                hidden = {key: NOT_STORED for key in server.headers}
                servers[name] = server.model_copy(update={"headers": hidden})
        return McpConfig(servers=servers)

    def not_stored(self) -> list[str]:
        """The values a stored config lacks, as `server NAME: env KEY` (empty: none)."""
        out = []
        for name, server in self.servers.items():
            given = server.env if isinstance(server, StdioServer) else server.headers
            kind = "env" if isinstance(server, StdioServer) else "header"
            out += [f"server {name!r}: {kind} {key}" for key, v in given.items() if v == NOT_STORED]
        return out

    @classmethod
    def load(cls, path: str | Path) -> McpConfig:
        """The config in the JSON file at `path`.

        Raises:
            ConfigError: no such file, not JSON, or not a valid config (says why).
        """
        file = Path(path)
        try:
            text = file.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"MCP config {str(file)!r}: {exc.strerror or exc}") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(
                f"MCP config {str(file)!r} is not JSON: {exc.msg} (line {exc.lineno})"
            ) from None
        return cls.from_json(data, source=f"MCP config {str(file)!r}")


def as_mcp_config(value: McpConfig | Mapping[str, Any] | str | Path | None) -> McpConfig | None:
    """A config field's MCP servers: a `McpConfig`, a path to an `{"mcpServers": …}` file,
    that file's parsed JSON, or a config as stored (`{"servers": …}`); None: none.

    Raises:
        ConfigError: any other value, or a bad file (says why).
    """
    if value is None or isinstance(value, McpConfig):
        return value
    if isinstance(value, str | Path):
        return McpConfig.load(value)
    if isinstance(value, Mapping):
        if "mcpServers" in value:
            return McpConfig.from_json(dict(value))
        try:
            return McpConfig.model_validate(dict(value))
        except ValidationError as exc:
            raise ConfigError(f"mcp: {validation_problems(exc)}") from None
    raise ConfigError(
        f"mcp must be an McpConfig, a path to an MCP config file or its JSON; got {value!r}"
    )


def _shape(value: Any) -> str:
    if isinstance(value, dict):
        return "an object with keys " + (", ".join(map(repr, list(value)[:5])) or "(none)")
    return type(value).__name__


__all__ = [
    "NOT_STORED",
    "SERVER_NAME",
    "HttpServer",
    "McpConfig",
    "McpServer",
    "StdioServer",
    "as_mcp_config",
]
