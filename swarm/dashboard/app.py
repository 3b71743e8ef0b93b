"""The dashboard's HTTP API and page: `create_app(runs_dir)` is a FastAPI app.

Routes:
    GET /                                   the page (static/index.html)
    GET /static/{name}                      its script and style (only the package's files)
    GET /api/runs                           the stored runs, newest first
    GET /api/runs/{run}                     one run: goal, status, settings, counters
    GET /api/runs/{run}/graph               the laid-out graph (`layout.py`), statuses of now
    GET /api/runs/{run}/stream              server-sent events: what changed (`live.py`)
    GET /api/runs/{run}/agents              find sub-agents (?q=ID-PART&status=&group=&limit=)
    GET /api/runs/{run}/agents/{subtask}    a node's state and its sub-agent's transcript
    GET /api/runs/{run}/agents/{subtask}/live   what its model is writing now (streamed runs)
    GET /api/runs/{run}/rewards             the rewards of a finished run (when scored)
    GET /api/runs/{run}/approvals           the calls that asked a person (`swarm.approvals`)
    POST /api/runs/{run}/approvals/{call}/approve   body {"arguments"?: {…}, "reason"?: …}
    POST /api/runs/{run}/approvals/{call}/deny      body {"reason": …}

Only requests to a loopback host or an allowed one are answered (`hosts.HostGuard`: DNS
rebinding). An answer to a waiting call (POST) also needs the page's session token in the
`X-Kimmy-Token` header (a new one each time the dashboard starts; the page carries it) and
must come from this machine (127.0.0.1 / ::1), whatever address the dashboard is bound to.
Run and subtask ids from the URL are only ever looked up in the store (an unknown
one is a 404 naming it), never used as paths. Static files come from a fixed list read from the
package folder at start.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import threading
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path
from typing import Annotated, Any

from fastapi import FastAPI, HTTPException, Query, Request
from fastapi.responses import FileResponse, HTMLResponse, StreamingResponse
from pydantic import BaseModel, Field

from kimmy_swarm.swarm.approval_records import ApprovalError, Decision
from kimmy_swarm.swarm.dashboard.hosts import HostGuard, is_loopback
from kimmy_swarm.swarm.dashboard.live import LiveRuns
from kimmy_swarm.swarm.errors import RunNotFoundError, UserError
from kimmy_swarm.swarm.live_tokens import read_live, watch_live
from kimmy_swarm.swarm.schema import SubtaskStatus
from kimmy_swarm.swarm.store import RunStore
from kimmy_swarm.swarm.transcripts import read_transcript

STATIC_DIR = Path(__file__).parent / "static"
_MEDIA = {".html": "text/html", ".js": "text/javascript", ".css": "text/css"}
#: Seconds between two polls of the store by a stream.
POLL_S = 0.5
#: Polls without news after which a stream sends a comment (finds closed connections).
_KEEPALIVE_POLLS = 20

#: Scores a finished run: its id → a JSON-able dict of rewards (None: nothing to show).
RewardsFn = Callable[[str], dict[str, Any] | None]


def _not_found(what: str) -> HTTPException:
    return HTTPException(status_code=404, detail=what)


class _Rewards:
    """Rewards of finished runs, each scored once; a scoring error becomes its text."""

    def __init__(self, fn: RewardsFn | None) -> None:
        self.fn = fn
        self._cache: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def get(self, run_id: str, finished: bool) -> dict[str, Any]:
        if self.fn is None:
            return {"available": False, "reason": "no scorer configured", "rewards": None}
        if not finished:
            return {"available": False, "reason": "the run has not finished", "rewards": None}
        with self._lock:
            if run_id not in self._cache:
                try:
                    scored = self.fn(run_id)
                    entry = {"available": scored is not None, "rewards": scored}
                    if scored is None:
                        entry["reason"] = "no rewards for this run"
                except Exception as exc:  # noqa: BLE001 - shown on the page, never a 500
                    entry = {
                        "available": False,
                        "rewards": None,
                        "error": f"{type(exc).__name__}: {exc}",
                    }
                self._cache[run_id] = entry
            return self._cache[run_id]


#: The header that carries the page's session token on a POST.
TOKEN_HEADER = "X-Kimmy-Token"


class _Approve(BaseModel):
    arguments: dict[str, Any] | None = None
    reason: str | None = None


class _Deny(BaseModel):
    reason: str = Field(min_length=1)


def _page_routes(app: FastAPI, token: str) -> None:
    """`/` and `/static/{name}`: the page (carrying the session token), its script and
    style (a fixed list of files)."""
    static = {p.name: p for p in STATIC_DIR.iterdir() if p.suffix in _MEDIA}
    page = static["index.html"].read_text(encoding="utf-8").replace("{{token}}", token)

    @app.get("/", include_in_schema=False)
    def index() -> HTMLResponse:
        return HTMLResponse(page, headers={"Cache-Control": "no-store"})

    @app.get("/static/{name}", include_in_schema=False)
    def static_file(name: str) -> FileResponse:
        path = static.get(name)
        if path is None:
            raise _not_found(f"no static file {name!r}")
        return FileResponse(path, media_type=_MEDIA[path.suffix])


def _approval_routes(
    app: FastAPI, store: RunStore, token: str, run_id_of: Callable[[str], str]
) -> None:
    """The calls waiting for a person: listed, and answered from this machine's page."""

    @app.get("/api/runs/{run}/approvals")
    def approvals(run: str) -> list[dict[str, Any]]:
        return [a.as_json() for a in store.approvals(run_id_of(run))]

    def answer(request: Request, run: str, call: str, decision: Decision) -> dict[str, Any]:
        client = request.client.host if request.client is not None else ""
        if not is_loopback(client):
            raise HTTPException(403, f"calls are answered from this machine only, not {client}")
        if not secrets.compare_digest(request.headers.get(TOKEN_HEADER, ""), token):
            raise HTTPException(403, f"missing or wrong {TOKEN_HEADER}: reload the page")
        try:
            return store.decide(run_id_of(run), call, decision).as_json()
        except ApprovalError as exc:
            raise HTTPException(409, str(exc)) from None

    @app.post("/api/runs/{run}/approvals/{call}/approve")
    def approve(run: str, call: str, body: _Approve, request: Request) -> dict[str, Any]:
        return answer(request, run, call, Decision("approve", body.arguments, body.reason,
                                                   "dashboard"))  # fmt: skip

    @app.post("/api/runs/{run}/approvals/{call}/deny")
    def deny(run: str, call: str, body: _Deny, request: Request) -> dict[str, Any]:
        return answer(request, run, call, Decision("deny", None, body.reason, "dashboard"))


