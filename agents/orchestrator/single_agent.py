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

from kimmy_swarm.agents.orchestrator.agent_specs import MEETS, AgentSpec, rows_schema, spec_role
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
#: What the single agent is told it does, and how: the orchestrator's own advice on
#: `search` (phrases in query, other conditions in where), then reading each document found.
SINGLE_PROMPT = """\
You are one agent doing a wide search alone: find every document of the corpus that meets \
the goal, and report the columns the goal asks for. Work in this order:
1. search(query, where, limit=100): phrases the goal asks for go in query, quoted \
('dropout'): it keeps the documents whose title or text mentions one. Conditions on the \
other fields (a decision, e-mail domains, numbers) go in where, as {"field", "op", \
"value"}: they are checked for you. It returns the ids and titles of the documents found.
2. For each id found: read_document(id) (read_metadata(id) for fields such as citations, \
decision or rating), and check that the document meets the goal.
3. Answer with the rows of the documents that meet the goal."""


def single_rows_format(columns: tuple[str, ...] | list[str]) -> str:
    """How the single agent's answer looks: the rows of the documents it found."""
    row = ", ".join(f'"{c}": …' for c in columns)
    return (
        f'Your answer is {{"rows": [{{"{MEETS}": true, {row}}}, …]}}: one row for each '
        "document that meets the goal, its values copied from the document; no row for the "
        "others."
    )


def single_agent_role(task: WideTask, *, max_steps: int) -> Role:
    """The single agent: its prompt, the three tools, rows of the task's columns."""
    spec = AgentSpec(
        name=SINGLE_AGENT,
        system_prompt=SINGLE_PROMPT + "\n\n" + single_rows_format(task.columns),
        tools=("search", "read_document", "read_metadata"),
        output_schema=rows_schema(task.columns),
    )
    # its first turn searches, and only that: free, a 1.5B answers from memory at once;
    # made to call some tool, it searches and reads ids it invents ("1", "2", …) in one turn
    return spec_role(spec).derive(max_steps=max_steps, first_tool="search")


def single_instructions(goal: str, view: CorpusView, columns: tuple[str, ...] | list[str]) -> str:
    """The single agent's task: the goal, and the corpus as the orchestrator is told of it
    (its size and fields), with the columns of the answer's rows."""
    fields = "\n".join(f"- {f}" for f in view.field_hints())
    return (
        f"Goal: {goal}\n\nCorpus: {len(view.corpus.ids)} documents. Fields of each document "
        f"(for where):\n{fields}\n\nColumns of each row: {', '.join(columns)}"
    )


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
    view = CorpusView(corpus, index)
    box = ToolBox([*tools.values(), search_tool(view)])
    config = RunConfig(max_concurrency=1, max_total_tokens=token_cap, temperature=temperature,
                       max_retries=0, timeout_s=24 * 3600.0)  # fmt: skip
    swarm = Swarm(model=model, config=config, runs_dir=runs_dir)
    install(swarm, [single_agent_role(task, max_steps=max_steps)], box, policy="model")
    task_text = single_instructions(goal, view, task.columns)
    plan = Plan(goal=goal, subtasks=[Subtask(id=SINGLE_AGENT, role=SINGLE_AGENT,
                                             instructions=task_text, inputs={})])  # fmt: skip
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


__all__ = [
    "SINGLE_AGENT",
    "SINGLE_PROMPT",
    "SingleOutcome",
    "run_single",
    "single_agent_role",
    "single_instructions",
    "single_rows_format",
]
