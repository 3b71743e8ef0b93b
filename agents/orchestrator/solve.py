"""`run_solve`: a goal in words becomes a swarm of sub-agents the orchestrator creates itself.

    outcome = run_solve(SolveConfig(goal="Review linear attention", corpus=Path("papers/"),
                                    out=Path("out"), model=OpenAIChat(...)))
    print(outcome.answer)            # also in out/answer.md; the run is stored

The run has one planned subtask, the orchestrator (`OrchestratorAgent`); everything else
is assigned by it at run time. With a model, its policy is the model with the orchestrator
tools; without one, the rule-based planner (a corpus: the literature review; datasets: the
analysis; a wide task's goal: extractors over the corpus). `resume_solve` continues a
stored run: the orchestrator's conversation comes back from its recorded turns, and no
finished sub-agent runs again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from kimmy_swarm.agents.orchestrator.agent import (
    ORCHESTRATOR_ID,
    ModelTurns,
    OrchestratorAgent,
    OrchestratorOutput,
)
from kimmy_swarm.agents.orchestrator.agent_specs import spec_role_factory
from kimmy_swarm.agents.orchestrator.offline import OfflinePlanner, offline_rules
from kimmy_swarm.agents.orchestrator.resources import brief, corpus_view, load_resources
from kimmy_swarm.agents.pipeline import (
    Pipeline,
    PipelineFiles,
    PipelineRun,
    RunInputs,
    RunResources,
    resume_pipeline,
    run_pipeline,
    subtask_problems,
)
from kimmy_swarm.agents.pipeline_record import PIPELINE_KEY, PipelineSettings
from kimmy_swarm.agents.roles import builtin_roles
from kimmy_swarm.agents.subagent import install
from kimmy_swarm.agents.tools.mcp.config import McpConfig, as_mcp_config
from kimmy_swarm.swarm.approval_policy import ApprovalPolicy
from kimmy_swarm.swarm.errors import ConfigError
from kimmy_swarm.swarm.llm.budget import DEFAULT_CHARS_PER_TOKEN, context_tokens
from kimmy_swarm.swarm.schema import Plan, Subtask

if TYPE_CHECKING:
    from kimmy_swarm.agents.orchestrator.agent import TurnPolicy
    from kimmy_swarm.swarm import EventSink, RunConfig, RunResult, Swarm
    from kimmy_swarm.swarm.llm.endpoint import ModelEndpoint
    from kimmy_swarm.swarm.llm.protocol import ChatModel

#: The orchestrator's role (its subtask is `ORCHESTRATOR_ID`).
ORCHESTRATOR_ROLE = "orchestrator"


class SolveSettings(PipelineSettings):
    """`SolveConfig` as stored (the model and the runs directory are given again)."""

    kind: Literal["solve"] = "solve"
    goal: str
    out: Path
    corpus: Path | None = None
    datasets: tuple[str, ...] = ()
    max_subagents: int = 1_000
    max_concurrency: int = 64
    max_turns: int = 50
    max_depth: int = 3
    context_tokens: int | None = None
    max_tokens: int = 2_048
    timeout_s: float = 24 * 3600.0
    defaults: dict[str, Any] | None = None
    logprobs: bool = False
    threads: int = 8
    temperature: float | None = 0.0
    max_total_tokens: int | None = None
    #: The MCP servers whose tools the run's sub-agents may use, as stored: without the
    #: values of their `env` and `headers` (`McpConfig.without_secrets`).
    mcp: McpConfig | None = None
    #: Which calls wait for a person (`swarm.approvals`).
    approvals: ApprovalPolicy | None = None
    stream: bool = False


@dataclass(frozen=True)
class SolveConfig:
    """A goal, its resources, and how the swarm may work on it.

    Attributes:
        goal: what to achieve, in words.
        out: the output folder (answer.md, and a pipeline's files offline).
        corpus: a folder of documents or a .bib/.jsonl/.json file (None: no corpus).
        datasets: CSV/Parquet paths or bundled dataset names.
        model: the model of the orchestrator and its sub-agents (None: offline).
        runs_dir: where the run is stored (None: not stored, not resumable).
        max_subagents: the most sub-agents the run may start (the orchestrator included).
        max_concurrency: the most sub-agents in flight.
        max_turns: the most orchestrator turns.
        max_depth: how deep spawning may nest under the orchestrator.
        context_tokens: the model's context length (None: what the model says, else 4,096).
        max_tokens: the most tokens of one orchestrator turn.
        timeout_s: the orchestrator's time limit (its sub-agents have the usual one).
        defaults: metadata for corpus records that lack it, e.g. {"year": 2017}.
        logprobs: ask the server for the orchestrator's token logprobs (for RL).
        threads: worker threads for tools.
        temperature: the sampling temperature of the orchestrator's and its sub-agents'
            calls (0, the default: greedy, the most reliable plans and extractions; None:
            the server's default; above 0 for varied rollouts, e.g. for RL).
        max_total_tokens: the most tokens (prompt and completion) the whole run may spend
            (None: no cap).
        mcp: MCP servers whose tools the run's sub-agents may use (an `McpConfig`, or the
            path of an `{"mcpServers": …}` file); their tools are named `server.tool`.
        approvals: which tool calls wait for a person, and the orchestrator's plan past
            how many sub-agents (an `ApprovalPolicy`, or a mapping of its fields; None:
            only tools and roles that ask themselves).
        stream: the model calls stream their answers (`RunConfig.stream`): `kimmy show
            --follow` and the dashboard show them being written.
    """

    goal: str
    out: Path
    corpus: Path | None = None
    datasets: Sequence[str] = ()
    model: ChatModel | None = None
    runs_dir: Path | None = None
    max_subagents: int = 1_000
    max_concurrency: int = 64
    max_turns: int = 50
    max_depth: int = 3
    context_tokens: int | None = None
    max_tokens: int = 2_048
    timeout_s: float = 24 * 3600.0
    defaults: Mapping[str, Any] | None = None
    logprobs: bool = False
    threads: int = 8
    temperature: float | None = 0.0
    max_total_tokens: int | None = None
    mcp: McpConfig | None = None
    approvals: ApprovalPolicy | None = None
    stream: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "mcp", as_mcp_config(self.mcp))
        if self.approvals is not None:
            object.__setattr__(self, "approvals", ApprovalPolicy.coerce(self.approvals))
        if not self.goal.strip():
            raise ConfigError("the goal is empty: say in words what the swarm should do")
        if isinstance(self.datasets, str):
            raise ConfigError(f"datasets must be a list of names or paths, got {self.datasets!r}")
        object.__setattr__(self, "datasets", tuple(self.datasets))
        for name in ("max_subagents", "max_concurrency", "max_turns", "max_tokens", "threads"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} must be an integer ≥ 1, got {value!r}")
        if self.context_tokens is not None and self.context_tokens < 256:
            raise ConfigError(f"context_tokens must be ≥ 256, got {self.context_tokens!r}")

    def settings(self) -> SolveSettings:
        """What a resume needs (the model and the runs directory are given again)."""
        # Field by field, not `asdict`: that deep-copies the model too (a local one holds
        # sockets and threads).
        return SolveSettings(
            goal=self.goal, out=self.out, corpus=self.corpus, datasets=tuple(self.datasets),
            max_subagents=self.max_subagents, max_concurrency=self.max_concurrency,
            max_turns=self.max_turns, max_depth=self.max_depth,
            context_tokens=self.context_tokens, max_tokens=self.max_tokens,
            timeout_s=self.timeout_s,
            defaults=dict(self.defaults) if self.defaults is not None else None,
            logprobs=self.logprobs, threads=self.threads, temperature=self.temperature,
            max_total_tokens=self.max_total_tokens,
            mcp=self.mcp.without_secrets() if self.mcp is not None else None,
            approvals=self.approvals, stream=self.stream,
        )  # fmt: skip

    @classmethod
    def from_settings(cls, settings: SolveSettings, **changes: Any) -> SolveConfig:
        """The config a run was stored with; `changes` set other fields (model, runs_dir)."""
        return cls(**{**settings.model_dump(exclude={"kind"}), **changes})


@dataclass
class SolveOutcome:
    """What an orchestrated run produced."""

    run_id: str
    status: str
    answer: str
    out_dir: Path
    paths: dict[str, Path]
    #: Sub-agents the orchestrator started (the orchestrator itself not counted: the run
    #: has `subagents + 1`, the figure `kimmy show` gives).
    subagents: int
    turns: int
    agents: dict[str, str]
    #: The run's wall time (`RunResult.wall_s`).
    duration_s: float
    problems: list[str] = field(default_factory=list)
    #: The messages of the spawns the swarm refused (the sub-agent limit, depth, a cycle).
    refused: list[str] = field(default_factory=list)
    #: The run's sub-agent limit (`SolveConfig.max_subagents`).
    max_subagents: int = 1_000
    #: Planned by the offline rules (no model): the pipeline whose rules planned it.
    planned_by_rules: str | None = None


@dataclass
class SolveFiles(PipelineFiles):
    """answer.md (and, offline, the planning pipeline's files), and the answer."""

    answer: str = ""


@dataclass
class _Planning:
    """How the orchestrator plans: its policy, and offline the pipeline whose rules it
    follows (None with a model: it may assign to any role)."""

    policy: TurnPolicy
    pipeline: Pipeline[Any, Any] | None


def _planning(config: SolveConfig, resources: RunResources) -> _Planning:
    if config.model is not None:
        policy = ModelTurns(
            max_tokens=config.max_tokens,
            logprobs=config.logprobs,
            context_tokens=config.context_tokens,
        )
        return _Planning(policy, None)
    pipeline, rules = offline_rules(config.goal, resources)
    return _Planning(OfflinePlanner(rules), pipeline)


def _state(resources: RunResources) -> _Planning:
    planning = resources.state[SOLVE.name]
    assert isinstance(planning, _Planning)
    return planning


def _answer(result: RunResult) -> str:
    output = result.outputs.get(ORCHESTRATOR_ID)
    answer = output.get("answer", "") if isinstance(output, dict) else ""
    if not answer:
        res = result.results.get(ORCHESTRATOR_ID)
        why = f"{res.error.type}: {res.error.message}" if res and res.error else "no answer"
        state = res.status.value if res else "did not run"
        answer = f"(no answer: the orchestrator {state}; {why})"
    return answer


class SolvePipeline(Pipeline[SolveConfig, SolveFiles]):
    """`run_solve` as a `Pipeline`: the orchestrator over the registered pipelines' resources
    (it is not registered itself: it plans the registered ones)."""

    name = "solve"
    Settings = SolveSettings

    def configure(self, settings: SolveSettings, **given: Any) -> SolveConfig:
        return SolveConfig.from_settings(settings, **given)

    def load(self, config: SolveConfig, executor: Executor) -> RunResources:
        inputs = RunInputs(
            out=config.out, corpus=config.corpus, datasets=tuple(config.datasets),
            defaults=config.defaults, python=config.model is not None,
        )  # fmt: skip
        resources = load_resources(inputs, executor)
        resources.state[self.name] = _planning(config, resources)
        return resources

    def run_config(self, config: SolveConfig) -> RunConfig:
        from kimmy_swarm.swarm import RunConfig

        return RunConfig(
            max_concurrency=config.max_concurrency,
            max_subagents=config.max_subagents,
            max_depth=config.max_depth,
            failure_policy="continue",
            temperature=config.temperature,
            max_total_tokens=config.max_total_tokens,
        )

    def install(
        self,
        swarm: Swarm,
        resources: RunResources,
        executor: Executor,
        *,
        planner: str = "planner",
        config: SolveConfig | None = None,
    ) -> dict[str, str]:
        """The planning pipeline's roles (offline) or the built-in ones (with a model), the
        role factory for sub-agents made at run time, and the orchestrator."""
        assert config is not None
        planning = _state(resources)
        if planning.pipeline is not None:
            roles = planning.pipeline.install(swarm, resources, executor, planner=planner)
        else:  # the orchestrator plans: no planner beside it
            tools = tuple(resources.tools)
            builtins = [r.derive(tools=tools) for n, r in builtin_roles().items() if n != planner]
            install(swarm, builtins, resources.tools, executor=executor)
            roles = {r.name: r.system_prompt.split(". ")[0] for r in builtins}
        swarm.set_role_factory(spec_role_factory(resources.tools, executor=executor))
        context = config.context_tokens or context_tokens(config.model)
        budget = int(context * DEFAULT_CHARS_PER_TOKEN * 0.25)
        agent = OrchestratorAgent(
            brief(resources, roles, config.corpus),
            planning.policy,
            roles=[r for r in swarm.workers if r != ORCHESTRATOR_ROLE],
            max_turns=config.max_turns,
            budget_chars=max(2_000, budget),
            context_tokens=context,
            max_tokens=config.max_tokens,
            corpus=corpus_view(resources),
        )
        swarm.add_role(ORCHESTRATOR_ROLE, agent, output=OrchestratorOutput)
        return roles

    def plan(self, config: SolveConfig, resources: RunResources) -> Plan:
        return _plan(config)

    def write_outputs(
        self,
        resources: RunResources,
        result: RunResult,
        out: Path,
        *,
        config: SolveConfig | None = None,
    ) -> SolveFiles:
        """answer.md (and, offline, the planning pipeline's own files in `out / its name`)."""
        out.mkdir(parents=True, exist_ok=True)
        answer = _answer(result)
        paths = {"answer.md": out / "answer.md"}
        paths["answer.md"].write_text(answer.rstrip() + "\n", encoding="utf-8")
        pipeline = _state(resources).pipeline
        if pipeline is not None:
            paths.update(pipeline.write_outputs(resources, result, out / pipeline.name).paths)
        return SolveFiles(paths=paths, answer=answer)


#: The orchestrated run of a goal (not registered: it plans the registered pipelines).
SOLVE = SolvePipeline()


def _plan(config: SolveConfig) -> Plan:
    return Plan(
        goal=config.goal,
        subtasks=[
            Subtask(
                id=ORCHESTRATOR_ID,
                role=ORCHESTRATOR_ROLE,
                instructions=config.goal,
                inputs={"goal": config.goal},
                timeout_s=config.timeout_s,
                max_retries=1,
            )
        ],
    )


def _outcome(run: PipelineRun[SolveConfig, SolveFiles]) -> SolveOutcome:
    result = run.result
    output = result.outputs.get(ORCHESTRATOR_ID)
    parsed = OrchestratorOutput.model_validate(output) if isinstance(output, dict) else None
    rules = _state(run.resources).pipeline  # offline: the pipeline whose rules planned it
    return SolveOutcome(
        run_id=result.run_id,
        status=result.status.value,
        answer=run.files.answer,
        out_dir=run.config.out,
        paths=run.files.paths,
        subagents=len(result.results) - 1,
        turns=parsed.turns if parsed else 0,
        agents=dict(parsed.agents) if parsed else {},
        duration_s=run.wall_s,
        problems=subtask_problems(result),
        refused=list(run.refused),
        max_subagents=run.config.max_subagents,
        planned_by_rules=rules.name if rules is not None else None,
    )


def run_solve(
    config: SolveConfig,
    *,
    sinks: Sequence[EventSink] = (),
    extra_settings: Mapping[str, Any] | None = None,
    endpoint: ModelEndpoint | None = None,
) -> SolveOutcome:
    """Run the orchestrator on the goal to the end; writes `config.out / "answer.md"`.

    The run records its settings and `endpoint` (default: `ModelEndpoint.of(config.model)`)
    so that `resume_solve` can continue it; `extra_settings` are recorded beside them.

    Raises:
        ConfigError: offline, a goal no rule set plans (the message says how to give a
            model); bad settings.
        CorpusError, EmptyCorpusError: the corpus cannot be read.
    """
    run = run_pipeline(SOLVE, config, sinks=sinks, endpoint=endpoint, extra_settings=extra_settings)
    return _outcome(run)


def resume_solve(
    run_id: str,
    *,
    runs_dir: Path,
    model: ChatModel | None = None,
    sinks: Sequence[EventSink] = (),
    mcp: McpConfig | str | Path | None = None,
    out: str | Path | None = None,
) -> SolveOutcome:
    """Continue a stored `run_solve` run (the orchestrator's conversation is restored).

    Args:
        mcp: the run's MCP servers again (an `McpConfig` or its file): the stored settings
            keep none of their `env` and `headers` values (None: the stored config).
        out: the folder its files are written into (None: the run's own).

    Raises:
        ConfigError: the run was not made by `run_solve`, or by an earlier version; its
            MCP servers need values that were not stored and `mcp` was not given.
    """
    from kimmy_swarm.swarm.store import RunStore

    with RunStore(runs_dir, create=False) as store:
        stored = store.load_run(run_id)
    if "solve" in stored.settings and PIPELINE_KEY not in stored.settings:
        raise ConfigError(
            f"run {stored.run_id} was stored by an earlier version of `kimmy swarm` (its "
            "settings under 'solve', not in a pipeline record); this version cannot resume "
            "it: run it again"
        )
    changes: dict[str, Any] = {"mcp": as_mcp_config(mcp)} if mcp is not None else {}
    if out is not None:
        changes["out"] = Path(out)
    return _outcome(
        resume_pipeline(SOLVE, stored, runs_dir=runs_dir, model=model, sinks=sinks, **changes)
    )


__all__ = [
    "SOLVE",
    "SolveConfig",
    "SolveOutcome",
    "SolvePipeline",
    "SolveSettings",
    "resume_solve",
    "run_solve",
]
