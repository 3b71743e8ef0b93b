"""`kimmy mcp`: the swarm as an MCP server, for MCP clients to hand it goals: over stdio
(a desktop app starts it), or with `--http` over streamable HTTP on 127.0.0.1.

Over HTTP the key rules are `kimmy serve`'s: a bearer key from `--api-key-file` (its first
line) or `KIMMY_MCP_API_KEY`, never on the command line (it would show in `ps`); a host
other than a loopback address is refused without one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kimmy_swarm.cli.options import (
    DEFAULT_RUNS_DIR,
    ApiKey,
    BaseUrl,
    CallTimeout,
    ContextTokens,
    Local,
    ModelName,
    RunsDir,
    command_group,
    fail,
    key_from_file,
)

app = command_group()


@app.command("mcp")
def mcp_cmd(
    root: Annotated[
        Path,
        typer.Option(
            "--root",
            help="Every path a client gives (corpus, data, out) must lie inside it.",
            file_okay=False,
        ),
    ] = Path("."),
    base_url: BaseUrl = None,
    model: ModelName = None,
    api_key: ApiKey = None,
    call_timeout: CallTimeout = None,
    context_tokens: ContextTokens = None,
    local: Local = None,
    runs_dir: RunsDir = DEFAULT_RUNS_DIR,
    http: Annotated[
        bool, typer.Option("--http", help="Serve streamable HTTP at HOST:PORT/mcp, not stdio.")
    ] = False,
    host: Annotated[str, typer.Option("--host", help="The address --http binds.")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", min=1, max=65535, help="The port --http binds.")
    ] = 8766,
    api_key_file: Annotated[
        Path | None,
        typer.Option(
            "--api-key-file",
            help="With --http: require the bearer key on this file's first line "
            "[or env KIMMY_MCP_API_KEY].",
            dir_okay=False,
        ),
    ] = None,
) -> None:
    """Serve the swarm over MCP (stdin/stdout, or --http): tools swarm, review, analyze,
    runs, show_run, resume; each run's files as resources (kimmy://runs/ID/files/NAME)."""
    try:
        from kimmy_swarm.cli.mcp_server import McpServerSettings, build_server
    except ImportError as exc:
        raise fail(f"kimmy mcp needs the MCP SDK: pip install 'kimmy-swarm[mcp]' ({exc})") from None
    from kimmy_swarm.cli.commands.solve import _endpoint_of, _source, open_model

    if not root.is_dir():
        raise fail(f"--root {str(root)!r} is not a folder")
    key = _http_key(api_key_file) if http else None
    if http and key is None and host not in ("127.0.0.1", "localhost", "::1"):
        raise fail(
            f"--host {host} serves other machines: give a key (KIMMY_MCP_API_KEY or "
            "--api-key-file) or bind 127.0.0.1"
        )
    source = _source(base_url, model, local, False, context_tokens)
    client = open_model(source, api_key, call_timeout)
    settings = McpServerSettings(
        runs_dir=runs_dir.resolve(), root=root.resolve(), model=client,
        endpoint=_endpoint_of(source),
    )  # fmt: skip
    try:
        server = build_server(settings)
        if not http:
            server.run()  # stdio: the client owns stdin/stdout
        else:
            import uvicorn

            from kimmy_swarm.cli.mcp_server import bearer_guard

            app = server.streamable_http_app()
            typer.echo(f"kimmy mcp: serving http://{host}:{port}/mcp", err=True)
            uvicorn.run(bearer_guard(app, key) if key else app, host=host, port=port,
                        log_level="warning")  # fmt: skip
    finally:
        if client is not None:
            import asyncio

            asyncio.run(client.aclose())


def _http_key(api_key_file: Path | None) -> str | None:
    """The bearer key: the file's first line, else KIMMY_MCP_API_KEY; None: no key."""
    import os

    if api_key_file is None:
        return os.environ.get("KIMMY_MCP_API_KEY") or None
    return key_from_file(api_key_file)
