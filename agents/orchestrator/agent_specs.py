"""Sub-agents the orchestrator creates at run time: their spec, and the worker built from it.

`create_subagent` gives a name, a system prompt (e.g. "You are a physics researcher …"),
the tools it may call and optionally the JSON schema of its answer. Each task assigned to
it is a subtask whose `role_spec` holds that spec, so the swarm's role factory
(`spec_role_factory`) rebuilds its `SubAgent` wherever the subtask runs — after a resume
too. No predefined role is needed; the built-in roles stay available by name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from concurrent.futures import Executor
from typing import TYPE_CHECKING, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    RootModel,
    ValidationError,
    field_validator,
    model_validator,
)

from kimmy_swarm.agents.roles import Answer, Role
from kimmy_swarm.agents.subagent import SubAgent
from kimmy_swarm.swarm.schema import ROLE_PATTERN

if TYPE_CHECKING:
    from kimmy_swarm.agents.loop import Attempt
    from kimmy_swarm.agents.toolbox import ToolBox
    from kimmy_swarm.swarm.schema import Subtask
    from kimmy_swarm.swarm.worker import Worker

#: The most model turns of a created sub-agent.
DEFAULT_MAX_STEPS = 8


class AgentSpec(BaseModel):
    """A sub-agent made at run time (what `create_subagent` takes)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=ROLE_PATTERN, description="Its role name: letters, digits, _ . -")
    system_prompt: str = Field(min_length=1, description="Its system prompt, in full.")
    tools: tuple[str, ...] = Field(default=(), description="Tools it may call.")
    output_schema: dict[str, Any] | None = Field(
        default=None, description="JSON schema of its answer (default: {answer, sources})."
    )
    output_columns: tuple[str, ...] | None = Field(
        default=None,
        description='Its answer is {"rows": [{"meets": bool, column: value, ...}]}: a row per '
        "document, these columns.",
    )

    @model_validator(mode="after")
    def _one_answer_form(self) -> AgentSpec:
        if self.output_schema is not None and self.output_columns is not None:
            raise ValueError("give output_schema or output_columns, not both")
        if self.output_columns is not None and not self.output_columns:
            raise ValueError("output_columns is empty: name the columns of its rows")
        if self.output_columns is not None:  # a column named twice is one column
            object.__setattr__(self, "output_columns", tuple(dict.fromkeys(self.output_columns)))
        return self

    @property
    def answer_schema(self) -> dict[str, Any] | None:
        """The JSON schema of its answer (None: the default {answer, sources})."""
        if self.output_columns is not None:
            return rows_schema(self.output_columns)
        return self.output_schema

    @field_validator("output_schema")
    @classmethod
    def _a_json_schema(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is None:
            return None
        from jsonschema import Draft202012Validator
        from jsonschema.exceptions import SchemaError

        try:
            Draft202012Validator.check_schema(value)
        except SchemaError as exc:
            raise ValueError(f"output_schema is not a JSON schema: {exc.message}") from None
        return value


#: The field of a row that says whether its document meets the task's condition (a row per
#: document, each judged, reads more reliably from a small model than a filtered list).
MEETS = "meets"


def rows_format(columns: tuple[str, ...] | list[str]) -> str:
    """How a rows answer looks, as a small model reads it best: an example object."""
    row = ", ".join(f'"{c}": …' for c in columns)
    return (
        f'Your answer is {{"rows": [{{"{MEETS}": true or false, {row}}}, …]}}: one row for '
        f'each document you are given, in order; "{MEETS}" says whether that document meets '
        "the condition; the other values are copied from the document."
    )


def rows_schema(columns: tuple[str, ...] | list[str]) -> dict[str, Any]:
    """The JSON schema of an answer {"rows": [...]} whose rows have `meets` (a boolean) and
    exactly `columns` (each a string, a number or null)."""
    cell = {"type": ["string", "number", "integer", "null"]}
    row = {
        "type": "object",
        "properties": {MEETS: {"type": "boolean"}, **{c: cell for c in columns}},
        "required": [MEETS, *columns],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {"rows": {"type": "array", "items": row}},
        "required": ["rows"],
        "additionalProperties": False,
    }


def rows_brief(columns: tuple[str, ...] | list[str]) -> Any:
    """The brief of a rows answer (`agents.brief`): for a task given its documents
    (`fan_out`), a row per document, in order, the cells its inputs carry (the records'
    fields: title, citations …) pinned with `const`, so the model decides what the runtime
    cannot read off a record — whether the document meets the condition, and the columns
    that are not record fields. A task without its documents gets no brief (None)."""
    from kimmy_swarm.agents.brief import SubtaskBrief

    cell = {"type": ["string", "number", "integer", "null"]}

    def brief(run: Attempt) -> SubtaskBrief | None:
        documents = run.inputs.get("documents")
        if not (isinstance(documents, list) and documents):
            return None
        if not all(isinstance(d, dict) for d in documents):
            return None
        rows = []
        for d in documents:
            props: dict[str, Any] = {c: {"const": d[c]} if c in d else cell for c in columns}
            props[MEETS] = {"type": "boolean"}  # last: judged with the row's cells in view
            rows.append({"type": "object", "properties": props,
                         "required": [*columns, MEETS], "additionalProperties": False})  # fmt: skip
        rows_array = {"type": "array", "prefixItems": rows, "items": False,
                      "minItems": len(rows), "maxItems": len(rows)}  # fmt: skip
        schema = {"type": "object", "properties": {"rows": rows_array}, "required": ["rows"],
                  "additionalProperties": False}  # fmt: skip
        return SubtaskBrief(schema=schema)

    return brief


class StructuredAnswer(RootModel[Any]):
    """The answer of a created sub-agent with its own JSON schema (checked by the role)."""


def _schema_check(schema: Mapping[str, Any]) -> Any:
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(dict(schema))

    def check(answer: Any, _run: Attempt) -> None:
        data = answer.root if isinstance(answer, StructuredAnswer) else answer
        errors = sorted(validator.iter_errors(data), key=lambda e: list(e.path))
        if errors:
            where = "/".join(str(p) for p in errors[0].path) or "(answer)"
            raise ValueError(f"{where}: {errors[0].message}")

    return check


def _rows_of_given_documents(schema_check: Any) -> Any:
    """The check of a rows answer: its schema, then — when the task's inputs hold the
    documents it was given (`fan_out`) — one row per document, each naming one of them by
    title (a sub-agent reports what it read, not what it imagines)."""
    from kimmy_swarm.agents.widesearch.answer import title_key

    def check(answer: Any, run: Attempt) -> None:
        schema_check(answer, run)
        data = answer.root if isinstance(answer, StructuredAnswer) else answer
        documents = run.inputs.get("documents")
        if not isinstance(documents, list) or not isinstance(data, dict):
            return
        titles = {title_key(d.get("title", "")): d.get("title") for d in documents
                  if isinstance(d, dict)}  # fmt: skip
        rows = data.get("rows") or []
        if len(rows) != len(documents):
            raise ValueError(
                f"rows: {len(rows)} rows for {len(documents)} documents; give one row for "
                f'each document, in order, with "{MEETS}" true or false'
            )
        for i, row in enumerate(rows):
            if isinstance(row, dict) and "title" in row and title_key(row["title"]) not in titles:
                given = "; ".join(repr(t) for t in titles.values())
                raise ValueError(
                    f"rows/{i}/title: {row['title']!r} is not the title of one of your "
                    f"documents ({given}); report rows only for your documents, their titles "
                    "copied exactly"
                )

    return check


def spec_role(spec: AgentSpec) -> Role:
    """The `Role` of a created sub-agent."""
    schema = spec.answer_schema
    if schema is None:
        return Role(spec.name, spec.system_prompt, Answer, spec.tools, max_steps=DEFAULT_MAX_STEPS)
    output = _schema_model(spec.name, schema)
    check = _schema_check(schema)
    prompt = spec.system_prompt
    brief = None
    if spec.output_columns is not None:
        check = _rows_of_given_documents(check)
        prompt += "\n\n" + rows_format(spec.output_columns)
        brief = rows_brief(spec.output_columns)
    return Role(
        spec.name,
        prompt,
        output,
        spec.tools,
        check=check,
        max_steps=DEFAULT_MAX_STEPS,
        brief=brief,
    )


def _schema_model(name: str, schema: Mapping[str, Any]) -> type[BaseModel]:
    """A root model whose JSON schema is `schema` (what the model is asked to answer)."""
    frozen = dict(schema)

    class Structured(StructuredAnswer):
        model_config = ConfigDict(json_schema_extra=lambda s, _cls: _replace(s, frozen))

    Structured.__name__ = re.sub(r"\W", "_", name.title()) + "Answer"
    return Structured


def _replace(target: dict[str, Any], schema: Mapping[str, Any]) -> None:
    target.clear()
    target.update(schema)


def spec_role_factory(
    tools: ToolBox, *, executor: Executor | None = None, policy: str = "auto"
) -> Any:
    """The swarm's role factory: a `SubAgent` for a subtask whose `role_spec` is an
    `AgentSpec` naming only tools of `tools` (None for anything else)."""
    cache: dict[tuple[Any, ...], Worker] = {}

    def factory(st: Subtask) -> Worker | None:
        if st.role_spec is None:
            return None
        try:
            spec = AgentSpec.model_validate(st.role_spec)
        except ValidationError:
            return None
        if spec.name != st.role or any(t not in tools for t in spec.tools):
            return None
        key = (spec.name, spec.system_prompt, spec.tools, repr(spec.answer_schema))
        worker = cache.get(key)
        if worker is None:
            worker = cache[key] = SubAgent(
                spec_role(spec),
                tools,
                policy=policy,
                executor=executor,  # type: ignore[arg-type]
            )
        return worker

    return factory


__all__ = ["AgentSpec", "StructuredAnswer", "spec_role", "spec_role_factory"]
