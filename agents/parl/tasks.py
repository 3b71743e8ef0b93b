"""Wide spawn tasks: what a PARL-trained orchestrator learns on.

A `SpawnTask` asks for every document among N given ones that meets a wide task's
condition (`agents.widesearch.task.WideTask`: the title or abstract mentions a phrase), as
a table. The N checks are independent, so the better policy is to fan out: one extractor
sub-agent per document finishes in 2 critical steps, one extractor for all N documents (the
serial collapse) in N + 1, and extractors beyond N have nothing to read (spurious spawns).

The orchestrator decides with one tool call, in one of two action sets (`SpawnTask.actions`):

- "split": `split_documents(extractors)` — the documents are dealt round-robin to that
  many extractors. The decision is the width itself, in a few tokens: what a small model
  can learn on a CPU.
- "lists": `assign_tasks(agent, task, inputs_list)` with one `{"doc_ids": [...]}` per
  extractor, or `assign_task(agent, task, inputs)` for a single one — the orchestrator's
  own tools, ids copied by the model.

    tasks = make_spawn_tasks(corpus, count=32, width=6, seed=0)
    messages = spawn_messages(tasks[0])              # what the orchestrator is asked
    tools = spawn_tools()                            # the two calls it may make

Tasks are JSON (`SpawnTask.model_dump`) so they travel in datasets (TRL, verl) and task files.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from kimmy_swarm.agents.widesearch.task import Paper, WideTask
from kimmy_swarm.swarm.errors import UserError
from kimmy_swarm.swarm.llm.types import function_tool

if TYPE_CHECKING:
    from kimmy_swarm.agents.tools.corpus import Corpus

#: The `env` name of spawn tasks (`rewards.envs` registry, dataset rows).
SPAWN_ENV = "kimmy/wide_spawn"
#: The sub-agent role the orchestrator assigns to (frozen: its offline procedure).
EXTRACTOR = "extractor"

#: The two action sets (see the module docstring).
ACTION_SETS = ("split", "lists")
_CHARGE = (
    "You are the orchestrator of a swarm of sub-agents. You do not read documents "
    "yourself: extractor sub-agents do. Extractors run in parallel with each other; one "
    "extractor reads its documents one after another. Answer with one tool call. "
)
SPAWN_SYSTEM_PROMPTS = {
    "split": _CHARGE + "split_documents(extractors) deals the documents round-robin to "
    "that many extractors.",
    "lists": _CHARGE + "assign_tasks(agent, task, inputs_list) starts one extractor per "
    'inputs object, each {"doc_ids": [...]} with the documents it reads; assign_task(agent, '
    'task, inputs) starts a single extractor with inputs {"doc_ids": [...]}. The agent is '
    f"'{EXTRACTOR}'. Every document must be read by some extractor.",
}


class SpawnTaskError(UserError):
    """Spawn tasks cannot be made from a corpus as asked (too few documents, no phrase)."""


class SpawnTask(BaseModel):
    """One wide spawn task (JSON round-trips exactly).

    Attributes:
        id: the task's id (unique within a task set).
        wide: the condition and columns.
        doc_ids: the documents to check, in order.
        truth: the rows of the documents that meet the condition (the ground truth).
        corpus: where the corpus is (a file or folder), so that a reward function that
            gets only the task (TRL, verl) can carry it out; None when not known.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1)
    env: str = SPAWN_ENV
    actions: Literal["split", "lists"] = "split"
    wide: WideTask
    doc_ids: tuple[str, ...] = Field(min_length=1)
    truth: tuple[dict[str, Any], ...] = ()
    corpus: str | None = None

    @property
    def width(self) -> int:
        """The number of independent checks: where r_inst saturates."""
        return len(self.doc_ids)

    def goal(self) -> str:
        """The goal in words (the orchestrator's first user message)."""
        return (
            f"For every document among the {self.width} below "
            f"{self.wide.condition()}, give a table with the column 'title'. "
            "Documents: " + ", ".join(self.doc_ids)
        )

    def split(self, extractors: int) -> list[list[str]]:
        """The documents dealt round-robin to `extractors` extractors (empty lists for the
        ones past the number of documents)."""
        return [list(self.doc_ids[i::extractors]) for i in range(extractors)]


def spawn_messages(task: SpawnTask) -> list[dict[str, str]]:
    """The orchestrator's prompt: the system message and the task."""
    return [
        {"role": "system", "content": SPAWN_SYSTEM_PROMPTS[task.actions]},
        {"role": "user", "content": task.goal()},
    ]


def _schema(doc_ids: bool = True) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"doc_ids": {"type": "array", "items": {"type": "string"}}},
        "required": ["doc_ids"] if doc_ids else [],
        "additionalProperties": False,
    }


