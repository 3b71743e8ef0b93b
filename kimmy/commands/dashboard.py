"""`kimmy dashboard`: a live web view of the run store, in the browser.

    kimmy dashboard                          # http://127.0.0.1:8765, runs in .kimmy/runs
    kimmy dashboard --port 9000 --runs-dir runs

The page lists the stored runs; a run shows its DAG (orchestrator turns between the
orchestrator and what they spawned, stages, status colours, the critical path), its counters
updating live while it runs, a sub-agent's conversation on click, and, once it finished, its
PARL rewards (scored as `kimmy rewards RUN` scores them). It binds to loopback unless
`--host` says otherwise, and answers only requests naming a loopback host, the `--host`
address or an `--allowed-host` (DNS rebinding: `swarm.dashboard.hosts`). The server is the
`dashboard` extra (FastAPI, uvicorn).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Annotated, Any

import typer

from kimmy_swarm.cli.options import DEFAULT_RUNS_DIR, RunsDir, command_group

app = command_group()

INSTALL_HINT = "pip install 'kimmy-swarm[dashboard]'"


def run_rewards(runs_dir: Path) -> Any:
    """The scorer the dashboard shows for a finished run: `kimmy rewards RUN` at its
    default settings (step 0, linear schedule over 1,000 steps, width 64)."""
    from kimmy_swarm.agents.graders import score_stored_run

    def score(run_id: str) -> dict[str, Any]:
        scored = score_stored_run(run_id, runs_dir)
        return {**scored.breakdown.to_dict(), "grader_parts": scored.parts}

    return score


@app.command("dashboard")
def dashboard_cmd(
    port: Annotated[int, typer.Option(help="Port (0: a free one).", min=0, max=65535)] = 8765,
    host: Annotated[
        str, typer.Option(help="Address to bind (loopback unless you mean to share it).")
    ] = "127.0.0.1",
    runs_dir: RunsDir = DEFAULT_RUNS_DIR,
    allowed_host: Annotated[
        list[str] | None,
        typer.Option(
            help="A host name the page may be reached by beside loopback ones and --host "
            "(repeatable; e.g. the name of this machine on your network)."
        ),
    ] = None,
) -> None:
    """Serve a live web dashboard of the stored runs (DAG, counters, transcripts, rewards)."""
    # a folder that holds no run store is one error line (exit 2): create_app's ConfigError
    if importlib.util.find_spec("fastapi") is None or importlib.util.find_spec("uvicorn") is None:
        print(f"kimmy dashboard needs the dashboard extra: {INSTALL_HINT}")
        raise typer.Exit(2)
    from kimmy_swarm.swarm.dashboard import allowed_hosts, bind, create_app, serve

    hosts = allowed_hosts(host, allowed_host or ())
    server = create_app(runs_dir, rewards=run_rewards(runs_dir), allowed_hosts=hosts)
    sock = bind(host, port)  # a port in use is one error line (exit 2), before any output
    shown = f"[{host}]" if ":" in host else host
    bound = sock.getsockname()[1]  # the free one, for --port 0
    typer.echo(f"kimmy: dashboard of {runs_dir} at http://{shown}:{bound}/ (Ctrl-C stops it)")
    serve(server, sock)
