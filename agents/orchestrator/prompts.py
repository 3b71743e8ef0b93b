"""What the orchestrator is told: its charge, the goal, and the resources of the run."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

_CHARGE = """\
You are the orchestrator of a swarm of sub-agents. You never do the work yourself: you split \
the goal into many small tasks that run in parallel, give them to sub-agents, wait for their \
results and finish with the answer. Call tools in every turn; several calls per turn are \
allowed and run in order.

In your first turn:
1. create_subagent(name, system_prompt, tools, output_columns): the sub-agent that does one \
small piece of the work; its system prompt says exactly what to check and what to report.
2. fan_out(agent, task, query | ids | all_documents, where, per_task) with that agent's name: \
each task gets a few documents, without you listing them{assign}. \
Phrases the goal asks for go in query, quoted ('dropout'): it keeps the documents whose \
title or text mentions one. Conditions on the other fields (a decision, e-mail domains, \
numbers) go in where, as {"field", "op", "value"}: they are checked for you, so the \
sub-agent judges the rest only.
3. wait(ids="all"): a digest of every result.
In your next turn:
4. finish(table={"columns": [the columns the goal asks for]}) assembles the rows the \
sub-agents reported (never retype rows); for an answer in words, finish(answer="...").
search(query) tells how many documents match a query, when you need to know. Prefer width: \
many small tasks finish sooner than a few long ones."""

#: What the orchestrator is told it does, and how (with the tools a corpus run offers).
ORCHESTRATOR_PROMPT = _CHARGE.replace("{assign}", " (assign_task gives one task)")
#: The same for a model with a small context, offered no `assign_task`.
COMPACT_ORCHESTRATOR_PROMPT = _CHARGE.replace("{assign}", "")

#: The worked example's goal (a run with a corpus is shown it as earlier turns).
EXAMPLE_GOAL = (
    "List every accepted paper with an author at mit.edu whose abstract mentions 'dropout', "
    "with its title and first author."
)
_EXAMPLE_PROMPT = (
    "For each document id in doc_ids: read it with read_document. If its abstract mentions "
    "'dropout' (the whole word, any case), report one row with its title and its first "
    "author, copied exactly. Report no row for the other documents."
)
#: The example fan-out's conditions. A small model copies them into its own goal's calls
#: (the 0.5B searched for "decision Accept, emails mit.edu" nine turns in a row on a goal
#: that names neither): the orchestrator's tools drop a copied one the goal does not say
#: (`agents.orchestrator.actions`).
EXAMPLE_WHERE: tuple[dict[str, str], ...] = (
    {"field": "decision", "op": "contains", "value": "Accept"},
    {"field": "emails", "op": "contains", "value": "mit.edu"},
)
#: What opens the first message after the example (the run's own conversation starts there).
EXAMPLE_DONE = (
    "The example is done, and its sub-agents are gone: create your own sub-agent first. "
    "Now your goal."
)
#: The example's tool calls, turn by turn, with the results the tools gave.
EXAMPLE_TURNS: tuple[tuple[tuple[str, dict[str, Any], dict[str, Any]], ...], ...] = (
    (
        ("create_subagent", {"name": "dropout_extractor", "system_prompt": _EXAMPLE_PROMPT,
                             "tools": ["read_document"],
                             "output_columns": ["title", "first_author"]},
         {"created": "dropout_extractor", "tools": ["read_document"]}),
        ("fan_out", {"agent": "dropout_extractor", "task": "Report the rows of your "
                     "documents that meet the condition.", "query": "'dropout'",
                     "where": [dict(c) for c in EXAMPLE_WHERE],
                     "per_task": 2},
         {"task_ids": ["t1", "t2"], "documents": 4, "tasks": 2}),
        ("wait", {"ids": "all"},
         {"results": [
             {"id": "t1", "agent": "dropout_extractor", "status": "done",
              "output": '{"rows":[{"meets":true,"title":"Dropout as regularization",'
                        '"first_author":"A. Author"}]}'},
             {"id": "t2", "agent": "dropout_extractor", "status": "done",
              "output": '{"rows":[{"meets":false,"title":"Stochastic depth",'
                        '"first_author":"B. Author"}]}'},
         ], "pending": []}),
    ),
    (
        ("finish", {"table": {"columns": ["title", "first_author"]}},
         {"finished": True, "rows": 1, "repeats_dropped": 0, "failed_tasks": 0}),
    ),
)  # fmt: skip


def example_messages() -> list[dict[str, Any]]:
    """The worked example as earlier turns of the conversation (a small model follows what
    it has seen done better than what it is told): the example's goal, then each turn's
    tool calls and their results, in the chat API's shape."""
    out: list[dict[str, Any]] = [
        {
            "role": "user",
            "content": f"Example goal: {EXAMPLE_GOAL}\n\nCorpus: 9 documents. "
            "Fields: title, authors, text, decision (one of: Accept, "
            "Reject), emails (lists, e.g. mit.edu, cmu.edu).",
        }
    ]
    for number, turn in enumerate(EXAMPLE_TURNS, start=1):
        calls = [
            {"id": f"example_{number}_{i}", "type": "function",
             "function": {"name": name, "arguments": json.dumps(args)}}
            for i, (name, args, _) in enumerate(turn)
        ]  # fmt: skip
        out.append({"role": "assistant", "content": "", "tool_calls": calls})
        out += [
            {"role": "tool", "tool_call_id": call["id"], "content": json.dumps(result)}
            for call, (_, _, result) in zip(calls, turn, strict=True)
        ]
    return out


