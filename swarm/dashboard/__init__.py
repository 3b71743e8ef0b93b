"""`kimmy dashboard`: a live web view of the run store.

The server (FastAPI, the `dashboard` extra) reads the store the swarm writes, folds its
event batches into a per-run view (`state`), lays the graph out with networkx (`layout`),
streams what changes as server-sent events (`live`, `app`), and serves a page that draws
SVG where it is told (`static/`). `import kimmy_swarm.swarm` never imports this package.
"""

from kimmy_swarm.swarm.dashboard.app import create_app
from kimmy_swarm.swarm.dashboard.hosts import HostGuard, allowed_hosts
from kimmy_swarm.swarm.dashboard.layout import MAX_NODES, layout_run
from kimmy_swarm.swarm.dashboard.live import LiveRuns
from kimmy_swarm.swarm.dashboard.server import BackgroundServer, bind, serve
from kimmy_swarm.swarm.dashboard.state import RunView

__all__ = [
    "MAX_NODES",
    "BackgroundServer",
    "HostGuard",
    "LiveRuns",
    "RunView",
    "allowed_hosts",
    "bind",
    "create_app",
    "layout_run",
    "serve",
]
