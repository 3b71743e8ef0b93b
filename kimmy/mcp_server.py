"""`kimmy mcp`: the swarm as an MCP server, for MCP clients (Claude Desktop, IDE agents,
other frameworks) to hand it goals.

Tools: `swarm(goal, corpus?, data?)`, `review(corpus, topic)`, `analyze(datasets,
questions?)` run a swarm to its end and answer with its answer and files (progress
notifications follow the run's sub-agents: finished of spawned); `runs`, `show_run` and
`resume` read and continue the stored runs. Each run's files are resources:
`kimmy://runs/{run_id}/files/{name}`.

Every path a client gives (a corpus, a data file, an output folder) must lie inside the
server's root (`--root`, default the working directory), and a run's files are read only
from its own output folder. Runs are stored in the server's runs folder, so `kimmy show`,
`kimmy resume` and the dashboard see them as any run. The model is the server's (`--local`,
`--base-url`), the same for every run; offline without one.

The SDK (`mcp`, the `mcp` extra) is imported with this module: only `kimmy mcp` imports it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from kimmy_swarm.swarm.errors import UserError

if TYPE_CHECKING:
    from kimmy_swarm.swarm.events import Event
    from kimmy_swarm.swarm.llm.endpoint import ModelEndpoint
    from kimmy_swarm.swarm.llm.protocol import ChatModel

#: A run's file is served up to this size (a report with plots can be a few MB).
MAX_FILE_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class McpServerSettings:
    """What the server runs with.

    Attributes:
        runs_dir: where its runs are stored.
        root: every path a client gives must lie inside it.
        model: the model every run uses (None: offline).
        endpoint: how the runs reached it, stored with them (so `kimmy resume` finds it).
        out_dir: where a run's files go when the client names no folder
            (`out_dir / RUN-KIND-N`).
    """

    runs_dir: Path
    root: Path
    model: ChatModel | None = None
    endpoint: ModelEndpoint | None = None
    out_dir: Path | None = None


class _Progress:
    """An event sink that tells the client, from the run's thread, how many sub-agents have
    finished of those spawned (`notifications/progress`)."""

    def __init__(self, ctx: Context, loop: asyncio.AbstractEventLoop) -> None:
        self.ctx, self.loop = ctx, loop
        self.spawned = self.finished = 0

    def handle(self, event: Event) -> None:
        kind = getattr(event, "type", "")
        if kind == "run_started":
            self.spawned = max(self.spawned, int(getattr(event, "n_subtasks", 0)))
        elif kind == "subtasks_spawned":
            self.spawned += len(getattr(event, "subtasks", ()))
        elif kind == "subtask_finished":
            self.finished += 1
        else:
            return
        total = max(self.spawned, self.finished)
        message = f"{self.finished} of {total} sub-agents finished"
        asyncio.run_coroutine_threadsafe(
            self.ctx.report_progress(self.finished, total, message), self.loop
        )


class KimmyMcp:
    """The server's tools, bound to its settings (`build_server` registers them)."""

    def __init__(self, settings: McpServerSettings) -> None:
        self.settings = settings
        self.root = settings.root.expanduser().resolve()
        self._runs = 0

    # --- paths ----------------------------------------------------------------------------

    def inside(self, given: str, what: str) -> Path:
        """`given` as a path inside the root (relative ones are read from the root).

        Raises:
            UserError: it points outside the root.
        """
        path = Path(given).expanduser()
        path = (path if path.is_absolute() else self.root / path).resolve()
        if path != self.root and self.root not in path.parents:
            raise UserError(f"{what} {given!r} is outside the server's root {str(self.root)!r}")
        return path

    def _out(self, out: str | None, kind: str) -> Path:
        if out is not None:
            return self.inside(out, "out")
        self._runs += 1
        base = self.settings.out_dir or self.root / "kimmy-mcp-out"
        stamp = f"{kind}-{self._runs}"
        while (base / stamp).exists():
            self._runs += 1
            stamp = f"{kind}-{self._runs}"
        return base / stamp

    # --- runs -----------------------------------------------------------------------------

    async def _in_thread(self, ctx: Context, work: Callable[[Sequence[_Progress]], Any]) -> Any:
        import anyio

        sinks = [_Progress(ctx, asyncio.get_running_loop())]
        return await anyio.to_thread.run_sync(lambda: work(sinks))

    async def swarm(
        self, ctx: Context, goal: str, corpus: str | None = None, data: list[str] | None = None,
        out: str | None = None,
    ) -> str:  # fmt: skip
        from kimmy_swarm.agents.orchestrator import SolveConfig, run_solve

        config = SolveConfig(
            goal=goal, out=self._out(out, "swarm"),
            corpus=self.inside(corpus, "corpus") if corpus else None,
            datasets=tuple(self._dataset(d) for d in data or ()),
            model=self.settings.model, runs_dir=self.settings.runs_dir,
        )  # fmt: skip
        outcome = await self._in_thread(
            ctx, lambda sinks: run_solve(config, sinks=sinks, endpoint=self.settings.endpoint)
        )
        return _told(outcome.run_id, outcome.status, outcome.answer, outcome.paths)

    async def review(
        self, ctx: Context, corpus: str, topic: str, max_papers: int = 50, out: str | None = None
    ) -> str:
        from kimmy_swarm.agents.review import ReviewConfig, run_review

        config = ReviewConfig(
            corpus=self.inside(corpus, "corpus"), topic=topic, out=self._out(out, "review"),
            max_papers=max_papers, model=self.settings.model, runs_dir=self.settings.runs_dir,
        )  # fmt: skip
        outcome = await self._in_thread(
            ctx, lambda sinks: run_review(config, sinks=sinks, endpoint=self.settings.endpoint)
        )
        paths = outcome.files.paths
        answer = paths["review.md"].read_text(encoding="utf-8") if "review.md" in paths else ""
        return _told(outcome.run_id, outcome.status, answer, paths)

    async def analyze(
        self, ctx: Context, datasets: list[str], questions: list[str] | None = None,
        out: str | None = None,
    ) -> str:  # fmt: skip
        from kimmy_swarm.agents.analysis import AnalysisConfig, run_analysis

        config = AnalysisConfig(
            datasets=[self._dataset(d) for d in datasets], questions=list(questions or ()),
            out=self._out(out, "analysis"), root=self.root, model=self.settings.model,
            runs_dir=self.settings.runs_dir,
        )  # fmt: skip
        outcome = await self._in_thread(
            ctx, lambda sinks: run_analysis(config, sinks=sinks, endpoint=self.settings.endpoint)
        )
        report = outcome.paths.get("report.md")
        answer = report.read_text(encoding="utf-8") if report is not None else ""
        return _told(outcome.run_id, outcome.status, answer, outcome.paths)

    def _dataset(self, name: str) -> str:
        """A bundled dataset's name as it is; a file's path, inside the root."""
        if ":" in name and not Path(name).exists():
            return name  # statsmodels:fair, sklearn:iris
        return str(self.inside(name, "dataset"))

    def runs(self, limit: int = 20) -> str:
        from kimmy_swarm.swarm.store import DB_NAME, RunStore

        if not (self.settings.runs_dir / DB_NAME).is_file():
            return "[]"
        with RunStore(self.settings.runs_dir, create=False) as store:
            found = store.list_runs(limit)
        return json.dumps([
            {"run_id": r.run_id, "status": r.status.value, "goal": r.goal,
             "done": r.n_done, "subtasks": r.n_subtasks, "created_at": r.created_at}
            for r in found
        ])  # fmt: skip

    def show_run(self, run_id: str, subtask: str | None = None) -> str:
        from kimmy_swarm.swarm.store import RunStore

        with RunStore(self.settings.runs_dir, create=False) as store:
            stored = store.load_run(run_id)
        results = stored.results
        if subtask is not None:
            if subtask not in results:
                raise UserError(f"run {stored.run_id} has no finished subtask {subtask!r}")
            output = results[subtask].output
            return output if isinstance(output, str) else json.dumps(output)
        statuses: dict[str, int] = {}
        for result in results.values():
            statuses[result.status.value] = statuses.get(result.status.value, 0) + 1
        return json.dumps({
            "run_id": stored.run_id, "status": stored.status.value, "goal": stored.plan.goal,
            "subtasks": len(stored.plan.subtasks), "results": statuses,
            "stop_reason": stored.stop_reason, "files": _files(_out_dir(stored.settings)),
        })  # fmt: skip

    async def resume(self, ctx: Context, run_id: str) -> str:
        from kimmy_swarm.agents.pipeline_record import record_kind
        from kimmy_swarm.swarm.store import RunStore

        with RunStore(self.settings.runs_dir, create=False) as store:
            stored = store.load_run(run_id)
        kind = record_kind(stored.settings)
        if kind not in ("solve", "review", "analysis"):
            raise UserError(f"run {stored.run_id} is not a swarm, review or analysis run")
        runs_dir, model = self.settings.runs_dir, self.settings.model

        def work(sinks: Sequence[_Progress]) -> Any:
            if kind == "solve":
                from kimmy_swarm.agents.orchestrator import resume_solve

                return resume_solve(stored.run_id, runs_dir=runs_dir, model=model, sinks=sinks)
            if kind == "review":
                from kimmy_swarm.agents.review import resume_review

                return resume_review(stored.run_id, runs_dir=runs_dir, model=model, sinks=sinks)
            from kimmy_swarm.agents.analysis import resume_analysis

            return resume_analysis(stored.run_id, runs_dir=runs_dir, model=model, sinks=sinks)

        outcome = await self._in_thread(ctx, work)
        paths = outcome.files.paths if kind == "review" else outcome.paths
        return _told(outcome.run_id, outcome.status, getattr(outcome, "answer", ""), paths)

    # --- files ----------------------------------------------------------------------------

    def read_file(self, run_id: str, name: str) -> str:
        from kimmy_swarm.swarm.store import RunStore

        with RunStore(self.settings.runs_dir, create=False) as store:
            stored = store.load_run(run_id)
        out = _out_dir(stored.settings)
        if out is None:
            raise UserError(f"run {stored.run_id} has no files")
        path = (out / name).resolve()
        if path.parent != out or not path.is_file():
            have = ", ".join(_files(out)) or "(none)"
            raise UserError(f"run {run_id} has no file {name!r}; its files: {have}")
        if path.stat().st_size > MAX_FILE_BYTES:
            raise UserError(f"{name} is larger than {MAX_FILE_BYTES:,} bytes: read it from {path}")
        return path.read_text(encoding="utf-8", errors="replace")


