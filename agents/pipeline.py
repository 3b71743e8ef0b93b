"""The `Pipeline` protocol, and the one way a pipeline run is carried out: `run_pipeline`,
`resume_pipeline`.

A pipeline (the literature review, the batch analysis, the wide search, or your own) is an
object with a `name` and these parts:

- a run of its own: `Settings` (its config as stored with the run: a `PipelineSettings`),
  `configure` (a stored run's config again), `load` (what it works on, as `RunResources`),
  `install(..., config=config)` (its roles; its planner spawns the rest), `plan` (the first
  subtasks), `restore` (state a resume rebuilds) and `write_outputs` (its files);
- the orchestrator's use of it (`agents.orchestrator`): `load_inputs` (what it adds to the
  resources of a goal), `install(..., planner="planner")` (its roles; the orchestrator
  assigns the tasks), `offline_rules` (the rule set that plans a goal without a model) and
  `write_outputs` (its files, from a run the orchestrator planned by its rules);
- `grader(traj)`: its grader of a stored run it made, if any.

Subclass `Pipeline` to inherit the defaults of the optional parts, and register the
pipeline (`agents.pipelines.register_pipeline`) so that the orchestrator and the graders
find it. `run_pipeline` runs any pipeline the same way: resources loaded, roles installed,
the run stored with a `PipelineRecord` (settings and model endpoint), the files written.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar, runtime_checkable

from kimmy_swarm.agents.pipeline_record import (
    PIPELINE_KEY,
    PipelineRecord,
    PipelineSettings,
    parse_record,
    record_kind,
    stored_settings,
)
from kimmy_swarm.agents.toolbox import ToolBox
from kimmy_swarm.agents.tools.mcp import McpHost
from kimmy_swarm.agents.tracking import RoleConcurrency, SpawnRefusals
from kimmy_swarm.swarm.errors import ConfigError, FilesNotWrittenError
from kimmy_swarm.swarm.llm.endpoint import ModelEndpoint
from kimmy_swarm.swarm.schema import RunResult, RunStatus

if TYPE_CHECKING:
    from kimmy_swarm.agents.loop import Call
    from kimmy_swarm.agents.tools.corpus import Corpus
    from kimmy_swarm.agents.tools.mcp import McpConfig
    from kimmy_swarm.agents.tools.search import SearchIndex
    from kimmy_swarm.rewards.graders import PipelineGrader
    from kimmy_swarm.rewards.trajectory import Trajectory
    from kimmy_swarm.swarm import EventSink, RunConfig, Swarm
    from kimmy_swarm.swarm.context import SubtaskContext
    from kimmy_swarm.swarm.llm.protocol import ChatModel
    from kimmy_swarm.swarm.schema import Plan, Subtask, SubtaskResult
    from kimmy_swarm.swarm.store import StoredRun


class PipelineConfig(Protocol):
    """What `run_pipeline` reads of a pipeline's config (`ReviewConfig`, `AnalysisConfig`,
    `SolveConfig`, …): the model, where the run is stored, its sizes, its files' folder and
    its settings as stored. A config may also have `mcp` (an `McpConfig`): the MCP servers
    whose tools join the run's (`agents.tools.mcp`), `approvals` (an `ApprovalPolicy`):
    which calls wait for a person (`swarm.approvals`), and `stream`: the model calls stream
    their answers (`RunConfig.stream`)."""

    @property
    def model(self) -> ChatModel | None: ...

    @property
    def runs_dir(self) -> Path | None: ...

    @property
    def out(self) -> Path: ...

    @property
    def threads(self) -> int: ...

    @property
    def max_concurrency(self) -> int: ...

    def settings(self) -> PipelineSettings: ...


@dataclass
class PipelineFiles:
    """What a pipeline wrote: its files by name (a pipeline's own type may add counts)."""

    paths: dict[str, Path]


@dataclass(frozen=True)
class RunInputs:
    """What the orchestrator is given to work on; each pipeline's `load_inputs` takes its part.

    Attributes:
        corpus: a folder of documents or a .bib/.jsonl/.json file (None: no corpus).
        datasets: dataset names or paths.
        out: the run's output folder (a pipeline's own files go to `out / name`).
        defaults: metadata for corpus records that lack it.
        root: file datasets must lie inside it (None: the working directory).
        python: sub-agents may run Python (a model run; `run_python`).
    """

    out: Path
    corpus: Path | None = None
    datasets: tuple[str, ...] = ()
    defaults: Mapping[str, Any] | None = None
    root: Path | None = None
    python: bool = False


@dataclass
class RunResources:
    """What a run works on, loaded once: the corpus, the datasets, the tools sub-agents may
    use on them, and each pipeline's own loaded state (by pipeline name)."""

    tools: ToolBox = field(default_factory=ToolBox)
    corpus: Corpus | None = None
    #: The datasets that loaded (names or paths).
    datasets: tuple[str, ...] = ()
    state: dict[str, Any] = field(default_factory=dict)
    _index: SearchIndex | None = field(default=None, repr=False)

    def search_index(self) -> SearchIndex:
        """The corpus's BM25 index, built once (shared by the tools and the orchestrator).

        Raises:
            ValueError: the run has no corpus.
        """
        if self.corpus is None:
            raise ValueError("this run has no corpus to index")
        if self._index is None:
            from kimmy_swarm.agents.tools.search import SearchIndex

            self._index = SearchIndex(self.corpus.documents)
        return self._index

    def add_tools(self, tools: ToolBox) -> None:
        """Add the tools not already here (a tool name means one tool)."""
        for name, tool in tools.items():
            if name not in self.tools:
                self.tools.add(tool)


class TaskLedger(Protocol):
    """The tasks the orchestrator assigned so far, by id."""

    @property
    def tasks(self) -> Mapping[str, Any]: ...


class Orchestration(Protocol):
    """What offline rules see of the orchestration (the orchestrator's `Actions`)."""

    @property
    def state(self) -> TaskLedger: ...

    @property
    def seen(self) -> Mapping[str, SubtaskResult]: ...

    async def result_of(self, key: str) -> SubtaskResult | None: ...


class Rules(Protocol):
    """A pipeline's offline plan of a goal: each orchestrator turn's tool calls
    (`(tool name, arguments)`), from what the orchestration has done so far."""

    async def calls(self, ctx: SubtaskContext, progress: Orchestration) -> list[Call]: ...


C = TypeVar("C", bound=PipelineConfig)
W = TypeVar("W", bound=PipelineFiles)


#: A model-mode sub-agent's limit per attempt (the runtime's default is 600 s). Each of its
#: model calls has a limit of its own (adaptive over HTTP, `swarm.llm.call_timeout`; in
#: process, the engine's progress, `LocalModel`), so this one only stops a sub-agent that
#: never ends: a 1.5B model's researcher on a busy 2-core machine ran past 600 s while its
#: answer was still being written (a GAN review lost a paper so).
MODEL_SUBTASK_TIMEOUT_S = 3600.0

#: What the orchestrator plans without a model, and how to give it one for anything else
#: (the end of every offline refusal: one line).
OFFLINE_PLANS = (
    "offline, `kimmy swarm` plans a literature review ('Review <topic>' with --corpus), a "
    "data analysis (--data DATASET) or a table of the papers that meet a condition ('List "
    'every paper whose abstract mentions "dropout", with its first author and citations\' '
    "with --corpus); for any other goal give a model: --local qwen2.5-coder-1.5b (after "
    "`kimmy models install qwen2.5-coder-1.5b`), --base-url URL [--model NAME], or from "
    "Python SolveConfig(model=...)"
)


@runtime_checkable
class Pipeline(Protocol[C, W]):
    """A pipeline: see the module docstring. The methods with a body are optional."""

    name: str
    #: Its config as stored with a run; None: it runs only under the orchestrator.
    Settings: ClassVar[type[PipelineSettings] | None] = None

    def install(
        self,
        swarm: Swarm,
        resources: RunResources,
        executor: Executor,
        *,
        planner: str = "planner",
        config: C | None = None,
    ) -> dict[str, str]:
        """Register the pipeline's roles on `swarm` (its planner under `planner`); returns
        the roles the orchestrator may assign to, with a one-line charge each.

        With `config` the pipeline runs alone: its planner spawns the rest of its plan.
        Without, the orchestrator assigns the tasks and the planner only answers.
        """
        ...

    def write_outputs(
        self, resources: RunResources, result: RunResult, out: Path, *, config: C | None = None
    ) -> W:
        """Write the pipeline's files into `out` from `result` (`config`: a run of its own;
        None: a run the orchestrator planned by this pipeline's rules)."""
        ...

    def configure(self, settings: Any, **given: Any) -> C:
        """The config a stored run was made with; `given` sets the rest (model, runs_dir)."""
        raise ConfigError(f"the {self.name} pipeline runs only under the orchestrator")

    def load(self, config: C, executor: Executor) -> RunResources:
        """What a run of its own works on (read before anything runs)."""
        raise ConfigError(f"the {self.name} pipeline runs only under the orchestrator")

    def plan(self, config: C, resources: RunResources) -> Plan:
        """The first subtasks of a run of its own."""
        raise ConfigError(f"the {self.name} pipeline runs only under the orchestrator")

    def run_config(self, config: C) -> RunConfig:
        """How a run of its own executes: failures reported, never fatal; with a model, a
        subtask may take `MODEL_SUBTASK_TIMEOUT_S` (see there)."""
        from kimmy_swarm.swarm import RunConfig

        limit = {} if config.model is None else {"timeout_s": MODEL_SUBTASK_TIMEOUT_S}
        return RunConfig(max_concurrency=config.max_concurrency, failure_policy="continue", **limit)

    def restore(self, resources: RunResources, stored: StoredRun) -> None:
        """Rebuild, before a resume runs the rest, the state its finished subtasks made."""

    def load_inputs(self, inputs: RunInputs, resources: RunResources, executor: Executor) -> None:
        """Add to `resources` what this pipeline works on among an orchestrated run's inputs."""

    def offline_rules(self, goal: str, resources: RunResources) -> Rules | None:
        """The rules that plan `goal` over `resources` without a model; None: not this
        pipeline's goal."""
        return None

    def grader(self, traj: Trajectory) -> PipelineGrader | None:
        """The grader of a stored run this pipeline made; None: not one of its runs."""
        return None


@dataclass
class PipelineRun(Generic[C, W]):
    """What `run_pipeline` / `resume_pipeline` did: the config it ran with, the result, what
    it worked on, the files written, the most sub-agents of each role in flight at once, and
    how long it took."""

    config: C
    result: RunResult
    resources: RunResources
    files: W
    peak: Mapping[str, int]
    duration_s: float
    #: The messages of the spawns the swarm refused, in order (`SpawnRefusals`).
    refused: Sequence[str] = ()

    @property
    def run_id(self) -> str:
        return self.result.run_id

    @property
    def wall_s(self) -> float:
        """The run's wall time (`RunResult.wall_s`: what `kimmy show` prints too; loading
        the inputs and writing the files are not in it), else `duration_s`."""
        wall = self.result.wall_s
        return wall if wall is not None else self.duration_s


def run_pipeline(
    pipeline: Pipeline[C, W],
    config: C,
    *,
    sinks: Sequence[EventSink] = (),
    endpoint: ModelEndpoint | None = None,
    extra_settings: Mapping[str, Any] | None = None,
) -> PipelineRun[C, W]:
    """Run `pipeline` on `config` to the end and write its files.

    The run records a `PipelineRecord`: the config's settings and `endpoint` (default:
    `ModelEndpoint.of(config.model)`), so that `resume_pipeline` can continue it;
    `extra_settings` are recorded beside it.

    Raises:
        FilesNotWrittenError: the run finished but its files could not be written into
            `config.out`; it is stored as `failed` (a resume writes them).
    """
    endpoint = endpoint or ModelEndpoint.of(config.model)
    return _run(pipeline, config, sinks, endpoint, extra_settings or {}, None)


def resume_pipeline(
    pipeline: Pipeline[C, W],
    run: str | StoredRun,
    *,
    runs_dir: Path,
    model: ChatModel | None = None,
    sinks: Sequence[EventSink] = (),
    **changes: Any,
) -> PipelineRun[C, W]:
    """Continue a stored run of `pipeline`: its finished subtasks are reused, the rest runs
    with the same roles, and the files are written as an unbroken run writes them.

    Args:
        run: the run's id (unique prefix, `latest`), or the run as loaded from `runs_dir`.
        model: the model of the run (None: offline; give the one its endpoint names).
        changes: config fields to change (e.g. `max_concurrency`; `out`: the files go
            there, and the run records that folder).

    Raises:
        ConfigError: the run was not made by `pipeline`.
        RunNotFoundError: no such run.
        FilesNotWrittenError: as for `run_pipeline`.
    """
    if isinstance(run, str):
        from kimmy_swarm.swarm.store import RunStore

        with RunStore(runs_dir, create=False) as store:
            run = store.load_run(run)
    stored = run
    record = read_record(stored, pipeline)
    config = pipeline.configure(record.settings, model=model, runs_dir=runs_dir, **changes)
    return _run(pipeline, config, sinks, record.endpoint, {}, stored)


def read_record(stored: StoredRun, pipeline: Pipeline[Any, Any]) -> PipelineRecord:
    """The stored run's record, checked to be `pipeline`'s.

    Raises:
        ConfigError: the run was not made by `pipeline`, or its record is not valid.
    """
    kind = record_kind(stored.settings)
    if kind != pipeline.name or pipeline.Settings is None:
        other = f" but by the {kind} pipeline" if kind is not None else ""
        raise ConfigError(
            f"run {stored.run_id} was not made by the {pipeline.name} pipeline{other}; "
            "`kimmy resume RUN` continues any stored run"
        )
    record = parse_record(stored.settings, pipeline.Settings)
    assert record is not None  # it has a kind
    return record


def _run(
    pipeline: Pipeline[C, W],
    config: C,
    sinks: Sequence[EventSink],
    endpoint: ModelEndpoint,
    extra_settings: Mapping[str, Any],
    stored: StoredRun | None,
) -> PipelineRun[C, W]:
    from kimmy_swarm.swarm import Swarm

    t0 = time.perf_counter()
    record = PipelineRecord(settings=config.settings(), endpoint=endpoint)
    tracker, refusals = RoleConcurrency(), SpawnRefusals()
    watched = [tracker, refusals, *sinks]
    executor = ThreadPoolExecutor(config.threads, thread_name_prefix=f"kimmy-{pipeline.name}")
    mcp: McpHost | None = None
    try:
        resources = pipeline.load(config, executor)
        servers: McpConfig | None = getattr(config, "mcp", None)  # a config may have none
        if servers is not None and servers.servers:
            # started before the roles are installed: its tools are theirs to name
            mcp = McpHost(servers, log_dir=config.out / "mcp-logs").start()
            resources.add_tools(mcp.toolbox())
        run_config = pipeline.run_config(config)
        approvals = getattr(config, "approvals", None)  # a config may have none
        if approvals is not None:
            run_config = run_config.replace(approvals=approvals)
        if getattr(config, "stream", False):
            run_config = run_config.replace(stream=True)
        with Swarm(config=run_config, model=config.model, runs_dir=config.runs_dir) as swarm:
            pipeline.install(swarm, resources, executor, config=config)
            swarm.settings = {**extra_settings, PIPELINE_KEY: record.model_dump(mode="json")}
            if stored is None:
                result = swarm.run_sync(pipeline.plan(config, resources), sinks=watched)
            else:  # what finished before is rebuilt before the rest runs
                _check_roles(swarm, stored)
                pipeline.restore(resources, stored)
                result = swarm.resume_sync(stored.run_id, sinks=watched)
        files = _write_files(pipeline, config, resources, result, record, stored)
    finally:
        executor.shutdown(wait=True, cancel_futures=True)
        if mcp is not None:
            mcp.close()
    return PipelineRun(config, result, resources, files, tracker.peak, time.perf_counter() - t0,
                       refused=tuple(refusals.messages))  # fmt: skip


def _write_files(
    pipeline: Pipeline[C, W],
    config: C,
    resources: RunResources,
    result: RunResult,
    record: PipelineRecord,
    stored: StoredRun | None,
) -> W:
    """The finished run's files, written into `config.out`; a resume that writes them into
    another folder than the stored one records that folder with the run.

    Raises:
        FilesNotWrittenError: they could not be written; the stored run is then marked
            `failed` (not `completed`), the reason its stop reason.
    """
    from kimmy_swarm.swarm.store import RunStore

    try:
        files = pipeline.write_outputs(resources, result, config.out, config=config)
    except OSError as exc:
        why = f"its files could not be written into {config.out}: {exc}"
        if config.runs_dir is None:
            raise FilesNotWrittenError(f"run {result.run_id} finished, but {why}") from exc
        with RunStore(config.runs_dir) as store:
            store.amend_run(result.run_id, failed=why)
        raise FilesNotWrittenError(
            f"run {result.run_id} finished, but {why}; it is stored as failed: "
            f"`kimmy resume {result.run_id} --out DIR` writes them"
        ) from exc
    out = record.model_dump(mode="json")["settings"].get("out")
    if (
        stored is not None
        and config.runs_dir is not None
        and stored_settings(stored.settings).get("out") != out
    ):
        kept = stored.settings[PIPELINE_KEY]
        moved = {**kept, "settings": {**kept["settings"], "out": out}}
        with RunStore(config.runs_dir) as store:
            store.amend_run(result.run_id, settings={**stored.settings, PIPELINE_KEY: moved})
    return files


def _check_roles(swarm: Swarm, stored: StoredRun) -> None:
    missing = {s.role for s in stored.plan.subtasks} - set(swarm.workers)
    if "orchestrator" in missing:
        raise ConfigError(
            f"run {stored.run_id} was stored by an earlier version, whose planner role was "
            "named 'orchestrator' (now 'planner'); this version cannot resume it: run it again"
        )


def subtask_problems(result: RunResult) -> list[str]:
    """One line per subtask of the run that did not finish done: id, role, status, error."""
    return [
        f"{r.id} ({r.role}) {r.status.value}: {r.error.message if r.error else ''}".strip()
        for r in result.results.values()
        if r.status.value != "done"
    ]


def assign_call(subtask: Subtask) -> Call:
    """The orchestrator's `assign_task` call that assigns `subtask` as it is."""
    return (
        "assign_task",
        {
            "agent": subtask.role, "task": subtask.instructions, "inputs": subtask.inputs,
            "depends_on": list(subtask.depends_on), "id": subtask.id,
        },
    )  # fmt: skip


def failure_reason(result: SubtaskResult | None) -> str:
    """Why a subtask has no output: its error, else its status."""
    if result is None:
        return "no result"
    return f"{result.error.type}: {result.error.message}" if result.error else result.status.value


def seen_results(ctx: SubtaskContext, progress: Orchestration) -> RunResult:
    """What the orchestrator has seen, as a run result of its tasks (ids as assigned)."""
    return RunResult(
        run_id=ctx.run_id, goal="", status=RunStatus.COMPLETED, results=dict(progress.seen)
    )


__all__ = [
    "MODEL_SUBTASK_TIMEOUT_S",
    "OFFLINE_PLANS",
    "Orchestration",
    "Pipeline",
    "PipelineConfig",
    "PipelineFiles",
    "PipelineRun",
    "Rules",
    "RunInputs",
    "RunResources",
    "TaskLedger",
    "assign_call",
    "failure_reason",
    "read_record",
    "resume_pipeline",
    "run_pipeline",
    "seen_results",
    "subtask_problems",
]
