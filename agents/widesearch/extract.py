"""The `extractor` role: the rows of the papers among some documents that meet a wide task.

Offline, its procedure reads each document with the corpus tools (`read_document` for the
title, authors and abstract; `read_metadata` for the decision, citations and rating, only
when the task needs them) and keeps the rows of the papers that match. `serial_rows` is the
serial baseline: one agent that does the same for every document of the corpus, in order.

    inputs = {"doc_ids": ["Sy8gdB9xx", ...], "task": WIDE_TASKS["rl_papers"].model_dump()}

The review toolbox's `read_document` returns no metadata, so `wide_toolbox` adds
`read_metadata` to it; a model-driven extractor needs that tool too for decision, citation
or rating columns.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from kimmy_swarm.agents.review.tools import build_toolbox
from kimmy_swarm.agents.roles import Role
from kimmy_swarm.agents.toolbox import Tool, ToolBox, make_tool
from kimmy_swarm.agents.widesearch.task import Paper, Row, WideTask

if TYPE_CHECKING:
    from kimmy_swarm.agents.loop import Attempt
    from kimmy_swarm.agents.tools.corpus import Corpus
    from kimmy_swarm.agents.tools.search import SearchIndex

#: Tool-calling function: `call(tool_name, **arguments)` (an `Attempt.call`, or a toolbox's).
Call = Callable[..., Any]

EXTRACTOR_PROMPT = (
    "You are an extractor in a wide search. For each document id you are given, read the "
    "document and decide whether the paper meets the task's condition; for each paper that "
    "does, report one row with exactly the requested columns, copying titles and names as "
    "written. Report no row for a paper that does not meet the condition."
)


class ExtractedRows(BaseModel):
    """An extractor's answer: one row per matching paper (keys are the task's columns)."""

    rows: list[dict[str, Any]] = Field(default_factory=list)


def metadata_tool(corpus: Corpus) -> Tool:
    """The `read_metadata(doc_id)` tool over `corpus`."""

    def read_metadata(doc_id: str) -> dict[str, Any]:
        """The metadata of one document: decision, citations, rating, rank, e-mail domains,
        URL and the other record fields."""
        doc = corpus.get(doc_id)
        fields = doc.plain_meta()
        if doc.url:
            fields["url"] = doc.url
        return {"doc_id": doc.id, **fields}

    return make_tool(read_metadata)


def wide_toolbox(corpus: Corpus, index: SearchIndex | None = None) -> ToolBox:
    """The review tools over `corpus` plus `read_metadata`."""
    return ToolBox([*build_toolbox(corpus, index).values(), metadata_tool(corpus)])


def row_of(task: WideTask, doc_id: str, call: Call) -> Row | None:
    """The row of one document if its paper meets the task, else None (one or two calls)."""
    doc = call("read_document", doc_id=doc_id)
    if not task.mentions(doc["title"], doc["text"]):
        return None
    meta = call("read_metadata", doc_id=doc_id) if task.needs_metadata else {}
    paper = Paper.from_parts(doc_id, doc["title"], doc["authors"], doc["text"], meta)
    return task.row(paper) if task.matches(paper) else None


def rows_of(task: WideTask, doc_ids: list[str], call: Call) -> list[Row]:
    """The rows of the matching papers among `doc_ids`, in their order."""
    return [r for d in doc_ids if (r := row_of(task, d, call)) is not None]


def extract_rows(run: Attempt) -> ExtractedRows:
    """The extractor's offline procedure: `inputs` = {"doc_ids": [...], "task": {...}}."""
    task = WideTask.model_validate(run.inputs["task"])
    doc_ids = [str(d) for d in run.inputs.get("doc_ids", [])]
    return ExtractedRows(rows=rows_of(task, doc_ids, run.call))


def extractor_role() -> Role:
    """The `extractor` role (its offline procedure is `extract_rows`)."""
    return Role(
        "extractor",
        EXTRACTOR_PROMPT,
        output=ExtractedRows,
        tools=("read_document", "read_metadata"),
        procedure=extract_rows,
    )


def serial_rows(task: WideTask, corpus: Corpus, tools: ToolBox | None = None) -> list[Row]:
    """The serial baseline: every document of `corpus` in turn, through the same tools."""
    box = tools if tools is not None else wide_toolbox(corpus)

    def call(name: str, /, **arguments: Any) -> Any:
        return box.get_tool(name)(arguments)

    return rows_of(task, corpus.ids, call)


__all__ = [
    "EXTRACTOR_PROMPT",
    "Call",
    "ExtractedRows",
    "extract_rows",
    "extractor_role",
    "metadata_tool",
    "row_of",
    "rows_of",
    "serial_rows",
    "wide_toolbox",
]