@dataclass(frozen=True)
class ResourceBrief:
    """What the run can work on, as the orchestrator is told about it.

    Attributes:
        tools: the tools sub-agents may be given, with a one-line description each.
        roles: the built-in roles, with a one-line charge each.
        documents: document ids of the corpus (empty: no corpus).
        corpus: where the corpus is (for the text).
        datasets: dataset names or paths (empty: none).
        fields: the fields of the corpus's records (title, authors, text, metadata keys).
    """

    tools: Mapping[str, str] = field(default_factory=dict)
    roles: Mapping[str, str] = field(default_factory=dict)
    documents: Sequence[str] = ()
    corpus: str | None = None
    datasets: Sequence[str] = ()
    fields: Sequence[str] = ()


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
    return ", ".join(shown) + f", … ({len(ids) - len(shown)} more: search finds them)"


def _first_sentence(text: str) -> str:
    flat = " ".join(text.split())
    cut = flat.find(". ")
    return flat if cut < 0 else flat[: cut + 1]


def opening_messages(
    goal: str, resources: ResourceBrief, *, budget_chars: int, compact: bool = False
) -> list[dict[str, Any]]:
    """The system and first user message of the orchestrator; with a corpus, the worked
    example between them. `compact` (a model whose context the whole opening would crowd):
    no example, and a charge that names no `assign_task`."""
    parts = [f"Goal: {goal}"]
    if resources.corpus is not None:
        parts.append(f"Corpus: {resources.corpus} ({len(resources.documents)} documents)")
        if resources.fields:
            parts.append(
                "Fields of each document (for where, and for output_columns: name a column "
                "after the field it copies):\n" + "\n".join(f"- {f}" for f in resources.fields)
            )
        parts.append("Documents: " + _listing(list(resources.documents), budget_chars // 8))
    if resources.datasets:
        parts.append("Datasets: " + ", ".join(resources.datasets))
    if resources.tools:
        parts.append(
            "Tools you may give sub-agents:\n"
            + "\n".join(f"- {name}: {_first_sentence(text)}" for name, text in
                        resources.tools.items())
        )  # fmt: skip
    if resources.roles and resources.corpus is None:
        # With a corpus the example shows sub-agents made for the goal; a list of generic
        # roles beside it only draws a small model away from that.
        parts.append(
            "Built-in roles (assign tasks to them by name; do not create them): "
            + "; ".join(f"{name} ({_first_sentence(text)})" for name, text in
                        resources.roles.items())
        )  # fmt: skip
    charge = COMPACT_ORCHESTRATOR_PROMPT if compact else ORCHESTRATOR_PROMPT
    opening: list[dict[str, Any]] = [{"role": "system", "content": charge}]
    if resources.corpus is not None and not compact:
        opening += example_messages()
        parts.insert(0, EXAMPLE_DONE)
    return [*opening, {"role": "user", "content": "\n\n".join(parts)}]


NO_TOOL_CALL = (
    "Your turn called no tool. Call your tools: assign and wait for tasks, and call "
    "finish(answer) when the goal is reached."
)

__all__ = [
    "COMPACT_ORCHESTRATOR_PROMPT",
    "EXAMPLE_DONE",
    "EXAMPLE_GOAL",
    "EXAMPLE_TURNS",
    "EXAMPLE_WHERE",
    "NO_TOOL_CALL",
    "ORCHESTRATOR_PROMPT",
    "ResourceBrief",
    "example_messages",
    "opening_messages",
]
