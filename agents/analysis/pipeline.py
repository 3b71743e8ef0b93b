"""Batch parallel data analysis: `run_analysis(AnalysisConfig(...))`.

    outcome = run_analysis(AnalysisConfig(["statsmodels:longley", "sklearn:diabetes"],
                                          out=Path("out")))
    outcome.paths["report.md"], outcome.pass_rate

The DAG: `plan` (orchestrator) spawns, per (dataset, question), `analyze:<n>` (data_analyst)
→ `check:<n>` (fact_checker), then `report` (frontend_engineer → report.html) and
`summarize` (synthesizer → report.md) after all checks. A dataset that fails to load is bad
input: `DatasetLoadError` before anything runs. The failure policy is `continue`: an
analysis that fails is reported, never fatal; a question that names no column of one dataset
but does of another is "not applicable" there, no failure.
Afterwards `findings.jsonl` lists every reported number with its verdict. With a model, a
sub-agent whose model fails its subtask by its answers gets it done by its role's offline
procedure (`config.fallback`, `agents.fallback`); report.md then lists those sub-agents and
the outcome counts them.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agents.analysis.board import AnalysisBoard
from agents.analysis.digest import analysis_digest, run_problems
from agents.analysis.outputs import finding_records, write_jsonl
from agents.analysis.report_text import intro_text, render_markdown
from agents.analysis.roles import analysis_roles
from agents.analysis.schemas import PLAN_ID, REPORT_ID, SUMMARIZE_ID, is_check_id
from agents.analysis.tools import build_toolbox
from agents.analysis.workers import (
    AnalystWorker,
    CheckWorker,
    PlanOnlyWorker,
    PlanWorker,
    ReportWorker,
    restore_board,
)
from agents.fallback import fallback_markdown, fallbacks, made_by_counts
from agents.pipeline_record import (
    PIPELINE_KEY,
    AnalysisSettings,
    PipelineRecord,
    load_pipeline_run,
    resume_sync,
)
from agents.subagent import SubAgent
from agents.tracking import RoleConcurrency
from swarm import Swarm
from swarm.errors import ConfigError, UserError
from swarm.llm.endpoint import ModelEndpoint
from swarm.schema import Plan, RunResult, Subtask, SubtaskStatus

if TYPE_CHECKING:
    from agents.toolbox import ToolBox
    from agents.tools.datasets import Dataset
    from swarm import EventSink
    from swarm.llm.protocol import ChatModel
    from swarm.store import StoredRun


@dataclass(frozen=True)
class AnalysisConfig:
    """What to analyse and how (checked when made, before anything runs).

    Attributes:
        datasets: specs: `statsmodels:NAME`, `sklearn:NAME`, or .csv/.tsv/.parquet paths.
        out: the folder for report.md, report.html, findings.jsonl and figures/.
        questions: asked of every dataset (default: one general question).
        model: the model for the model policy (None: offline procedures).
        runs_dir: where the swarm stores the run (None: nowhere).
        max_concurrency: sub-agents in flight at most.
        root: file datasets must lie inside it (default: the working directory).
        threads: worker threads for procedures and tools (analyses run in parallel on them).
        fallback: with a model, a sub-agent (the planner too) whose model fails its
            subtask by its answers gets it done by its role's offline procedure, marked as
            such; False: that sub-agent fails (strict model mode).

    Raises:
        ConfigError: no dataset, or a count below 1.
    """

    datasets: Sequence[str]
    out: Path
    questions: Sequence[str] = ()
    model: ChatModel | None = None
    runs_dir: Path | None = None
    max_concurrency: int = 64
    root: Path | None = None
    threads: int = 16
    fallback: bool = True

    def __post_init__(self) -> None:
        for name in ("datasets", "questions"):
            value = getattr(self, name)
            if isinstance(value, str):  # a str is a Sequence[str]: one letter per dataset
                raise ConfigError(f"{name} is a list of strings; got the string {value!r}")
        datasets = [str(d).strip() for d in self.datasets]
        if not datasets or not all(datasets):
            raise ConfigError(
                f"name at least one dataset (got {datasets!r}): 'statsmodels:NAME', "
                "'sklearn:NAME' or a .csv/.tsv/.parquet path"
            )
        object.__setattr__(self, "datasets", tuple(datasets))
        object.__setattr__(self, "questions", tuple(q.strip() for q in self.questions if q.strip()))
        object.__setattr__(self, "out", Path(self.out))
        if self.threads < 1 or self.max_concurrency < 1:
            raise ConfigError(
                f"threads and max_concurrency must be >= 1, got {self.threads} and "
                f"{self.max_concurrency}"
            )

    def settings(self) -> AnalysisSettings:
        """What a resume needs (the model and the runs directory are given again)."""
        return AnalysisSettings(
            datasets=tuple(self.datasets),
            out=self.out.expanduser().resolve(),
            questions=tuple(self.questions),
            max_concurrency=self.max_concurrency,
            root=(self.root or Path.cwd()).expanduser().resolve(),
            threads=self.threads,
            fallback=self.fallback,
        )

    @classmethod
    def from_settings(cls, settings: AnalysisSettings, **changes: Any) -> AnalysisConfig:
        """The config a run was stored with; `changes` set other fields (model, runs_dir)."""
        return cls(**{**settings.model_dump(exclude={"kind"}), **changes})


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

    @property
    def pass_rate(self) -> float:
        """Verified findings over all findings (0.0 when nothing was checked: a fact-check
        that checked nothing vouches for nothing)."""
        return self.verified / self.findings if self.findings else 0.0


def load_datasets(
    specs: Sequence[str], *, root: Path, executor: Executor
) -> tuple[dict[str, Dataset], dict[str, str]]:
    """Load each spec once, in parallel: the datasets by spec, and the specs that failed."""
    from agents.tools.datasets import load_dataset

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


def _sandbox(board: AnalysisBoard) -> Any:
    """The sandbox for `run_python`; None (and a problem noted) where it cannot isolate."""
    from agents.tools.sandbox import Sandbox, SandboxLimits, SandboxUnavailableError

    try:
        return Sandbox(SandboxLimits())
    except SandboxUnavailableError as exc:  # fail closed: analysts go without run_python
        board.add_problem(f"run_python is unavailable, analysts used the other tools: {exc}")
        return None


def build_swarm(
    config: AnalysisConfig, board: AnalysisBoard, tools: ToolBox, executor: Executor
) -> Swarm:
    """A swarm with the five analysis roles, each a `SubAgent` behind its board worker."""
    swarm = Swarm(
        model=config.model,
        max_concurrency=config.max_concurrency,
        failure_policy="continue",
        runs_dir=config.runs_dir,
    )
    install_analysis_roles(swarm, board, tools, executor, fallback=config.fallback)
    return swarm


def install_analysis_roles(
    swarm: Swarm,
    board: AnalysisBoard,
    tools: ToolBox,
    executor: Executor,
    *,
    planner: str = "orchestrator",
    spawn: bool = True,
    fallback: bool = False,
) -> None:
    """Register the five analysis roles on `swarm`, each behind its board worker; the
    planner under the name `planner`, spawning the DAG itself unless `spawn` is False (an
    orchestrator above it assigns the tasks). `fallback`: see `AnalysisConfig`."""
    roles = analysis_roles(python="run_python" in tools)
    wrappers = {
        "orchestrator": PlanWorker if spawn else PlanOnlyWorker,
        "data_analyst": AnalystWorker,
        "fact_checker": CheckWorker,
        "frontend_engineer": ReportWorker,
        "synthesizer": ReportWorker,
    }
    for name, role in roles.items():
        agent = SubAgent(role, tools, executor=executor, fallback=fallback)
        key = planner if name == "orchestrator" else name
        swarm.add_role(key, wrappers[name](agent, board), output=role.output)


def _initial_plan(config: AnalysisConfig) -> Plan:
    datasets = list(dict.fromkeys(config.datasets))
    return Plan(
        goal=f"batch analysis of {len(datasets)} dataset(s)",
        subtasks=[
            Subtask(
                id=PLAN_ID,
                role="orchestrator",
                instructions="Plan one analysis per (dataset, question).",
                inputs={"datasets": datasets, "questions": list(config.questions)},
            )
        ],
    )


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


def _run(
    config: AnalysisConfig,
    sinks: Sequence[EventSink],
    endpoint: ModelEndpoint | None,
    resume: StoredRun | None = None,
) -> AnalysisOutcome:
    """Run (or, given a stored run, continue) the analysis and write its artifacts."""
    t0 = time.perf_counter()
    out = config.out.expanduser().resolve()
    root = (config.root or Path.cwd()).expanduser().resolve()
    executor = ThreadPoolExecutor(config.threads, thread_name_prefix="kimmy-analysis")
    record = PipelineRecord(settings=config.settings(), endpoint=endpoint or
                            ModelEndpoint.of(config.model))  # fmt: skip
    try:
        datasets, errors = load_datasets(config.datasets, root=root, executor=executor)
        if errors:  # bad input: refused before anything runs or is written
            raise DatasetLoadError(errors)
        out.mkdir(parents=True, exist_ok=True)
        board = AnalysisBoard(datasets, out_dir=out, load_errors=errors)
        sandbox = _sandbox(board) if config.model is not None else None
        tools = build_toolbox(board, sandbox)
        concurrency = RoleConcurrency()
        with build_swarm(config, board, tools, executor) as swarm:
            swarm.settings[PIPELINE_KEY] = record.model_dump(mode="json")
            if resume is None:
                result = swarm.run_sync(_initial_plan(config), sinks=[concurrency, *sinks])
            else:  # what finished before is on the board again before the rest runs
                restore_board(board, resume.results)
                result = resume_sync(swarm, resume.run_id, sinks=[concurrency, *sinks])
        _record_failures(board, result)
        paths = write_artifacts(board, tools, result)
    finally:
        executor.shutdown(wait=True, cancel_futures=True)
    return _outcome(board, result, paths, concurrency, t0)


def _outcome(
    board: AnalysisBoard,
    result: RunResult,
    paths: dict[str, Path],
    concurrency: RoleConcurrency,
    t0: float,
) -> AnalysisOutcome:
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
        paths=paths,
        analyses=len(board.tasks),
        findings=len(records),
        verified=verdicts.count("verified"),
        mismatched=verdicts.count("mismatch"),
        unverifiable=verdicts.count("unverifiable"),
        peak_analysts=concurrency.peak["data_analyst"],
        problems=problems,
        duration_s=time.perf_counter() - t0,
        fallbacks=fallbacks(result.outputs),
        subagents=len(result.results),
        made_by=made_by_counts(result.outputs),
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
    return _run(config, sinks, endpoint)


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
    stored, record = load_pipeline_run(run_id, runs_dir, "analysis")
    assert isinstance(record.settings, AnalysisSettings)
    config = AnalysisConfig.from_settings(
        record.settings, model=model, runs_dir=runs_dir, **changes
    )
    return _run(config, sinks, record.endpoint, stored)


__all__ = [
    "AnalysisConfig",
    "AnalysisOutcome",
    "DatasetLoadError",
    "build_swarm",
    "install_analysis_roles",
    "load_datasets",
    "resume_analysis",
    "run_analysis",
    "write_artifacts",
]
