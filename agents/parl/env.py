"""`SpawnEnv`: an orchestrator's completion for a spawn task, carried out and scored.

The completion's tool calls (`action.parse_calls`; `split_documents(extractors)` stands
for the `assign_tasks` that deals the documents round-robin) are the orchestrator's first
turn of a real run: `OrchestratorAgent` carries them out through the runtime's spawn path, waits for
every task it started, and finishes with the merged table of their rows. The sub-agents are
frozen: the `extractor` role's offline procedure, one tool call per document it is given
(`step_latency_s` of simulated work each, so wall-clock follows the steps), failing on a
task without documents or with an unknown id. The run's events become a `Trajectory`,
scored with PARL (`rewards.parl.score`): r_inst over the task's width, r_comp, and r_result
= the F1 of the table (`WideGrader`).

    env = SpawnEnv(corpus)
    rollout = env.run(task, '{"name": "assign_tasks", "arguments": {...}}', step=10)
    rollout.breakdown.total, rollout.breakdown.critical.steps
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kimmy_swarm.agents.loop.tool_calls import Call, calls_response
from kimmy_swarm.agents.orchestrator.agent import OrchestratorAgent, OrchestratorOutput
from kimmy_swarm.agents.orchestrator.prompts import ResourceBrief
from kimmy_swarm.agents.parl.action import parse_calls
from kimmy_swarm.agents.parl.tasks import EXTRACTOR, SpawnTask
from kimmy_swarm.agents.roles import Role
from kimmy_swarm.agents.subagent import install
from kimmy_swarm.agents.widesearch.answer import rows_markdown
from kimmy_swarm.agents.widesearch.extract import ExtractedRows, rows_of, wide_toolbox
from kimmy_swarm.agents.widesearch.grader import WideGrader
from kimmy_swarm.agents.widesearch.task import Paper
from kimmy_swarm.rewards.parl import RewardBreakdown, Schedule, score
from kimmy_swarm.rewards.trajectory import Trajectory, build_trajectory
from kimmy_swarm.swarm.errors import UserError
from kimmy_swarm.swarm.llm.types import ChatResponse
from kimmy_swarm.swarm.schema import Plan, Subtask

if TYPE_CHECKING:
    from kimmy_swarm.agents.loop import Attempt
    from kimmy_swarm.agents.orchestrator.actions import Actions
    from kimmy_swarm.agents.tools.corpus import Corpus
    from kimmy_swarm.swarm.context import SubtaskContext
    from kimmy_swarm.swarm.events import Event

#: The orchestrator's subtask id in a spawn rollout.
ORCHESTRATOR = "orchestrator"


def frozen_extractor(task: SpawnTask, step_latency_s: float = 0.0) -> Role:
    """The `extractor` of one task: its offline procedure, one `read_document` per id."""

    def extract(run: Attempt) -> ExtractedRows:
        doc_ids = run.inputs.get("doc_ids")
        if not isinstance(doc_ids, list) or not doc_ids:
            raise UserError(f"inputs need a non-empty list 'doc_ids'; got {run.inputs!r}")

        def call(name: str, /, **arguments: Any) -> Any:
            if step_latency_s > 0:
                time.sleep(step_latency_s)
            return run.call(name, **arguments)

        return ExtractedRows(rows=rows_of(task.wide, [str(d) for d in doc_ids], call))

    return Role(
        EXTRACTOR,
        "You report the row of every document you are given that meets the task.",
        output=ExtractedRows,
        tools=("read_document",),
        procedure=extract,
    )


def expand_split(task: SpawnTask, calls: Sequence[Call]) -> list[Call]:
    """The calls with each `split_documents(extractors=k)` as the `assign_tasks` it stands
    for (k extractors, documents dealt round-robin); other calls as they are. A bad `k`
    stays a `split_documents` call, which the run refuses as an unknown tool."""
    out: list[Call] = []
    for name, args in calls:
        k = args.get("extractors")
        if name != "split_documents" or isinstance(k, bool) or not isinstance(k, int) or k < 1:
            out.append((name, args))
            continue
        job = "Report the row of every document you are given that meets the task."
        inputs = [{"doc_ids": part} for part in task.split(k)]
        out.append(("assign_tasks", {"agent": EXTRACTOR, "task": job, "inputs_list": inputs}))
    return out


@dataclass
class DecisionTurns:
    """The orchestrator policy of a rollout: the completion's calls as its first turn,
    then `wait` for everything, then `finish` with the merged rows."""

    calls: list[Call]
    text: str
    name: str = "model"

    async def next_turn(
        self, ctx: SubtaskContext, messages: Sequence[dict[str, Any]], actions: Actions
    ) -> ChatResponse:
        turn = actions.state.turns + 1
        if turn == 1:
            decided = calls_response(self.calls, turn)
            return ChatResponse(content=self.text, tool_calls=decided.tool_calls)
        if turn == 2 and actions.state.tasks:
            return calls_response([("wait", {"ids": "all"})], turn)
        rows: list[dict[str, Any]] = []
        for key in actions.state.tasks:
            result = await actions.result_of(key)
            if result is not None and isinstance(result.output, dict):
                rows += [r for r in result.output.get("rows", []) if isinstance(r, dict)]
        answer = rows_markdown(("title",), rows) if rows else "(no rows)"
        return calls_response([("finish", {"answer": answer})], turn)


@dataclass
class SpawnRollout:
    """One completion carried out: its calls, the run, and its PARL reward."""

    task: SpawnTask
    completion: str
    calls: list[Call]
    trajectory: Trajectory
    breakdown: RewardBreakdown
    wide: dict[str, float] = field(default_factory=dict)

    @property
    def spawned(self) -> int:
        """Sub-agents started (the orchestrator not counted)."""
        return sum(e.started and e.parent is not None for e in self.trajectory.episodes.values())

    @property
    def completed(self) -> int:
        """Started sub-agents whose output is valid and used."""
        return sum(
            e.started and e.parent is not None and e.output_valid and e.output_used
            for e in self.trajectory.episodes.values()
        )

    def metrics(self) -> dict[str, Any]:
        """The figures of the rollout, JSON-ready (for metrics files and tables)."""
        b, c = self.breakdown, self.breakdown.critical
        return {
            "task": self.task.id,
            "calls": [name for name, _ in self.calls],
            "spawned": self.spawned,
            "completed": self.completed,
            "r_inst": b.r_inst,
            "r_comp": b.r_comp,
            "r_result": b.r_result,
            "total": b.total,
            "critical_steps": c.steps,
            "serial_steps": c.serial_steps,
            "wall_s": c.wall_s,
            **{f"wide_{k}": v for k, v in self.wide.items()},
        }


class _Collect:
    def __init__(self) -> None:
        self.events: list[Event] = []

    def handle(self, event: Event) -> None:
        self.events.append(event)


class SpawnEnv:
    """Carries out orchestrator completions for spawn tasks over one corpus.

    Args:
        corpus: the corpus the tasks' documents come from.
        step_latency_s: simulated work per document read by a frozen extractor.
        max_concurrency: sub-agents in flight per rollout.
        threads: the pool the extractors' procedures run in (shared by rollouts).
    """

    def __init__(
        self,
        corpus: Corpus,
        *,
        step_latency_s: float = 0.0,
        max_concurrency: int = 64,
        threads: int = 16,
    ) -> None:
        if step_latency_s < 0:
            raise UserError(f"step_latency_s must be ≥ 0; got {step_latency_s!r}")
        self.corpus = corpus
        self.step_latency_s = step_latency_s
        self.max_concurrency = max_concurrency
        self.tools = wide_toolbox(corpus)
        self._pool = ThreadPoolExecutor(threads, thread_name_prefix="kimmy-parl")

    def close(self) -> None:
        self._pool.shutdown(wait=True)

    def __enter__(self) -> SpawnEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def papers(self, task: SpawnTask) -> list[Paper]:
        return [Paper.from_document(self.corpus.get(d)) for d in task.doc_ids]

    async def arun(
        self,
        task: SpawnTask,
        completion: str,
        *,
        step: int = 0,
        lambda1: Schedule | float | None = None,
        lambda2: Schedule | float | None = None,
    ) -> SpawnRollout:
        """Carry out `completion` (the orchestrator's first turn) for `task` and score it.

        `step`, `lambda1`, `lambda2`: as `rewards.parl.score` (r_inst saturates at the
        task's width).
        """
        from kimmy_swarm.swarm import RunConfig, Swarm

        calls = expand_split(task, parse_calls(completion))
        sink = _Collect()
        config = RunConfig(
            max_concurrency=self.max_concurrency,
            max_subagents=4 * task.width + 1,
            failure_policy="continue",
        )
        swarm = Swarm(config=config, sinks=[sink])
        install(swarm, [frozen_extractor(task, self.step_latency_s)], self.tools,
                executor=self._pool)  # fmt: skip
        agent = OrchestratorAgent(
            ResourceBrief(), DecisionTurns(calls, completion), roles=[EXTRACTOR], max_turns=3
        )
        swarm.add_role(ORCHESTRATOR, agent, output=OrchestratorOutput)
        goal = task.goal()
        plan = Plan(
            goal=goal,
            subtasks=[Subtask(id=ORCHESTRATOR, role=ORCHESTRATOR, instructions=goal,
                              inputs={"goal": goal}, max_retries=0)],
        )  # fmt: skip
        try:
            await swarm.execute(plan)
        finally:
            swarm.close()
        traj = build_trajectory(sink.events, plan=plan)
        grader = WideGrader(task.wide, self.papers(task))
        breakdown = score(
            traj, grader, step=step, lambda1=lambda1, lambda2=lambda2, width=task.width
        )
        return SpawnRollout(task, completion, calls, traj, breakdown, grader.parts(traj))

    def run(self, task: SpawnTask, completion: str, **kwargs: Any) -> SpawnRollout:
        """`arun` for synchronous callers."""
        return asyncio.run(self.arun(task, completion, **kwargs))

    async def arun_many(
        self, items: Sequence[tuple[SpawnTask, str]], **kwargs: Any
    ) -> list[SpawnRollout]:
        """Several rollouts at once (concurrently), in order."""
        return list(await asyncio.gather(*(self.arun(t, c, **kwargs) for t, c in items)))


def load_spawn_env(corpus_path: str | Path, **options: Any) -> SpawnEnv:
    """A `SpawnEnv` over the corpus at `corpus_path` (ICLR 2017 defaults for JSON records)."""
    from kimmy_swarm.agents.tools.corpus import load_corpus
    from kimmy_swarm.agents.widesearch.task import ICLR_DEFAULTS

    return SpawnEnv(load_corpus(Path(corpus_path), defaults=ICLR_DEFAULTS), **options)


def calls_json(calls: Sequence[Call]) -> str:
    """Calls as our engine writes them, one JSON object per line (for tests and docs)."""
    return "\n".join(json.dumps({"name": n, "arguments": a}) for n, a in calls)


__all__ = [
    "ORCHESTRATOR",
    "DecisionTurns",
    "SpawnEnv",
    "SpawnRollout",
    "calls_json",
    "expand_split",
    "frozen_extractor",
    "load_spawn_env",
]
