"""Tools an agent can call: typed arguments, a JSON result, an OpenAI function spec.

Both policies of a sub-agent call the same tools: the model policy through the model's
function calls, the offline policy from its procedure. The orchestrator's tools are a
`ToolBox` too (`agents.orchestrator.tools`). A tool is a plain Python function whose
signature becomes a pydantic model, so a model's arguments are validated before the
function runs and a bad call comes back to the model as an error message it can correct.

    box = ToolBox()

    @box.tool
    def read_document(doc_id: str) -> dict:
        "The title and full text of one document."
        ...
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, get_type_hints

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from kimmy_swarm.swarm.errors import ConfigError, UserError, validation_problems
from kimmy_swarm.swarm.llm.types import function_tool


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with every local `$ref` ("#/$defs/Name") replaced by its definition and no
    `$defs` left: servers that compile a tool's parameters into a grammar inside a larger
    schema (llama.cpp, xgrammar's structural tags) cannot resolve refs to the root.

    Raises:
        ValueError: a definition refers to itself (a recursive model cannot be inlined).
    """
    defs = schema.get("$defs") or {}

    def walk(node: Any, seen: tuple[str, ...]) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                name = ref.removeprefix("#/$defs/")
                if name in seen:
                    raise ValueError(f"the schema of {name!r} refers to itself")
                target = walk(defs[name], (*seen, name))
                rest = {k: walk(v, seen) for k, v in node.items() if k != "$ref"}
                return {**target, **rest}
            return {k: walk(v, seen) for k, v in node.items() if k != "$defs"}
        if isinstance(node, list):
            return [walk(v, seen) for v in node]
        return node

    out: dict[str, Any] = walk(schema, ())
    return out


