"""`finish` with a table by reference: the answer's rows are taken from sub-agents' outputs,
not retyped by the orchestrator.

    spec = TableSpec(columns=["title", "first_author"], tasks="all")
    table = assemble(spec, [output_1, output_2, ...])   # outputs in task order
    table.markdown, table.rows, table.dropped

Each output's `field` (default `rows`) is a list of row objects; rows are kept in task order,
rows whose `meets` is false (a document judged not to meet the condition) are left out,
the others projected onto `columns` (keys matched as headers are: "First author" is
`first_author`),
deduplicated by `dedup_by` (default: the first column; the first row of a key wins; titles
compare by letters and digits only) and sorted by `sort_by` when given.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from kimmy_swarm.agents.orchestrator.agent_specs import MEETS
from kimmy_swarm.agents.widesearch.answer import (
    column_id,
    normalize_cell,
    rows_markdown,
    sort_rows,
)


class TableSpec(BaseModel):
    """The answer table to assemble from finished tasks' outputs."""

    model_config = ConfigDict(extra="forbid")

    columns: list[str] = Field(min_length=1, description="The table's columns, in order.")
    tasks: list[str] | Literal["all"] = Field(
        default="all", description='Task ids whose outputs hold rows, or "all".'
    )
    field: str = Field(default="rows", description="The output field that lists the rows.")
    dedup_by: str | None = Field(
        default=None, description="Keep the first row per value of this column (default: "
        "the first column).",
    )  # fmt: skip
    sort_by: str | None = Field(default=None, description="Sort the rows by this column.")
    descending: bool = False

    @model_validator(mode="after")
    def _known_columns(self) -> TableSpec:
        self.columns = list(dict.fromkeys(column_id(c) for c in self.columns))  # once each
        for name in ("dedup_by", "sort_by"):
            value = getattr(self, name)
            if value is not None and column_id(value) not in self.columns:
                raise ValueError(f"{name} {value!r} is not one of the columns {self.columns}")
            if value is not None:
                setattr(self, name, column_id(value))
        return self


@dataclass(frozen=True)
class Table:
    """An assembled table: its Markdown, its rows, and how many rows were dropped as repeats
    or for lacking the key column."""

    markdown: str
    rows: list[dict[str, Any]]
    dropped: int
    outputs: int
    #: Rows left out because their title names no document of the corpus.
    unknown: int = 0


def _rows_of(output: Any, field: str) -> list[dict[str, Any]]:
    value = output.get(field) if isinstance(output, dict) else None
    if not isinstance(value, list):
        return []
    return [{column_id(str(k)): v for k, v in r.items()} for r in value if isinstance(r, dict)]


def assemble(
    spec: TableSpec, outputs: Sequence[Any], *, titles: Collection[str] | None = None
) -> Table:
    """The table of `spec` from `outputs` (the named tasks' outputs, in task order). With
    `titles` (the corpus's, as `title_key`s) and a title column, a row whose title is none
    of them is left out and counted: a sub-agent given 40 documents in one task invented
    "Reinforcement Learning: A Survey", and the answer listed it."""
    from kimmy_swarm.agents.widesearch.answer import title_key

    key_column = spec.dedup_by or spec.columns[0]
    seen: set[Any] = set()
    rows: list[dict[str, Any]] = []
    dropped = unknown = 0
    known = titles if "title" in spec.columns else None
    for output in outputs:
        for raw in _rows_of(output, spec.field):
            if raw.get(MEETS) is False:  # a document judged not to meet the condition
                continue
            if known is not None and title_key(str(raw.get("title") or "")) not in known:
                unknown += 1
                continue
            key = normalize_cell(key_column, raw.get(key_column))
            if key in (None, "") or key in seen:
                dropped += 1
                continue
            seen.add(key)
            rows.append({c: raw.get(c, "") for c in spec.columns})
    if spec.sort_by is not None:
        rows = sort_rows(rows, spec.sort_by, descending=spec.descending)
    return Table(rows_markdown(tuple(spec.columns), rows), rows, dropped, len(outputs), unknown)


__all__ = ["Table", "TableSpec", "assemble"]