def _out_dir(settings: Mapping[str, Any]) -> Path | None:
    """The output folder a run's stored settings name (plain data: any pipeline's)."""
    from kimmy_swarm.agents.pipeline_record import PIPELINE_KEY

    record = settings.get(PIPELINE_KEY)
    out = record.get("settings", {}).get("out") if isinstance(record, dict) else None
    return Path(out).expanduser().resolve() if isinstance(out, str) and out else None


def _files(out: Path | None) -> list[str]:
    """The names of the files in a run's output folder, sorted."""
    if out is None or not out.is_dir():
        return []
    return sorted(p.name for p in out.iterdir() if p.is_file())


@contextlib.contextmanager
def _as_tool_error() -> Iterator[None]:
    """A user error (a bad path, an unknown run) as the MCP tool error its client is shown
    (the SDK shows other exceptions as "Error executing tool")."""
    try:
        yield
    except UserError as exc:
        raise ToolError(str(exc)) from None


def bearer_guard(app: Any, key: str) -> Any:
    """`app` (ASGI) answering only HTTP requests that carry `Authorization: Bearer <key>`;
    any other gets 401 (compared in constant time; lifespan events pass through)."""
    import hmac

    expected = f"Bearer {key}".encode()
    refusal = json.dumps(
        {"error": "send 'Authorization: Bearer <key>' with this server's key"}
    ).encode()

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") == "http":
            given = dict(scope.get("headers") or ()).get(b"authorization", b"")
            if not hmac.compare_digest(given, expected):
                await send({"type": "http.response.start", "status": 401, "headers": [
                    (b"content-type", b"application/json"), (b"www-authenticate", b"Bearer"),
                ]})  # fmt: skip
                await send({"type": "http.response.body", "body": refusal})
                return
        await app(scope, receive, send)

    return guarded


