"""The single-agent baseline of a wide task: one agent, the same model, the same tools
(`search`, `read_document`, `read_metadata`) and the same token cap as the swarm, doing
the whole task in its own conversation — what the swarm is measured against.

    outcome = run_single(goal.words, goal.task, corpus_path, model, token_cap=200_000)
    outcome.answer, outcome.wall_s, outcome.tokens, outcome.steps
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kimmy_swarm.agents.orchestrator.agent_specs import MEETS, AgentSpec, spec_role
from kimmy_swarm.agents.orchestrator.corpus_view import CorpusView, search_tool
from kimmy_swarm.agents.roles import Role
from kimmy_swarm.agents.toolbox import ToolBox
from kimmy_swarm.agents.widesearch.answer import rows_markdown
from kimmy_swarm.agents.widesearch.extract import wide_toolbox
from kimmy_swarm.agents.widesearch.task import ICLR_DEFAULTS, WideTask

if TYPE_CHECKING:
    from kimmy_swarm.swarm.llm.protocol import ChatModel

#: The subtask id (and role) of the single agent.
SINGLE_AGENT = "single_agent"
SINGLE_PROMPT = (
    "You are one agent doing a wide search alone. Find every paper of the corpus that meets "
    "the goal's condition: search the corpus for candidates (search), read each candidate "
    "(read_document; read_metadata for the decision, rating and other fields), and keep one "
    "row per paper that meets the condition, with exactly the requested columns, copied as "
    "written. Answer with all the rows."
)


def single_agent_role(task: WideTask, *, max_steps: int) -> Role:
    """The single agent: its prompt, the three tools, rows of the task's columns."""
    spec = AgentSpec(
        name=SINGLE_AGENT,
        system_prompt=SINGLE_PROMPT,
        tools=("search", "read_document", "read_metadata"),
        output_columns=tuple(task.columns),
    )
    return spec_role(spec).derive(max_steps=max_steps)


@dataclass
class SingleOutcome:
    """What the single agent produced and spent."""

    answer: str
    status: str
    wall_s: float
    tokens: int
    steps: int
    error: str | None = None


def run_single(
    goal: str,
    task: WideTask,
    corpus_path: Path,
    model: ChatModel,
    *,
    token_cap: int | None = None,
    max_steps: int = 60,
    runs_dir: Path | None = None,
    temperature: float | None = 0.0,
) -> SingleOutcome:
    """Run the single agent on `goal` over the corpus; its answer is its rows as a table
    (an agent that ends without an answer answers nothing)."""
    from kimmy_swarm.agents.subagent import install
    from kimmy_swarm.agents.tools.corpus import load_corpus
    from kimmy_swarm.agents.tools.search import SearchIndex
    from kimmy_swarm.swarm import Plan, RunConfig, Subtask, Swarm

    corpus = load_corpus(corpus_path, defaults=ICLR_DEFAULTS)
    index = SearchIndex(corpus.documents)
    tools = wide_toolbox(corpus, index)
    box = ToolBox([*tools.values(), search_tool(CorpusView(corpus, index))])
    config = RunConfig(max_concurrency=1, max_total_tokens=token_cap, temperature=temperature,
                       max_retries=0, timeout_s=24 * 3600.0)  # fmt: skip
    swarm = Swarm(model=model, config=config, runs_dir=runs_dir)
    install(swarm, [single_agent_role(task, max_steps=max_steps)], box, policy="model")
    plan = Plan(goal=goal, subtasks=[Subtask(id=SINGLE_AGENT, role=SINGLE_AGENT,
                                             instructions=goal, inputs={})])  # fmt: skip
    t0 = time.perf_counter()
    try:
        result = swarm.run_sync(plan)
    finally:
        swarm.close()
    wall = time.perf_counter() - t0
    res = result.results.get(SINGLE_AGENT)
    output: Any = result.outputs.get(SINGLE_AGENT)
    rows = output.get("rows", []) if isinstance(output, dict) else []
    kept = [r for r in rows if isinstance(r, dict) and r.get(MEETS) is not False]
    answer = rows_markdown(tuple(task.columns), kept)
    error = f"{res.error.type}: {res.error.message}" if res is not None and res.error else None
    steps = res.usage.model_calls if res is not None else 0
    return SingleOutcome(answer, result.status.value, wall, result.usage.total_tokens, steps,
                         error)  # fmt: skip


__all__ = ["SINGLE_AGENT", "SINGLE_PROMPT", "SingleOutcome", "run_single", "single_agent_role"]