def compact_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` without what only makes it longer for a model to read: every schema node's
    `title` (pydantic's "Agent" for `agent`), and the `null` branch of an optional argument
    whose default is null (leaving it out means the same)."""

    def node(value: Any) -> Any:
        if not isinstance(value, dict):
            return [node(v) for v in value] if isinstance(value, list) else value
        out: dict[str, Any] = {}
        for key, item in value.items():
            if key == "title" and isinstance(item, str):
                continue
            if key == "properties" and isinstance(item, dict):
                out[key] = {name: node(prop) for name, prop in item.items()}
            else:
                out[key] = node(item)
        options = out.get("anyOf")
        if "default" in out and out["default"] is None and isinstance(options, list):
            kept = [o for o in options if o != {"type": "null"}]
            if len(kept) == 1 and len(kept) < len(options):
                del out["anyOf"], out["default"]
                out = {**kept[0], **out}
        return out

    compacted: dict[str, Any] = node(schema)
    return compacted


class ToolError(UserError):
    """A tool was called with bad arguments, or does not exist, or refused the call: the
    message goes back to the model that called it, so it can correct the call."""


class CallDenied(ToolError):
    """A person denied the call (`swarm.approvals`), or nobody answered in the run's time:
    the model is told why, and the sub-agent goes on without the call."""


class ToolArgs(BaseModel):
    """The base of every tool's argument model: an argument the tool does not take is an
    error the model is shown, not silently dropped."""

    model_config = ConfigDict(extra="forbid")


@dataclass(frozen=True, slots=True)
class Tool:
    """One callable tool.

    Attributes:
        name: what the model calls it.
        description: what it does (shown to the model).
        params: the pydantic model of its arguments.
        fn: the function; called with the validated arguments as keywords (a coroutine
            function makes an async tool: calling it gives the awaitable).
        schema: the JSON schema of its arguments when another program defines them (an
            MCP server's tool): shown to the model instead of `params`', and the arguments
            are that program's to check (`parse` only asks for a JSON object).
        requires_approval: every call waits for a person to approve, edit or deny it
            (`swarm.approvals`); the run's `ApprovalPolicy` may name more tools.
    """

    name: str
    description: str
    params: type[BaseModel]
    fn: Callable[..., Any]
    schema: Mapping[str, Any] | None = None
    requires_approval: bool = False

    def spec(self) -> dict[str, Any]:
        """The OpenAI `tools` entry for this tool: its name, its description and the JSON
        schema of its arguments (the argument model's own title and docstring left out: the
        tool's name and description say them)."""
        given = dict(self.schema) if self.schema is not None else self.params.model_json_schema()
        schema = compact_schema(inline_refs(given))
        schema.pop("description", None)
        return function_tool(self.name, self.description, schema)

    def parse(self, arguments: str | Mapping[str, Any] | None) -> dict[str, Any]:
        """Validated keyword arguments from a JSON string or a mapping.

        Raises:
            ToolError: the arguments are not JSON, or do not fit the tool's parameters.
        """
        if arguments is None or arguments == "":
            arguments = {}
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except json.JSONDecodeError as exc:
                raise ToolError(f"tool {self.name!r}: arguments are not JSON ({exc})") from None
        if not isinstance(arguments, Mapping):
            raise ToolError(f"tool {self.name!r}: arguments must be a JSON object")
        if self.schema is not None:
            return dict(arguments)
        try:
            parsed = self.params.model_validate(dict(arguments))
        except ValidationError as exc:
            problems = validation_problems(exc, root="(arguments)")
            raise ToolError(f"tool {self.name!r}: bad arguments: {problems}") from None
        return {name: getattr(parsed, name) for name in type(parsed).model_fields}

    def __call__(self, arguments: str | Mapping[str, Any] | None = None, /, **kwargs: Any) -> Any:
        """Validate the arguments (a JSON string, a mapping or keywords) and run the tool."""
        return self.fn(**self.parse(kwargs if arguments is None else arguments))


def make_tool(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    description: str = "",
    requires_approval: bool = False,
) -> Tool:
    """A `Tool` from a function: its signature gives the parameters, its docstring the text
    (`requires_approval`: every call waits for a person).

    Raises:
        ConfigError: a parameter has no type annotation, or is *args / **kwargs.
    """
    tool_name = name or fn.__name__
    hints = get_type_hints(fn)
    fields: dict[str, Any] = {}
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ConfigError(f"tool {tool_name!r}: *args / **kwargs cannot be tool parameters")
        if param.name not in hints:
            raise ConfigError(f"tool {tool_name!r}: parameter {param.name!r} needs a type hint")
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (hints[param.name], default)
    params = create_model(f"{tool_name}_args", __base__=ToolArgs, **fields)
    text = description or inspect.getdoc(fn) or ""
    summary = text.split("\n\n")[0].strip()
    return Tool(tool_name, summary, params, fn, requires_approval=requires_approval)


class ToolBox(Mapping[str, Tool]):
    """Tools by name."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for t in tools:
            self.add(t)

    def add(self, tool: Tool) -> Tool:
        if tool.name in self._tools:
            raise ConfigError(f"a tool named {tool.name!r} is already in this toolbox")
        self._tools[tool.name] = tool
        return tool

    def tool(self, fn: Callable[..., Any] | None = None, *, requires_approval: bool = False) -> Any:
        """Decorator: add a function as a tool (named after it); returns the function.

        `@box.tool(requires_approval=True)` adds one whose every call waits for a person.
        """

        def add(f: Callable[..., Any]) -> Callable[..., Any]:
            self.add(make_tool(f, requires_approval=requires_approval))
            return f

        return add if fn is None else add(fn)

    def get_tool(self, name: str) -> Tool:
        """The tool called `name` (raises `ToolError` listing the known tools)."""
        found = self._tools.get(name)
        if found is None:
            known = ", ".join(sorted(self._tools)) or "(none)"
            raise ToolError(f"no tool named {name!r}; tools here: {known}")
        return found

    def subset(self, names: Iterable[str]) -> ToolBox:
        """A toolbox with only `names` (raises `ToolError` for an unknown one)."""
        return ToolBox(self.get_tool(n) for n in names)

    def specs(self) -> list[dict[str, Any]]:
        """The OpenAI `tools` list."""
        return [t.spec() for t in self._tools.values()]

    def __getitem__(self, name: str) -> Tool:
        return self._tools[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._tools)

    def __len__(self) -> int:
        return len(self._tools)


__all__ = [
    "CallDenied",
    "Tool",
    "ToolArgs",
    "ToolBox",
    "ToolError",
    "compact_schema",
    "inline_refs",
    "make_tool",
]