def _told(run_id: str, status: str, answer: str, paths: dict[str, Path]) -> str:
    files = ", ".join(f"kimmy://runs/{run_id}/files/{Path(p).name}" for p in paths.values())
    return f"run {run_id}: {status}\n\n{answer}\n\nfiles: {files or '(none)'}"


def build_server(settings: McpServerSettings) -> MCPServer:
    """The MCP server of `kimmy mcp` (the `mcp` extra)."""
    from kimmy_swarm.swarm import __version__

    kimmy = KimmyMcp(settings)
    server = MCPServer("kimmy-swarm", version=__version__)

    @server.tool()
    async def swarm(
        goal: str, ctx: Context, corpus: str | None = None, data: list[str] | None = None,
        out: str | None = None,
    ) -> str:  # fmt: skip
        """Give the swarm a goal in words: an orchestrator splits it into sub-agents that run
        in parallel over the corpus (a folder of .md/.txt/.pdf, or a .bib/.jsonl/.json file)
        and the datasets (CSV/Parquet paths, or bundled names like statsmodels:fair), then
        answers. Paths are relative to the server's root."""
        with _as_tool_error():
            return await kimmy.swarm(ctx, goal, corpus, data, out)

    @server.tool()
    async def review(
        corpus: str, topic: str, ctx: Context, max_papers: int = 50, out: str | None = None
    ) -> str:
        """A literature review of a corpus on a topic: themes, claims checked against the
        papers, references (review.md, references.bib, report.html)."""
        with _as_tool_error():
            return await kimmy.review(ctx, corpus, topic, max_papers, out)

    @server.tool()
    async def analyze(
        datasets: list[str], ctx: Context, questions: list[str] | None = None,
        out: str | None = None,
    ) -> str:  # fmt: skip
        """Batch data analysis: one analyst per dataset and question, all in parallel, each
        number checked by recomputation (report.md, report.html)."""
        with _as_tool_error():
            return await kimmy.analyze(ctx, datasets, questions, out)

    @server.tool()
    def runs(limit: int = 20) -> str:
        """The stored runs, newest first: id, status, goal, subtasks done."""
        return kimmy.runs(limit)

    @server.tool()
    def show_run(run_id: str, subtask: str | None = None) -> str:
        """A stored run (an id, a unique prefix, or 'latest'): status, counts, files; with
        `subtask`, that subtask's output."""
        with _as_tool_error():
            return kimmy.show_run(run_id, subtask)

    @server.tool()
    async def resume(run_id: str, ctx: Context) -> str:
        """Continue a stored run that stopped (finished sub-agents are not run again)."""
        with _as_tool_error():
            return await kimmy.resume(ctx, run_id)

    @server.resource("kimmy://runs/{run_id}/files/{name}", mime_type="text/plain")
    def run_file(run_id: str, name: str) -> str:
        """A file a run wrote (answer.md, review.md, report.md, references.bib, …)."""
        return kimmy.read_file(run_id, name)

    return server


__all__ = ["MAX_FILE_BYTES", "KimmyMcp", "McpServerSettings", "bearer_guard", "build_server"]