def _live_route(
    app: FastAPI,
    runs_dir: Path,
    run_id_of: Callable[[str], str],
    node_of: Callable[[str, str], dict[str, Any]],
) -> None:
    """What a running sub-agent's model is writing now (`swarm.live_tokens`)."""

    @app.get("/api/runs/{run}/agents/{subtask}/live")
    def agent_live(run: str, subtask: str) -> dict[str, Any]:
        run_id = run_id_of(run)
        status = node_of(run_id, subtask)["status"]
        if status == "running":  # the run writes what it writes for us from now
            watch_live(runs_dir, run_id, subtask)
        return {"status": status, "text": read_live(runs_dir, run_id, subtask)}


def create_app(
    runs_dir: str | Path,
    *,
    rewards: RewardsFn | None = None,
    max_nodes: int | None = None,
    poll_s: float = POLL_S,
    allowed_hosts: Iterable[str] = (),
) -> FastAPI:
    """The dashboard of the runs stored in `runs_dir`.

    Args:
        runs_dir: the run store's directory (it must hold a store).
        rewards: scores a finished run (the CLI passes the PARL scorer); None: no rewards.
        max_nodes: graphs above this many nodes are drawn by (stage, role) group.
        poll_s: seconds between two polls of the store by a live stream.
        allowed_hosts: hosts answered beside the loopback ones (`hosts.allowed_hosts`).

    Raises:
        ConfigError: `runs_dir` holds no run store.
    """
    store = RunStore(runs_dir, create=False)
    live = LiveRuns(store) if max_nodes is None else LiveRuns(store, max_nodes=max_nodes)
    scores = _Rewards(rewards)
    app = FastAPI(title="Kimmy Swarm dashboard", docs_url=None, redoc_url=None)
    app.state.live = live
    app.state.token = token = secrets.token_urlsafe(24)
    app.add_middleware(HostGuard, allowed=tuple(allowed_hosts))
    _page_routes(app, token)

    def run_id_of(run: str) -> str:
        try:
            return live.resolve(run)
        except RunNotFoundError as exc:
            raise _not_found(str(exc)) from None

    @app.get("/api/runs")
    def runs() -> list[dict[str, Any]]:
        return [
            {
                "run_id": r.run_id,
                "goal": r.goal,
                "status": r.status.value,
                "interrupted": r.interrupted,
                "created_at": r.created_at,
                "updated_at": r.updated_at,
                "n_subtasks": r.n_subtasks,
                "n_done": r.n_done,
                "stop_reason": r.stop_reason,
            }
            for r in store.list_runs()
        ]

    @app.get("/api/runs/{run}")
    def run(run: str) -> dict[str, Any]:
        run_id = run_id_of(run)
        record = store.run_record(run_id)
        record.pop("plan")
        view = live.refresh(run_id)
        return {**record, "counters": view.counters()}

    @app.get("/api/runs/{run}/graph")
    def graph(run: str) -> dict[str, Any]:
        return live.graph(run_id_of(run))

    @app.get("/api/runs/{run}/agents")
    def agents(
        run: str,
        q: str = "",
        status: SubtaskStatus | None = None,  # another value: a 422 listing the allowed
        group: str | None = None,
        limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    ) -> dict[str, Any]:
        """Find sub-agents: by id (`q`), status, drawn group; running (longest) first."""
        run_id = run_id_of(run)
        wanted = status.value if status is not None else None
        try:
            return live.agents(run_id, query=q, status=wanted, group=group, limit=limit)
        except KeyError:
            raise _not_found(f"run {run_id} has no group {group!r} in its graph") from None

    def node_of(run_id: str, subtask: str) -> dict[str, Any]:
        try:
            return live.node(run_id, subtask)
        except KeyError:
            raise _not_found(f"run {run_id} has no sub-agent {subtask!r}") from None

    @app.get("/api/runs/{run}/agents/{subtask}")
    def agent(run: str, subtask: str) -> dict[str, Any]:
        run_id = run_id_of(run)
        node = node_of(run_id, subtask)
        # a turn of an orchestrator shows the orchestrator's conversation
        owner = node["parent"] if node["kind"] == "turn" else subtask
        try:
            transcript = read_transcript(store, run_id, owner).model_dump(mode="json")
        except UserError as exc:
            raise _not_found(str(exc)) from None
        return {"node": node, "transcript": transcript}

    _live_route(app, store.runs_dir, run_id_of, node_of)

    @app.get("/api/runs/{run}/rewards")
    def run_rewards(run: str) -> dict[str, Any]:
        run_id = run_id_of(run)
        return scores.get(run_id, live.refresh(run_id).finished)

    _approval_routes(app, store, token, run_id_of)

    @app.get("/api/runs/{run}/stream")
    async def stream(run: str, request: Request, since: int = -1, layout: str = "") -> Any:
        run_id = await asyncio.to_thread(run_id_of, run)
        return StreamingResponse(
            _events(live, run_id, request, since, layout, poll_s),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    return app


async def _events(
    live: LiveRuns, run_id: str, request: Request, cursor: int, drawn: str, poll_s: float
) -> AsyncIterator[str]:
    """The stream of one page: a `delta` event whenever the store has news (the first at
    once), `end` after the one that shows the run finished."""
    quiet = 0
    first = True
    while not await request.is_disconnected():
        delta = await asyncio.to_thread(live.delta, run_id, cursor, drawn)
        news = delta["seq"] != cursor or delta["relayout"]
        if first or news:
            first, quiet = False, 0
            cursor = delta["seq"]
            yield f"event: delta\ndata: {json.dumps(delta)}\n\n"
            drawn = delta["layout_key"]  # on `relayout` the page fetches this one
            if delta["status"] != "running":
                yield "event: end\ndata: {}\n\n"
                return
        else:
            quiet += 1
            if quiet >= _KEEPALIVE_POLLS:
                quiet = 0
                yield ": keep-alive\n\n"
        await asyncio.sleep(poll_s)


__all__ = ["POLL_S", "STATIC_DIR", "TOKEN_HEADER", "RewardsFn", "create_app"]
