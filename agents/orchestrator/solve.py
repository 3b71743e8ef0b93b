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

import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agents.orchestrator.agent import (
    ORCHESTRATOR_ID,
    ModelTurns,
    OrchestratorAgent,
    OrchestratorOutput,
)
from agents.orchestrator.agent_specs import spec_role_factory
from agents.orchestrator.offline import AnalysisRules, OfflinePlanner, ReviewRules, offline_rules
from agents.orchestrator.resources import Loaded, load_resources
from agents.roles import builtin_roles
from agents.subagent import install
from swarm.errors import ConfigError
from swarm.llm.budget import DEFAULT_CHARS_PER_TOKEN, context_tokens
from swarm.schema import Plan, Subtask

if TYPE_CHECKING:
    from agents.orchestrator.agent import TurnPolicy
    from swarm import EventSink, RunResult, Swarm
    from swarm.llm.protocol import ChatModel

#: Where the run's settings keep what `resume_solve` needs to rebuild it.
SOLVE_SETTINGS_KEY = "solve"


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

    def __post_init__(self) -> None:
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

    def settings(self) -> dict[str, Any]:
        """What a resume needs (JSON; the model is given again)."""
        # Not `asdict`: it deep-copies the model too (a local one holds sockets and threads).
        keep = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "model"}
        for key in ("out", "corpus", "runs_dir"):
            keep[key] = str(keep[key]) if keep[key] is not None else None
        keep["datasets"] = list(self.datasets)
        keep["defaults"] = dict(self.defaults) if self.defaults is not None else None
        return keep

    @classmethod
    def from_settings(cls, data: Mapping[str, Any], **changes: Any) -> SolveConfig:
        values = dict(data)
        for key in ("out", "corpus", "runs_dir"):
            if values.get(key) is not None:
                values[key] = Path(values[key])
        return cls(**{**values, **changes})


@dataclass
class SolveOutcome:
    """What an orchestrated run produced."""

    run_id: str
    status: str
    answer: str
    out_dir: Path
    paths: dict[str, Path]
    subagents: int
    turns: int
    agents: dict[str, str]
    duration_s: float
    problems: list[str] = field(default_factory=list)


def _policy(config: SolveConfig, loaded: Loaded) -> tuple[TurnPolicy, Any]:
    """The orchestrator's policy, and the offline rules it follows (None with a model)."""
    if config.model is not None:
        policy = ModelTurns(
            max_tokens=config.max_tokens,
            logprobs=config.logprobs,
            context_tokens=config.context_tokens,
        )
        return policy, None
    from agents.widesearch.task import WIDE_TASKS

    rules = offline_rules(
        config.goal,
        corpus=loaded.corpus,
        datasets=config.datasets,
        wide_tasks=lambda: WIDE_TASKS,
    )
    return OfflinePlanner(rules), rules


def _install_roles(
    swarm: Swarm, loaded: Loaded, rules: Any, pool: ThreadPoolExecutor
) -> dict[str, str]:
    """Register the sub-agents' roles; returns the built-in ones with their charges."""
    if isinstance(rules, ReviewRules):
        from agents.review.roles import review_roles

        roles = review_roles()
        planner = roles.get_role("orchestrator").derive(name="review_planner")
        install(swarm, [planner, *(r for n, r in roles.items() if n != "orchestrator")],
                loaded.tools, executor=pool)  # fmt: skip
        return {n: r.system_prompt[:80] for n, r in roles.items() if n != "orchestrator"}
    if isinstance(rules, AnalysisRules):
        from agents.analysis.pipeline import install_analysis_roles

        assert loaded.board is not None
        install_analysis_roles(
            swarm, loaded.board, loaded.tools, pool, planner="analysis_planner", spawn=False
        )
        return {}
    if rules is not None:  # a wide task
        from agents.widesearch.extract import extractor_role

        install(swarm, [extractor_role()], loaded.tools, executor=pool)
        return {"extractor": "reports the rows of the papers that meet a wide task"}
    tools = tuple(loaded.tools)
    builtins = [r.derive(tools=tools) for n, r in builtin_roles().items() if n != "orchestrator"]
    install(swarm, builtins, loaded.tools, executor=pool)
    return {r.name: r.system_prompt.split(". ")[0] for r in builtins}


def _build(
    config: SolveConfig,
    loaded: Loaded,
    pool: ThreadPoolExecutor,
    sinks: Sequence[EventSink],
    extra_settings: Mapping[str, Any],
) -> Swarm:
    from swarm import RunConfig, Swarm

    run_config = RunConfig(
        max_concurrency=config.max_concurrency,
        max_subagents=config.max_subagents,
        max_depth=config.max_depth,
        failure_policy="continue",
    )
    swarm = Swarm(config=run_config, model=config.model, runs_dir=config.runs_dir, sinks=sinks)
    policy, rules = _policy(config, loaded)
    roles = _install_roles(swarm, loaded, rules, pool)
    swarm.set_role_factory(spec_role_factory(loaded.tools, executor=pool))
    context = config.context_tokens or context_tokens(config.model)
    budget = int(context * DEFAULT_CHARS_PER_TOKEN * 0.25)
    agent = OrchestratorAgent(
        loaded.describe(roles, config.corpus),
        policy,
        roles=[r for r in swarm.workers if r != "orchestrator"],
        max_turns=config.max_turns,
        budget_chars=max(2_000, budget),
        context_tokens=context,
        max_tokens=config.max_tokens,
    )
    swarm.add_role("orchestrator", agent, output=OrchestratorOutput)
    swarm.settings = {**extra_settings, SOLVE_SETTINGS_KEY: config.settings()}
    return swarm


