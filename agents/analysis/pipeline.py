"""Batch parallel data analysis: `run_analysis(AnalysisConfig(...))`.

    outcome = run_analysis(AnalysisConfig(["statsmodels:longley", "sklearn:diabetes"],
                                          out=Path("out")))
    outcome.paths["report.md"], outcome.pass_rate

The DAG: `plan` (planner) spawns, per (dataset, question), `analyze:<n>` (data_analyst)
→ `check:<n>` (fact_checker), then `report` (frontend_engineer → report.html) and
`summarize` (synthesizer → report.md) after all checks. A dataset that fails to load is bad
input: `DatasetLoadError` before anything runs. The failure policy is `continue`: an
analysis that fails is reported, never fatal; a question that names no column of one dataset
but does of another is "not applicable" there, no failure.
Afterwards `findings.jsonl` lists every reported number with its verdict. With a model, a
sub-agent whose model fails its subtask by its answers gets it done by its role's offline
procedure (`config.fallback`, `agents.fallback`); report.md then lists those sub-agents and
the outcome counts them. `ANALYSIS` is the analysis as a `Pipeline`: run on its own by
`run_analysis` (`agents.pipeline.run_pipeline`), or planned by the orchestrator for a goal
with datasets.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kimmy_swarm.agents.analysis.board import AnalysisBoard
from kimmy_swarm.agents.analysis.config import AnalysisConfig, AnalysisSettings
from kimmy_swarm.agents.analysis.digest import analysis_digest, run_problems
from kimmy_swarm.agents.analysis.grader import AnalysisGrader
from kimmy_swarm.agents.analysis.outputs import finding_records, write_jsonl
from kimmy_swarm.agents.analysis.planning import (
    PLANNER,
    AnalysisRules,
    goal_questions,
    initial_plan,
)
from kimmy_swarm.agents.analysis.report_text import entry_answer, intro_text, render_markdown
from kimmy_swarm.agents.analysis.roles import analysis_roles
from kimmy_swarm.agents.analysis.schemas import REPORT_ID, SUMMARIZE_ID, is_check_id
from kimmy_swarm.agents.analysis.tools import build_toolbox
from kimmy_swarm.agents.analysis.workers import (
    AnalystWorker,
    CheckWorker,
    PlanOnlyWorker,
    PlanWorker,
    ReportWorker,
    restore_board,
)
from kimmy_swarm.agents.fallback import fallback_markdown, fallbacks, made_by_counts
from kimmy_swarm.agents.pipeline import (
    Pipeline,
    PipelineFiles,
    PipelineRun,
    RunResources,
    resume_pipeline,
    run_pipeline,
)
from kimmy_swarm.agents.subagent import SubAgent
from kimmy_swarm.swarm.errors import ConfigError, UserError
from kimmy_swarm.swarm.llm.endpoint import ModelEndpoint
from kimmy_swarm.swarm.schema import Plan, RunResult, SubtaskStatus

if TYPE_CHECKING:
    from kimmy_swarm.agents.pipeline import RunInputs
    from kimmy_swarm.agents.toolbox import ToolBox
    from kimmy_swarm.agents.tools.datasets import Dataset
    from kimmy_swarm.rewards.graders import PipelineGrader
    from kimmy_swarm.rewards.trajectory import Trajectory
    from kimmy_swarm.swarm import EventSink, Plan, Swarm
    from kimmy_swarm.swarm.llm.endpoint import ModelEndpoint
    from kimmy_swarm.swarm.llm.protocol import ChatModel
    from kimmy_swarm.swarm.store import StoredRun


@dataclass
class AnalysisOutcome:
    """What a run produced: where the artifacts are and how the fact-check went."""

    out_dir: Path
    run_id: str
    status: str
    paths: dict[str, Path]
    analyses: int
    findings: int
    verified: int
    mismatched: int
    unverifiable: int
    peak_analysts: int
    problems: list[str]
    duration_s: float
    #: Sub-agents whose model failed their subtask, done by the offline procedure instead:
    #: the model's error by subtask id (`agents.fallback`).
    fallbacks: dict[str, str] = field(default_factory=dict)
    #: Sub-agents of the run (the planner included).
    subagents: int = 0
    #: How many sub-agents' outputs each maker made: `model`, `offline`, `offline_fallback`
    #: (`agents.fallback.made_by_counts`).
    made_by: dict[str, int] = field(default_factory=dict)
    #: Per (dataset, question), in plan order: (dataset, question, the answer in one line as
    #: report.md gives it first; `report_text.entry_answer`).
    answers: list[tuple[str, str, str]] = field(default_factory=list)

    @property
    def pass_rate(self) -> float:
        """Verified findings over all findings (0.0 when nothing was checked: a fact-check
        that checked nothing vouches for nothing)."""
        return self.verified / self.findings if self.findings else 0.0


def load_datasets(
    specs: Sequence[str], *, root: Path, executor: Executor
) -> tuple[dict[str, Dataset], dict[str, str]]:
    """Load each spec once, in parallel: the datasets by spec, and the specs that failed."""
    from kimmy_swarm.agents.tools.datasets import load_dataset

    unique = list(dict.fromkeys(specs))
    futures = {s: executor.submit(load_dataset, s, root=root) for s in unique}
    loaded: dict[str, Dataset] = {}
    errors: dict[str, str] = {}
    for spec, future in futures.items():
        try:
            ds = future.result()
        except UserError as exc:  # unknown name, bad path, unreadable file: reported
            errors[spec] = str(exc)
            continue
        ds.frame.columns = [str(c) for c in ds.frame.columns]
        loaded[spec] = ds
    return loaded, errors


class DatasetLoadError(UserError):
    """Datasets of a run could not be loaded: bad input, so nothing was run or written.

    The message is one line: each failed spec's reason (which names the spec and the forms
    allowed). `errors` maps each failed spec to its reason.
    """

    def __init__(self, errors: Mapping[str, str]) -> None:
        self.errors = dict(errors)
        reasons = "; ".join(" ".join(msg.split()) for msg in self.errors.values())
        n = len(self.errors)
        super().__init__(f"{n} dataset{'s' if n != 1 else ''} could not be loaded, nothing was "
                         f"analysed: {reasons}")  # fmt: skip


def load_all(specs: Sequence[str], *, root: Path, executor: Executor) -> dict[str, Dataset]:
    """Every dataset `specs` names, by spec: the one check of a run's datasets (a run of
    its own and one the orchestrator plans refuse the same input the same way).

    Raises:
        DatasetLoadError: any of them could not be loaded (bad input: nothing ran yet).
    """
    datasets, errors = load_datasets(specs, root=root, executor=executor)
    if errors:
        raise DatasetLoadError(errors)
    return datasets


def sandbox_for(board: AnalysisBoard) -> Any:
    """The sandbox for `run_python`; None (and a problem noted) where it cannot isolate."""
    from kimmy_swarm.agents.tools.sandbox import Sandbox, SandboxLimits, SandboxUnavailableError

    try:
        return Sandbox(SandboxLimits())
    except SandboxUnavailableError as exc:  # fail closed: analysts go without run_python
        board.add_problem(f"run_python is unavailable, analysts used the other tools: {exc}")
        return None


def install_analysis_roles(
    swarm: Swarm,
    board: AnalysisBoard,
    tools: ToolBox,
    executor: Executor,
    *,
    planner: str = PLANNER,
    spawn: bool = True,
    fallback: bool = False,
    briefs: bool = True,
) -> None:
    """Register the five analysis roles on `swarm`, each behind its board worker; the
    planner under the name `planner`, spawning the DAG itself unless `spawn` is False (an
    orchestrator above it assigns the tasks). `fallback`, `briefs`: see `AnalysisConfig`."""
    roles = analysis_roles(python="run_python" in tools, briefs=briefs)
    wrappers = {
        PLANNER: PlanWorker if spawn else PlanOnlyWorker,
        "data_analyst": AnalystWorker,
        "fact_checker": CheckWorker,
        "frontend_engineer": ReportWorker,
        "synthesizer": ReportWorker,
    }
    for name, role in roles.items():
        agent = SubAgent(role, tools, executor=executor, fallback=fallback)
        key = planner if name == PLANNER else name
        swarm.add_role(key, wrappers[name](agent, board), output=role.output)


def _record_failures(board: AnalysisBoard, result: RunResult) -> None:
    for sid, res in result.results.items():
        if res.status is SubtaskStatus.DONE or is_check_id(sid):
            continue  # a failed check is reported with its analysis
        what = f"{res.error.type}: {res.error.message}" if res.error else res.status.value
        board.add_problem(f"{sid} {res.status.value} ({what})")


def write_artifacts(board: AnalysisBoard, tools: ToolBox, result: RunResult) -> dict[str, Path]:
    """report.md, report.html (made here from the board if their subtasks failed) and
    findings.jsonl."""
    out = board.out_dir
    summary = result.outputs.get(SUMMARIZE_ID)
    markdown = summary["markdown"] if isinstance(summary, Mapping) else None
    if markdown is None:
        markdown = render_markdown(analysis_digest(board))
    md_path = out / "report.md"
    note = fallback_markdown(fallbacks(result.outputs))
    if note:  # whoever wrote report.md, it ends with the sub-agents that fell back
        markdown = "\n".join([markdown.rstrip("\n"), "", *note])
    md_path.write_text(markdown, encoding="utf-8")
    html_path = out / "report.html"
    if result.outputs.get(REPORT_ID) is None or not html_path.is_file():
        digest = analysis_digest(board)
        tools.get_tool("render_report")(
            title="Batch data analysis", intro=intro_text(digest), order=None
        )
    jsonl = write_jsonl(out / "findings.jsonl", finding_records(board))
    return {"report.md": md_path, "report.html": html_path, "findings.jsonl": jsonl}


def _outcome_problems(board: AnalysisBoard) -> list[str]:
    problems = run_problems(board)
    for e in analysis_digest(board).analyses:
        if e.status == "failed" or not e.applicable:  # not applicable: no failure
            continue
        if not e.answered or e.status == "partial":
            problems.append(f"{e.id} ({e.dataset}): {e.reason or 'partial'}")
    return problems


@dataclass(frozen=True)
class _Loaded:
    """What an analysis works on: the board, and the datasets asked for (some may have failed
    to load: the board says why)."""

    board: AnalysisBoard
    specs: tuple[str, ...]


def _loaded(resources: RunResources) -> _Loaded:
    loaded = resources.state[ANALYSIS.name]
    assert isinstance(loaded, _Loaded)
    return loaded


class AnalysisPipeline(Pipeline[AnalysisConfig, PipelineFiles]):
    """The batch analysis as a `Pipeline` (its resources: the datasets' board and its tools)."""

    name = "analysis"
    Settings = AnalysisSettings

    def configure(self, settings: AnalysisSettings, **given: Any) -> AnalysisConfig:
        return AnalysisConfig.from_settings(settings, **given)

    def load(self, config: AnalysisConfig, executor: Executor) -> RunResources:
        out = config.out.expanduser().resolve()
        root = (config.root or Path.cwd()).expanduser().resolve()
        datasets = load_all(config.datasets, root=root, executor=executor)
        out.mkdir(parents=True, exist_ok=True)
        board = AnalysisBoard(datasets, out_dir=out)
        sandbox = sandbox_for(board) if config.model is not None else None
        return RunResources(
            tools=build_toolbox(board, sandbox),
            datasets=tuple(board.datasets),
            state={self.name: _Loaded(board, tuple(config.datasets))},
        )

    def load_inputs(self, inputs: RunInputs, resources: RunResources, executor: Executor) -> None:
        if not inputs.datasets:
            return
        root = (inputs.root or Path.cwd()).expanduser().resolve()
        found = load_all(inputs.datasets, root=root, executor=executor)  # as `kimmy analyze`
        board = AnalysisBoard(found, out_dir=inputs.out / self.name)
        board.out_dir.mkdir(parents=True, exist_ok=True)
        resources.add_tools(build_toolbox(board, sandbox_for(board) if inputs.python else None))
        resources.datasets = tuple(board.datasets)
        resources.state[self.name] = _Loaded(board, tuple(inputs.datasets))

    def install(
        self,
        swarm: Swarm,
        resources: RunResources,
        executor: Executor,
        *,
        planner: str = PLANNER,
        config: AnalysisConfig | None = None,
    ) -> dict[str, str]:
        board = _loaded(resources).board
        fallback = config.fallback if config is not None else False
        install_analysis_roles(
            swarm, board, resources.tools, executor,
            planner=planner, spawn=config is not None, fallback=fallback,
            briefs=config.briefs if config is not None else True,
        )  # fmt: skip
        return {}

    def plan(self, config: AnalysisConfig, resources: RunResources) -> Plan:
        return initial_plan(config)

    def restore(self, resources: RunResources, stored: StoredRun) -> None:
        restore_board(_loaded(resources).board, stored.results)

    def write_outputs(
        self,
        resources: RunResources,
        result: RunResult,
        out: Path,
        *,
        config: AnalysisConfig | None = None,
    ) -> PipelineFiles:
        if config is None:  # under the orchestrator: the report subtasks' files only
            return PipelineFiles(paths={})
        board = _loaded(resources).board
        _record_failures(board, result)
        return PipelineFiles(paths=write_artifacts(board, resources.tools, result))

    def offline_rules(self, goal: str, resources: RunResources) -> AnalysisRules | None:
        loaded = resources.state.get(self.name)
        if not isinstance(loaded, _Loaded):
            return None
        if resources.corpus is not None:
            raise ConfigError(
                "offline, a run plans either a review (--corpus) or an analysis (--data), not "
                "both; give a model to combine them"
            )
        return AnalysisRules(loaded.specs, goal_questions(goal))  # a question: the goal's

    def grader(self, traj: Trajectory) -> PipelineGrader | None:
        grader = AnalysisGrader()
        return grader if grader.applies(traj) else None


#: The batch analysis (registered in `agents.pipelines`).
ANALYSIS = AnalysisPipeline()


def _outcome(run: PipelineRun[AnalysisConfig, PipelineFiles]) -> AnalysisOutcome:
    board, result = _loaded(run.resources).board, run.result
    records = finding_records(board)
    verdicts = [r["verdict"] for r in records]
    problems = _outcome_problems(board)
    status = result.status.value
    if status == "completed" and problems:
        status = "partial"
    return AnalysisOutcome(
        out_dir=board.out_dir,
        run_id=result.run_id,
        status=status,
        paths=run.files.paths,
        analyses=len(board.tasks),
        findings=len(records),
        verified=verdicts.count("verified"),
        mismatched=verdicts.count("mismatch"),
        unverifiable=verdicts.count("unverifiable"),
        peak_analysts=run.peak["data_analyst"],
        problems=problems,
        duration_s=run.wall_s,
        fallbacks=fallbacks(result.outputs),
        subagents=len(result.results),
        made_by=made_by_counts(result.outputs),
        answers=[(e.dataset, e.question, entry_answer(e)) for e in analysis_digest(board).analyses],
    )


def run_analysis(
    config: AnalysisConfig,
    *,
    sinks: Sequence[EventSink] = (),
    endpoint: ModelEndpoint | None = None,
) -> AnalysisOutcome:
    """Run the batch analysis to the end and write its artifacts into `config.out`.

    The run records its settings and `endpoint` (default: `ModelEndpoint.of(config.model)`)
    so that `resume_analysis` can continue it.

    Raises:
        ConfigError: a bad configuration (no datasets, bad thread count).
        DatasetLoadError: a dataset could not be loaded (a missing file, an unknown name):
            nothing was run and no file written.
    """
    with _one_blas_thread():
        return _outcome(run_pipeline(ANALYSIS, config, sinks=sinks, endpoint=endpoint))


def resume_analysis(
    run_id: str,
    *,
    runs_dir: Path,
    model: ChatModel | None = None,
    sinks: Sequence[EventSink] = (),
    **changes: Any,
) -> AnalysisOutcome:
    """Continue a stored `run_analysis` run: its finished subtasks are reused, the rest runs
    with the same roles, and the artifacts are written as an unbroken run writes them.

    Args:
        model: the model of the run (None: offline; give the one its endpoint names).
        changes: `AnalysisConfig` fields to change (e.g. `max_concurrency`).

    Raises:
        ConfigError: the run was not made by `run_analysis`.
        RunNotFoundError: no such run.
    """
    with _one_blas_thread():
        run = resume_pipeline(ANALYSIS, run_id, runs_dir=runs_dir, model=model, sinks=sinks,
                              **changes)  # fmt: skip
    return _outcome(run)


def _one_blas_thread() -> Any:
    """One BLAS/OpenMP thread for the run: its analysts and fact-checkers are the
    parallelism (threads of their own), and BLAS threads on top of them oversubscribe the
    cores — fair's two-part model with its 16 terms fitted 8x slower on a busy 2-core
    machine (measured), its matrices past OpenBLAS's threading threshold."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1)


__all__ = [
    "ANALYSIS",
    "AnalysisOutcome",
    "AnalysisPipeline",
    "DatasetLoadError",
    "install_analysis_roles",
    "load_all",
    "load_datasets",
    "resume_analysis",
    "run_analysis",
    "sandbox_for",
    "write_artifacts",
]
