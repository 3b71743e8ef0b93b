"""What a model server honours of the chat-completions API, found by probing it.

Servers that speak the API do not all honour it: llama.cpp's server (llama-cpp-python)
ignores OpenAI's `json_schema` response format, so a weak model answers in prose, though it
enforces a schema given its own way (`{"type": "json_object", "schema": …}`), and some of
its chat formats have no tool calls. `probe_capabilities` asks a few tiny questions whose
right answers only an honouring server gives; `swarm.llm.connect` runs it once, before it
builds the client, which keeps the result in its `ServerProfile`. The agent loop reads it
with `capabilities_of(model)` and adapts (JSON asked for in the prompt, tools described in
the prompt).

    found = await probe_capabilities(client, given={"tools": False})   # --no-tools: not probed

A model says what it honours through an optional `capabilities` attribute (`OpenAIChat`,
`LocalModel`; wrappers such as the swarm's metered model forward it). A model without one,
or with None there (no probe ran), honours everything: scripted test models, `kimmy serve`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

from kimmy_swarm.swarm.errors import ConfigError, ModelError
from kimmy_swarm.swarm.llm.types import function_tool

if TYPE_CHECKING:
    from kimmy_swarm.swarm.llm.protocol import ChatModel
    from kimmy_swarm.swarm.llm.types import ChatResponse, MessageLike

#: The most tokens one probe request asks for: room for the forced tool call's JSON even
#: one byte a token, small enough to cost nothing. Probes are not answers, so
#: `--max-answer-tokens` (the client's `max_tokens_cap`) does not cut them: `connect` probes
#: before it builds the capped client.
PROBE_MAX_TOKENS = 64
#: How every probe request's message begins (it tells a server's logs, and test servers,
#: what the request is).
PROBE_PREFIX = "(kimmy capability probe) "
#: The name of the probe's tool (the parallel probe adds `_a` and `_b` to it).
PROBE_TOOL = "kimmy_capability_probe"
#: The only valid value of the structured-output probe's one field: no model says it
#: unprompted (the prompt does not name it), so only constrained decoding produces it.
PROBE_VALUE = "kimmy-probe-7q"

_SCHEMA = {
    "type": "object",
    "properties": {"probe": {"type": "string", "enum": [PROBE_VALUE]}},
    "required": ["probe"],
    "additionalProperties": False,
}

#: How a server is given a JSON schema to enforce: OpenAI's `{"type": "json_schema",
#: "json_schema": {"name": …, "schema": …}}`, or `{"type": "json_object", "schema": …}`
#: (llama.cpp's servers, which turn it into a grammar).
SchemaFormat = Literal["json_schema", "json_object"]
SCHEMA_FORMATS: tuple[str, ...] = ("json_schema", "json_object")


class Capabilities(BaseModel):
    """What a model server honours (True: as the OpenAI API says it should).

    Attributes:
        structured_output: `response_format` with a JSON schema constrains the answer.
        schema_format: how the schema is given (`SchemaFormat`) where it does.
        tools: tools offered are called as `tool_calls` (a forced `tool_choice` obeyed).
        parallel_tool_calls: one answer may call several tools.
        logprobs: `logprobs: true` returns `choices[0].logprobs.content`.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    structured_output: bool = True
    schema_format: SchemaFormat = "json_schema"
    tools: bool = True
    parallel_tool_calls: bool = True
    logprobs: bool = True

    def response_format(self, name: str, schema: Mapping[str, Any]) -> dict[str, Any] | None:
        """The `response_format` that makes this server enforce `schema` (named `name`), in
        its format; None where it enforces none."""
        if not self.structured_output:
            return None
        if self.schema_format == "json_object":
            return {"type": "json_object", "schema": dict(schema)}
        return {"type": "json_schema", "json_schema": {"name": name, "schema": dict(schema)}}

    def describe(self, how: Mapping[str, str] | None = None) -> str:
        """One line: `structured output no (probed), tools yes (--tools), …`; `how` says
        where each value came from, by capability name."""
        parts = []
        for name in CAPABILITY_NAMES:
            note = f" ({how[name]})" if how and name in how else ""
            value = "yes" if getattr(self, name) else "no"
            if name == "structured_output" and self.structured_output:
                value += "" if self.schema_format == "json_schema" else f" ({self.schema_format})"
            parts.append(f"{name.replace('_', ' ')} {value}{note}")
        return ", ".join(parts)


#: The capabilities' names (each True or False), in probing order.
CAPABILITY_NAMES: tuple[str, ...] = (
    "structured_output",
    "tools",
    "parallel_tool_calls",
    "logprobs",
)
#: What a model that says nothing honours: everything.
HONOURS_ALL = Capabilities()

def capabilities_of(model: object) -> Capabilities:
    """What `model` honours: its `capabilities` when set, else everything (`HONOURS_ALL`)."""
    told = getattr(model, "capabilities", None)  # an optional attribute of a ChatModel
    return told if isinstance(told, Capabilities) else HONOURS_ALL