def _plan(config: SolveConfig) -> Plan:
    return Plan(
        goal=config.goal,
        subtasks=[
            Subtask(
                id=ORCHESTRATOR_ID,
                role="orchestrator",
                instructions=config.goal,
                inputs={"goal": config.goal},
                timeout_s=config.timeout_s,
                max_retries=1,
            )
        ],
    )


def _write(config: SolveConfig, loaded: Loaded, result: RunResult) -> tuple[str, dict[str, Path]]:
    """answer.md (and, for an offline review or analysis, the pipeline's own files)."""
    out = config.out
    out.mkdir(parents=True, exist_ok=True)
    output = result.outputs.get(ORCHESTRATOR_ID)
    answer = output.get("answer", "") if isinstance(output, dict) else ""
    if not answer:
        res = result.results.get(ORCHESTRATOR_ID)
        why = f"{res.error.type}: {res.error.message}" if res and res.error else "no answer"
        state = res.status.value if res else "did not run"
        answer = f"(no answer: the orchestrator {state}; {why})"
    paths = {"answer.md": out / "answer.md"}
    paths["answer.md"].write_text(answer.rstrip() + "\n", encoding="utf-8")
    if config.model is None and loaded.corpus is not None and "plan" in result.outputs:
        from agents.review.outputs import write_review

        topic = str(result.outputs["plan"].get("topic", "")) if isinstance(
            result.outputs["plan"], dict) else ""  # fmt: skip
        paths.update(write_review(out / "review", loaded.corpus, result, topic=topic).paths)
    return answer, paths


def _outcome(
    config: SolveConfig, loaded: Loaded, result: RunResult, t0: float
) -> SolveOutcome:
    answer, paths = _write(config, loaded, result)
    output = result.outputs.get(ORCHESTRATOR_ID)
    parsed = OrchestratorOutput.model_validate(output) if isinstance(output, dict) else None
    problems = [
        f"{r.id} ({r.role}) {r.status.value}: {r.error.message if r.error else ''}".strip()
        for r in result.results.values()
        if r.status.value != "done"
    ]
    return SolveOutcome(
        run_id=result.run_id,
        status=result.status.value,
        answer=answer,
        out_dir=config.out,
        paths=paths,
        subagents=len(result.results) - 1,
        turns=parsed.turns if parsed else 0,
        agents=dict(parsed.agents) if parsed else {},
        duration_s=time.perf_counter() - t0,
        problems=problems,
    )


def _run(
    config: SolveConfig,
    sinks: Sequence[EventSink],
    resume: str | None,
    extra_settings: Mapping[str, Any] | None = None,
) -> SolveOutcome:
    t0 = time.perf_counter()
    with ThreadPoolExecutor(config.threads, thread_name_prefix="kimmy-solve") as pool:
        loaded = load_resources(
            corpus=config.corpus, datasets=config.datasets, out=config.out, executor=pool,
            defaults=config.defaults, python=config.model is not None,
        )  # fmt: skip
        swarm = _build(config, loaded, pool, sinks, extra_settings or {})
        try:
            if resume is None:
                result = swarm.run_sync(_plan(config))
            else:
                import asyncio

                box: list[RunResult] = []

                async def main() -> None:
                    box.append(await swarm.resume(resume))

                asyncio.run(main())
                result = box[0]
        finally:
            swarm.close()
    return _outcome(config, loaded, result, t0)


def run_solve(
    config: SolveConfig,
    *,
    sinks: Sequence[EventSink] = (),
    extra_settings: Mapping[str, Any] | None = None,
) -> SolveOutcome:
    """Run the orchestrator on the goal to the end; writes `config.out / "answer.md"`.

    `extra_settings` are recorded with the run (the CLI records how to reach the model).

    Raises:
        ConfigError: offline, a goal no rule set plans (the message says how to give a
            model); bad settings.
        CorpusError, EmptyCorpusError: the corpus cannot be read.
    """
    return _run(config, sinks, None, extra_settings)


def resume_solve(
    run_id: str,
    *,
    runs_dir: Path,
    model: ChatModel | None = None,
    sinks: Sequence[EventSink] = (),
) -> SolveOutcome:
    """Continue a stored `run_solve` run (the orchestrator's conversation is restored).

    Raises:
        ConfigError: the run was not made by `run_solve`.
    """
    from swarm.store import RunStore

    with RunStore(runs_dir, create=False) as store:
        stored = store.load_run(run_id)
    settings = stored.settings.get(SOLVE_SETTINGS_KEY)
    if not isinstance(settings, dict):
        raise ConfigError(f"run {stored.run_id} was not made by `kimmy swarm` / run_solve")
    config = SolveConfig.from_settings(settings, model=model, runs_dir=runs_dir)
    extra = {k: v for k, v in stored.settings.items() if k not in config.settings()}
    return _run(config, sinks, stored.run_id, extra)


__all__ = ["SOLVE_SETTINGS_KEY", "SolveConfig", "SolveOutcome", "resume_solve", "run_solve"]