#: The most extractors `split_documents` may ask for, per document of the task.
MAX_SPLIT_PER_DOC = 4


def spawn_tools(task: SpawnTask) -> list[dict[str, Any]]:
    """The tools of the task's action set. "lists": a subset of the orchestrator's
    `assign_tasks` / `assign_task` arguments, so the run's own tools carry them out;
    "split": `split_documents`, carried out as the `assign_tasks` it stands for."""
    if task.actions == "split":
        extractors = {"type": "integer", "minimum": 1,
                      "maximum": MAX_SPLIT_PER_DOC * task.width}  # fmt: skip
        params = {
            "type": "object",
            "properties": {"extractors": extractors},
            "required": ["extractors"],
            "additionalProperties": False,
        }
        return [function_tool("split_documents", "Deal the documents to extractors.", params)]
    agent = {"type": "string", "enum": [EXTRACTOR]}
    job = {"type": "string", "minLength": 1}
    fan_out = {
        "type": "object",
        "properties": {
            "agent": agent, "task": job,
            "inputs_list": {"type": "array", "items": _schema(), "minItems": 1},
        },
        "required": ["agent", "task", "inputs_list"],
        "additionalProperties": False,
    }  # fmt: skip
    single = {
        "type": "object",
        "properties": {"agent": agent, "task": job, "inputs": _schema()},
        "required": ["agent", "task", "inputs"],
        "additionalProperties": False,
    }
    described = [
        ("assign_tasks", "Start one extractor per inputs object; they run in parallel.", fan_out),
        ("assign_task", "Start one extractor with the given inputs.", single),
    ]
    return [function_tool(n, d, p) for n, d, p in described]


_WORD = re.compile(r"[A-Za-z][a-z]{4,}")


def _phrases(papers: Sequence[Paper]) -> list[str]:
    """Words in some but not all of the papers (at least one paper each way), most even
    split first: a condition that needs every document read."""
    n = len(papers)
    seen: Counter[str] = Counter()
    for p in papers:
        seen.update({w.lower() for w in _WORD.findall(f"{p.title} {p.abstract}")})
    good = [(abs(c - n / 2), w) for w, c in seen.items() if 0 < c < n]
    return [w for _, w in sorted(good)]


def make_spawn_tasks(
    corpus: Corpus,
    *,
    count: int,
    width: int,
    seed: int = 0,
    prefix: str = "task",
    actions: Literal["split", "lists"] = "split",
    source: str | Path | None = None,
) -> list[SpawnTask]:
    """`count` tasks of `width` documents each, drawn from `corpus` with `seed`.

    Each task's phrase is a word that some but not all of its documents mention (one of
    the most evenly split), so its answer needs every document checked. `source` is the
    corpus's path, recorded in each task (`SpawnTask.corpus`).

    Raises:
        SpawnTaskError: `count` below 1, `width` below 2, an unknown action set, or a corpus
            with fewer than `width` documents.
    """
    if actions not in ACTION_SETS:
        raise SpawnTaskError(f"actions must be one of {', '.join(ACTION_SETS)}; got {actions!r}")
    if count < 1 or width < 2:
        raise SpawnTaskError(f"count must be ≥ 1 and width ≥ 2; got count={count}, width={width}")
    docs = [d for d in corpus if d.title.strip()]
    if len(docs) < width:
        raise SpawnTaskError(
            f"the corpus has {len(docs)} documents with a title; a task of width {width} "
            f"needs at least {width}"
        )
    rng = random.Random(seed)
    tasks: list[SpawnTask] = []
    attempts = 0
    while len(tasks) < count:
        attempts += 1
        if attempts > count * 20:
            raise SpawnTaskError(
                f"no word splits the documents of {width}-document draws from this corpus "
                f"({len(tasks)} of {count} tasks made): use another corpus or width"
            )
        picked = rng.sample(docs, width)
        papers = [Paper.from_document(d) for d in picked]
        phrases = _phrases(papers)
        if not phrases:
            continue
        phrase = rng.choice(phrases[:5])
        wide = WideTask(name=f"{prefix}{len(tasks)}", phrases=(phrase,), columns=("title",))
        tasks.append(
            SpawnTask(
                id=f"{prefix}{len(tasks)}",
                actions=actions,
                wide=wide,
                doc_ids=tuple(p.id for p in papers),
                truth=tuple(wide.ground_truth(papers)),
                corpus=str(source) if source is not None else None,
            )
        )
    return tasks


__all__ = [
    "ACTION_SETS",
    "EXTRACTOR",
    "MAX_SPLIT_PER_DOC",
    "SPAWN_ENV",
    "SPAWN_SYSTEM_PROMPTS",
    "SpawnTask",
    "SpawnTaskError",
    "make_spawn_tasks",
    "spawn_messages",
    "spawn_tools",
]
