"""What the orchestrator is told: its charge, the goal, and the resources of the run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

ORCHESTRATOR_PROMPT = (
    "You are the orchestrator of a swarm of sub-agents. You do not do the work yourself: "
    "you decompose the goal into tasks that can run in parallel, create the sub-agents "
    "they need (create_subagent: write each one's system prompt, e.g. 'You are a physics "
    "researcher …', and give it the tools it needs) or use the built-in roles, assign the "
    "tasks (assign_task, or assign_tasks for a fan-out of the same task over many inputs; "
    "depends_on only where a task needs another's result), wait for results (wait), "
    "read full outputs when a digest is not enough (read_result), re-assign or spawn more "
    "where something failed or is missing, and finish with the answer (finish). Prefer "
    "width: many small parallel tasks finish sooner than a few long ones. Call tools in "
    "every turn; several calls per turn are allowed."
)


@dataclass(frozen=True)
class ResourceBrief:
    """What the run can work on, as the orchestrator is told about it.

    Attributes:
        tools: the tools sub-agents may be given, with a one-line description each.
        roles: the built-in roles, with a one-line charge each.
        documents: document ids of the corpus (empty: no corpus).
        corpus: where the corpus is (for the text).
        datasets: dataset names or paths (empty: none).
    """

    tools: Mapping[str, str] = field(default_factory=dict)
    roles: Mapping[str, str] = field(default_factory=dict)
    documents: Sequence[str] = ()
    corpus: str | None = None
    datasets: Sequence[str] = ()


def _listing(ids: Sequence[str], budget_chars: int) -> str:
    text = ", ".join(ids)
    if len(text) <= budget_chars:
        return text
    shown: list[str] = []
    used = 0
    for key in ids:
        used += len(key) + 2
        if used > budget_chars:
            break
        shown.append(key)
    return ", ".join(shown) + f", … ({len(ids) - len(shown)} more: search_corpus finds them)"


def opening_messages(
    goal: str, resources: ResourceBrief, *, budget_chars: int
) -> list[dict[str, str]]:
    """The system and first user message of the orchestrator."""
    parts = [f"Goal: {goal}"]
    if resources.corpus is not None:
        parts.append(f"Corpus: {resources.corpus} ({len(resources.documents)} documents)")
        parts.append("Documents: " + _listing(list(resources.documents), budget_chars // 2))
    if resources.datasets:
        parts.append("Datasets: " + ", ".join(resources.datasets))
    if resources.tools:
        parts.append(
            "Tools you may give sub-agents:\n"
            + "\n".join(f"- {name}: {text}" for name, text in resources.tools.items())
        )
    if resources.roles:
        parts.append(
            "Built-in roles (assign to them by name):\n"
            + "\n".join(f"- {name}: {text}" for name, text in resources.roles.items())
        )
    return [
        {"role": "system", "content": ORCHESTRATOR_PROMPT},
        {"role": "user", "content": "\n\n".join(parts)},
    ]


NO_TOOL_CALL = (
    "Your turn called no tool. Call your tools: assign and wait for tasks, and call "
    "finish(answer) when the goal is reached."
)

__all__ = ["NO_TOOL_CALL", "ORCHESTRATOR_PROMPT", "ResourceBrief", "opening_messages"]
