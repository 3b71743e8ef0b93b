"""Tool calls in a chat template's own format: which templates have one, the grammar that
keeps decoding inside it, and the parser that reads the calls back.

    fmt = tool_call_format(tokenizer)       # HERMES, or None: our own format (see chat.py)
    grammar = tool_call_grammar(tools, "required", parallel=False, fmt=fmt)
    params = GenerationParams(json_schema=grammar)     # GrammarCache.matcher compiles it
    content, calls = parse_tool_call_blocks(text, fmt, names) or (text, [])

The format is Hermes' (Qwen2.5's template, vLLM's `hermes` parser): one call is written, byte
for byte as the template renders an earlier assistant call and as the grammar lets the model
write it,

    <tool_call>
    {"name": "search", "arguments": {"q": "x"}}
    </tool_call>

and the calls of one reply are separated by a newline.

Which templates: `tool_call_format` renders a probe conversation (one tool, and an assistant
turn that called it) and answers HERMES only when the text lists the tool and then holds the
call exactly as above. A search of the source for "tools" would not do: the word turns up in
prose and comments, and a template can read `tools` yet write calls in another form (Llama
3.1's bare JSON, Mistral's `[TOOL_CALLS]`), while the grammar and the parser rely on the
exact bytes, which only a render shows. Other templates (none, SmolLM2's, …) keep our format.

Grammars (xgrammar structural tags, compiled by `structured.GrammarCache`):

- "required": the reply is blocks only: one, or with `parallel` one or more;
- a named tool: exactly one block, calling that tool;
- "auto": free text, and once the text writes `<tool_call>` the block must be a call of
  one of the tools; with `parallel` False nothing may follow the first block, otherwise
  more text and more blocks may.

The arguments follow the tool's `parameters` (strictly: no properties beyond them; a tool
without `parameters` takes an object).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from kimmy_swarm.model.errors import CheckpointError, GenerationError
from kimmy_swarm.model.serve.protocol import FunctionCallOut, NamedToolChoice, Tool, ToolCallOut
from kimmy_swarm.model.serve.structured import canonical_schema
from kimmy_swarm.model.tokenizer import Tokenizer

__all__ = [
    "HERMES",
    "ToolCallFormat",
    "ToolCallGrammar",
    "parse_tool_call_blocks",
    "tool_call_format",
    "tool_call_from_json",
    "tool_call_grammar",
]

_ANY_OBJECT: dict[str, Any] = {"type": "object", "properties": {}}


@dataclass(frozen=True)
class ToolCallFormat:
    """How a template writes one call: `open`, newline, `{"name": …, "arguments": …}`,
    newline, `close`; the calls of one reply joined by `separator`."""

    open: str = "<tool_call>"
    close: str = "</tool_call>"
    separator: str = "\n"

    def head(self, name: str) -> str:
        """The fixed text of a call to `name`, up to its arguments."""
        return f'{self.open}\n{{"name": {json.dumps(name, ensure_ascii=False)}, "arguments": '

    @property
    def tail(self) -> str:
        """The fixed text after the arguments."""
        return "}\n" + self.close

    def write(self, name: str, arguments: str) -> str:
        """One call block (`arguments`: JSON text)."""
        return self.head(name) + arguments + self.tail


HERMES = ToolCallFormat()


@dataclass(frozen=True)
class ToolCallGrammar:
    """Decoding constrained to tool-call blocks (see the module docstring): what
    `GenerationParams.json_schema` takes besides a JSON schema.

    Raises:
        GenerationError: no tools, or a choice other than "auto" / "required".
    """

    tools: tuple[tuple[str, str], ...]  # (name, its parameters schema as canonical JSON)
    choice: Literal["auto", "required"]
    parallel: bool = True
    fmt: ToolCallFormat = HERMES

    def __post_init__(self) -> None:
        if not self.tools:
            raise GenerationError("a tool-call grammar needs at least one tool")
        if self.choice not in ("auto", "required"):
            raise GenerationError(f"choice must be 'auto' or 'required'; got {self.choice!r}")

    @property
    def block_open(self) -> str:
        """The text that starts a block (xgrammar's trigger in "auto")."""
        return self.fmt.open

    @property
    def block_end(self) -> str:
        """The text that ends a block: a newline never occurs inside the JSON (its strings
        take no raw newline), so its first occurrence after `block_open` is the end."""
        return "\n" + self.fmt.close

    def structural_tag(self, *, max_whitespace: int | None) -> dict[str, Any]:
        """xgrammar's structural tag (JSON form); `max_whitespace`: the longest whitespace
        run the arguments may hold (None: any)."""
        tags = [self._tag(name, params, max_whitespace) for name, params in self.tools]
        body: dict[str, Any]
        if self.choice == "auto":
            body = {
                "type": "triggered_tags", "triggers": [self.fmt.open], "tags": tags,
                "stop_after_first": not self.parallel,
            }  # fmt: skip
        elif self.parallel:
            body = {
                "type": "tags_with_separator", "tags": tags, "separator": self.fmt.separator,
                "at_least_one": True,
            }  # fmt: skip
        else:
            body = {"type": "or", "elements": tags}
        return {"type": "structural_tag", "format": body}

    def _tag(self, name: str, params: str, max_whitespace: int | None) -> dict[str, Any]:
        content: dict[str, Any] = {"type": "json_schema", "json_schema": json.loads(params)}
        if max_whitespace is not None:
            content["max_whitespace_cnt"] = max_whitespace
        return {"type": "tag", "begin": self.fmt.head(name), "content": content,
                "end": self.fmt.tail}  # fmt: skip


def tool_call_grammar(
    tools: Sequence[Tool],
    tool_choice: str | NamedToolChoice | None,
    *,
    parallel: bool,
    fmt: ToolCallFormat = HERMES,
) -> ToolCallGrammar | None:
    """The grammar of `tool_choice` over `tools` (None for "none": no calls at all).

    A named tool gets exactly one block whatever `parallel` says (as a named choice does
    in vLLM and OpenAI).

    Raises:
        GenerationError: no tools, a named tool not among them, or another tool_choice.
    """
    if tool_choice == "none":
        return None
    chosen = list(tools)
    if isinstance(tool_choice, NamedToolChoice):
        chosen = [t for t in tools if t.function.name == tool_choice.function.name]
        if not chosen:
            names = [t.function.name for t in tools]
            raise GenerationError(
                f"tool_choice names {tool_choice.function.name!r}; the tools are {names}"
            )
        parallel = False
    elif tool_choice not in (None, "auto", "required"):
        raise GenerationError(
            "tool_choice must be 'auto', 'none', 'required' or {'type': 'function', "
            f"'function': {{'name': str}}}}; got {tool_choice!r}"
        )
    entries = tuple((t.function.name, _schema_text(t.function.parameters)) for t in chosen)
    choice = "auto" if tool_choice in (None, "auto") else "required"
    return ToolCallGrammar(entries, choice, parallel=parallel, fmt=fmt)


def _schema_text(parameters: dict[str, Any] | None) -> str:
    schema = canonical_schema(parameters or _ANY_OBJECT)
    return json.dumps(schema, ensure_ascii=False, separators=(",", ":"))


# ---- which templates write it ------------------------------------------------------------
_PROBE = "kimmy_probe_tool"
_PROBE_ARGS = {"n": 1}
_PROBE_TOOL = {
    "type": "function",
    "function": {
        "name": _PROBE,
        "description": "Finds nothing.",
        "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}},
    },
}
_formats: dict[str, ToolCallFormat | None] = {}  # by template source


def tool_call_format(tokenizer: Tokenizer) -> ToolCallFormat | None:
    """HERMES when the tokenizer's chat template lists `tools` and writes calls in that
    format (checked by rendering a probe; see the module docstring), else None."""
    source = tokenizer.chat_template
    if source is None:
        return None
    if source not in _formats:
        if len(_formats) >= 64:
            _formats.clear()
        _formats[source] = HERMES if _writes(tokenizer, HERMES) else None
    return _formats[source]


def _writes(tokenizer: Tokenizer, fmt: ToolCallFormat) -> bool:
    call = {"id": "call_probe", "type": "function",
            "function": {"name": _PROBE, "arguments": dict(_PROBE_ARGS)}}  # fmt: skip
    messages = [
        {"role": "user", "content": "Find it."},
        {"role": "assistant", "content": "", "tool_calls": [call]},
    ]
    try:
        text = tokenizer.apply_chat_template(
            messages, add_generation_prompt=False, tools=[_PROBE_TOOL]
        )
    except (GenerationError, CheckpointError):  # a template that wants other turns
        return False
    listed, found, _ = text.partition(fmt.write(_PROBE, json.dumps(_PROBE_ARGS)))
    return bool(found) and _PROBE in listed


# ---- reading calls back ------------------------------------------------------------------
def parse_tool_call_blocks(
    text: str, fmt: ToolCallFormat, names: Sequence[str]
) -> tuple[str | None, list[ToolCallOut]] | None:
    """The calls in `text`'s blocks, and the text outside them (stripped; None when empty).

    None when `text` has no block, or a block that is not a call of one of `names`
    (unterminated, not JSON, another name, arguments not an object): then the whole text
    is the answer, as vLLM's hermes parser does.
    """
    decoder = json.JSONDecoder()
    outside: list[str] = []
    calls: list[ToolCallOut] = []
    pos = 0
    while (start := text.find(fmt.open, pos)) >= 0:
        outside.append(text[pos:start])
        at = _skip_space(text, start + len(fmt.open))
        try:
            value, at = decoder.raw_decode(text, at)  # not a search for `close`: an argument
        except json.JSONDecodeError:  # string may hold "</tool_call>"
            return None
        at = _skip_space(text, at)
        call = tool_call_from_json(value, names)
        if call is None or not text.startswith(fmt.close, at):
            return None
        calls.append(call)
        pos = at + len(fmt.close)
    if not calls:
        return None
    outside.append(text[pos:])
    return "".join(outside).strip() or None, calls


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at].isspace():
        at += 1
    return at


def tool_call_from_json(value: Any, names: Sequence[str]) -> ToolCallOut | None:
    """The call a parsed `{"name", "arguments": {…}}` value stands for (None: not one)."""
    if not isinstance(value, dict) or value.get("name") not in names:
        return None
    args = value.get("arguments", {})
    if not isinstance(args, dict):
        return None
    return ToolCallOut(
        id=f"call_{uuid.uuid4().hex[:24]}",
        function=FunctionCallOut(
            name=value["name"], arguments=json.dumps(args, ensure_ascii=False)
        ),
    )