def _checked(given: Mapping[str, Any] | None) -> dict[str, Any]:
    out = dict(given or {})
    for name, value in out.items():
        if name == "schema_format":
            if value not in SCHEMA_FORMATS:
                raise ConfigError(
                    f"schema_format={value!r} is not one of {', '.join(SCHEMA_FORMATS)}"
                )
        elif name not in CAPABILITY_NAMES or not isinstance(value, bool):
            raise ConfigError(
                f"capability {name}={value!r} is not one of {', '.join(CAPABILITY_NAMES)} "
                "set to True or False"
            )
    return out


async def probe_capabilities(
    model: ChatModel, *, given: Mapping[str, Any] | None = None
) -> Capabilities:
    """Probe what `model`'s server honours, with one tiny request per capability not `given`.

    A request the server refuses (any HTTP error status, or a 2xx body that is not a chat
    completion) means "not honoured". Structured output is probed in OpenAI's format, then
    in llama.cpp's (`SchemaFormat`); `given` structured output keeps the format `given` says
    (`schema_format`, OpenAI's when it says none). Parallel tool calls are not probed (not
    honoured) where tools are not.

    Raises:
        ConfigError: `given` names an unknown capability or a value that is not a bool.
        ModelError: one without an HTTP status: the server cannot be reached or timed out.
    """
    known: dict[str, Any] = _checked(given)
    for name in CAPABILITY_NAMES:
        if name in known:
            continue
        if name == "structured_output":
            schema_format = await _structured_output(model)
            known[name] = schema_format is not None
            if schema_format is not None:
                known["schema_format"] = schema_format
        elif name == "parallel_tool_calls" and not known["tools"]:
            known[name] = False
        else:
            known[name] = await _PROBES[name](model)
    return Capabilities(**known)


async def _ask(
    model: ChatModel, text: str, *, max_tokens: int = PROBE_MAX_TOKENS, **options: Any
) -> ChatResponse | None:
    """One probe request; None when the server refused it with an HTTP status."""
    messages: Sequence[MessageLike] = [{"role": "user", "content": PROBE_PREFIX + text}]
    try:
        return await model.chat(messages, max_tokens=max_tokens, temperature=0.0, **options)
    except ModelError as exc:
        if exc.status is None:  # unreachable or timed out: no answer to judge by
            raise
        return None


def _tool(name: str) -> dict[str, Any]:
    parameters = {
        "type": "object",
        "properties": {"ok": {"type": "boolean"}},
        "required": ["ok"],
        "additionalProperties": False,
    }
    return function_tool(name, "Say that tools work.", parameters)


async def _structured_output(model: ChatModel) -> SchemaFormat | None:
    """The first format (`SCHEMA_FORMATS`) in which the server enforces a schema; None."""
    formats: dict[SchemaFormat, dict[str, Any]] = {
        "json_schema": {
            "type": "json_schema",
            "json_schema": {"name": "kimmy_probe", "schema": _SCHEMA, "strict": True},
        },
        "json_object": {"type": "json_object", "schema": _SCHEMA},
    }
    for schema_format, response_format in formats.items():
        response = await _ask(model, "Reply with one JSON object.", response_format=response_format)
        if response is None:
            continue
        try:
            if json.loads(response.content or "") == {"probe": PROBE_VALUE}:
                return schema_format
        except ValueError:
            continue
    return None


async def _tools(model: ChatModel) -> bool:
    choice = {"type": "function", "function": {"name": PROBE_TOOL}}
    response = await _ask(
        model, f"Call the tool {PROBE_TOOL}.", tools=[_tool(PROBE_TOOL)], tool_choice=choice
    )
    return response is not None and any(c.function.name == PROBE_TOOL for c in response.tool_calls)


async def _parallel_tool_calls(model: ChatModel) -> bool:
    names = (f"{PROBE_TOOL}_a", f"{PROBE_TOOL}_b")
    response = await _ask(
        model,
        f"Call both tools, {names[0]} and {names[1]}, at once in this one reply.",
        tools=[_tool(n) for n in names],
        tool_choice="required",
    )
    return response is not None and set(names) <= {c.function.name for c in response.tool_calls}


async def _logprobs(model: ChatModel) -> bool:
    response = await _ask(model, "Say yes.", max_tokens=2, logprobs=True)
    return response is not None and bool(response.logprobs)


_PROBES = {
    "tools": _tools,
    "parallel_tool_calls": _parallel_tool_calls,
    "logprobs": _logprobs,
}


__all__ = [
    "CAPABILITY_NAMES",
    "HONOURS_ALL",
    "PROBE_MAX_TOKENS",
    "PROBE_PREFIX",
    "PROBE_TOOL",
    "PROBE_VALUE",
    "SCHEMA_FORMATS",
    "Capabilities",
    "SchemaFormat",
    "capabilities_of",
    "probe_capabilities",
]
