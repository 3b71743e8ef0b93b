"""A role's brief: what a sub-agent's model is given for one subtask, to answer from at once.

A small model (Qwen2.5-Coder-1.5B on a laptop CPU) rarely calls the right tool with the right
arguments, and rarely copies an id or a sentence exactly; its answers then fail the role's
checks and fall back to the offline procedure. A role with a `brief` (`Role.brief`) does not
ask it to (for the subtasks its brief covers; one that returns None leaves the model to
call the tools): the brief gathers what the subtask needs with the role's own tools (recorded as the
sub-agent's tool steps), and the model answers from that in its first turn, under a JSON
schema made for this one subtask:

- the fields the subtask fixes (a doc id, a dataset name) are pinned with `const`;
- the choices it allows (the document's sentences for a quoted passage, the theme's doc ids
  for a citation) are an `enum`, so an exact quote or a real id is all it can write;
- fields that are only the record's metadata (a paper's authors, year, URL) are left out of
  the schema and set on the answer by the runtime (`SubtaskBrief.filled`).

The role's checks stay what they are: the answer is validated against the role's output model
and its meaning check like any other, and an invalid one gets the repair turn (under the same
schema) and then the fallback.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from kimmy_swarm.agents.toolbox import compact_schema, inline_refs


@dataclass(frozen=True)
class SubtaskBrief:
    """What a sub-agent's model is given for one subtask.

    Attributes:
        text: the material the answer is made from (a document's sentences, the theme's
            findings); it takes the place of the upstream results in the task message.
        schema: the answer's JSON schema for this subtask (`answer_schema` and the helpers
            below); None: the role's output model's.
        filled: fields of the answer the runtime sets (the record's metadata), not decoded.
        derived: fields computed from the model's own answer (a plan's relevant documents
            are its themes' documents; a verdict's finding is the one it was asked about).
    """

    text: str = ""
    schema: dict[str, Any] | None = None
    filled: Mapping[str, Any] = field(default_factory=dict)
    derived: Callable[[dict[str, Any]], Mapping[str, Any]] | None = None

    def complete(self, answer: Any) -> Any:
        """The model's answer with the `filled` and `derived` fields set (an answer that is
        not a JSON object, or that `derived` cannot read, is left for the validation to
        reject)."""
        if not isinstance(answer, dict):
            return answer
        out = {**answer, **self.filled}
        if self.derived is not None:
            try:
                out.update(self.derived(answer))
            except (KeyError, TypeError, ValueError, IndexError):
                return answer
        return out


def answer_schema(model: type[BaseModel], *, keep: Iterable[str] | None = None) -> dict[str, Any]:
    """`model`'s JSON schema with its `$ref`s inlined and titles dropped, ready to pin.

    Args:
        keep: the top-level properties the model writes (None: all of them); the others are
            left out (they have defaults, or are `filled`).
    """
    schema = compact_schema(inline_refs(model.model_json_schema()))
    if keep is not None:
        kept = list(keep)
        unknown = [k for k in kept if k not in schema.get("properties", {})]
        if unknown:
            raise ValueError(f"{model.__name__} has no properties {unknown}")
        schema["properties"] = {k: schema["properties"][k] for k in kept}
        schema["required"] = kept
    else:
        schema["required"] = list(schema.get("properties", {}))
    schema["additionalProperties"] = False
    return schema


def node(schema: dict[str, Any], path: str) -> dict[str, Any]:
    """The schema node at a dotted `path` ("findings.*.passage": `*` is an array's items)."""
    here = schema
    for part in path.split("."):
        here = here["items"] if part == "*" else here["properties"][part]
    return here


def pin(schema: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """Pin the property at `path` to one value (`const`); returns `schema`."""
    target = node(schema, path)
    target.clear()
    target["const"] = value
    return schema


def choose(schema: dict[str, Any], path: str, values: Iterable[Any]) -> dict[str, Any]:
    """Let the property at `path` take only `values` (`enum`); returns `schema`.

    Raises:
        ValueError: no value to choose from (a grammar with an empty enum matches nothing).
    """
    options = list(dict.fromkeys(values))
    if not options:
        raise ValueError(f"nothing to choose from for {path!r}")
    target = node(schema, path)
    kind = target.get("type")
    target.clear()
    if kind is not None:
        target["type"] = kind
    target["enum"] = options
    return schema


def bound(
    schema: dict[str, Any], path: str, *, least: int | None = None, most: int | None = None
) -> dict[str, Any]:
    """Bound the length of the array at `path` (`minItems`/`maxItems`); returns `schema`."""
    target = node(schema, path)
    if least is not None:
        target["minItems"] = least
    if most is not None:
        target["maxItems"] = most
    return schema


def one_each(schema: dict[str, Any], path: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    """Make the array at `path` hold exactly `items`, in order (`prefixItems`): one entry
    per thing the subtask names (a verdict per claim); returns `schema`."""
    target = node(schema, path)
    target.clear()
    target.update(
        type="array", prefixItems=items, items=False, minItems=len(items), maxItems=len(items)
    )
    return schema


#: The longest `maxLength` worth setting: llama.cpp's server compiles `{0,N}` into N nested
#: grammar rules, and a schema with a 4,000-character bound crashed it; longer texts are
#: bounded by the role's `max_tokens` only.
MAX_TEXT_BOUND = 300


def string_schema(most: int | None = None, *, least: int = 1) -> dict[str, Any]:
    """A string of at least `least` characters and at most `most` (None: unbounded).

    Raises:
        ValueError: `most` above `MAX_TEXT_BOUND`.
    """
    out: dict[str, Any] = {"type": "string", "minLength": least}
    if most is not None:
        if most > MAX_TEXT_BOUND:
            raise ValueError(f"maxLength {most} is above {MAX_TEXT_BOUND}: leave it unbounded")
        out["maxLength"] = most
    return out


def text(
    schema: dict[str, Any], path: str, most: int | None = None, *, least: int = 1
) -> dict[str, Any]:
    """Make the property at `path` a string (`string_schema`); returns `schema`."""
    target = node(schema, path)
    target.clear()
    target.update(string_schema(most, least=least))
    return schema


def named_texts(schema: dict[str, Any], path: str, names: list[str]) -> dict[str, Any]:
    """Make the property at `path` an object of one string per name in `names`, each
    required (a summary per theme id, a reading per part); returns `schema`."""
    target = node(schema, path)
    target.clear()
    target.update(
        type="object",
        properties={n: string_schema() for n in names},
        required=list(names),
        additionalProperties=False,
    )
    return schema


__all__ = [
    "MAX_TEXT_BOUND",
    "SubtaskBrief",
    "answer_schema",
    "bound",
    "choose",
    "named_texts",
    "node",
    "one_each",
    "pin",
    "string_schema",
    "text",
]
