"""Chat requests to engine inputs, and the model's text back to an assistant message.

Prompt: the messages are rendered with the tokenizer's chat template, or
`model.tokenizer.DEFAULT_CHAT_TEMPLATE` (Kimi's turn layout) when the folder has none, and
encoded; special-token strings in the text become their ids.

Tools, in the template's own format: when the chat template lists `tools` and writes calls
as `<tool_call>` blocks (Qwen2.5's; `tool_calls.tool_call_format` checks it by rendering a
probe), the template is given `tools` (OpenAI's function dicts) and the history as OpenAI
messages (assistant `tool_calls` with their arguments as objects, as such templates `tojson`
them; `tool` results), and renders all of it itself. Decoding follows a
`tool_calls.ToolCallGrammar`: "required" and a named tool give only blocks, "auto" free text
whose blocks are constrained once begun; the reply's blocks become OpenAI `tool_calls`, the
text outside them the content. With "auto" and a `response_format` schema the answer follows
the schema and is never a call.

Tools, in our own format (every other template, and the default one): the template is not
given `tools`; the tool list is described in the system prompt, appended to the first
leading system message (or in a system message of its own when there is none):

    # Tools
    You can call the tools below. To call one, reply with only a JSON object
    {"name": "<tool name>", "arguments": {<its arguments>}} and nothing else.
    <tools>
    {"name": "search", "description": "…", "parameters": {…}}       (one line per tool)
    </tools>

A forced call (`tool_choice` "required" or a named function) constrains decoding to exactly
that object (`structured.schema_for_tool_choice`); with "auto" the answer is a tool call
only if the whole text parses as one. Earlier assistant tool calls are written back in the
same form, one JSON object per line, when the template is the default one (a checkpoint's
own template gets OpenAI's `tool_calls` field and renders them itself).

Prefix reuse: `cache_point` is the token length of the rendered leading system messages
(role prompt + tool list). Every sub-agent of one role shares it, so the engine keeps the
cache there and later requests skip its prefill. (A template that writes the tool list in a
system turn of its own when the messages have none gets no cache point then.)
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kimmy_swarm.model.errors import GenerationError
from kimmy_swarm.model.serve.protocol import (
    AssistantMessage,
    ChatCompletionRequest,
    ChatMessage,
    NamedToolChoice,
    SamplingOptions,
    TokenLogprobOut,
    Tool,
    ToolCallOut,
    TopLogprobOut,
)
from kimmy_swarm.model.serve.structured import schema_for_tool_choice
from kimmy_swarm.model.serve.tool_calls import (
    ToolCallFormat,
    ToolCallGrammar,
    parse_tool_call_blocks,
    tool_call_format,
    tool_call_from_json,
    tool_call_grammar,
)
from kimmy_swarm.model.serve.types import GenerationParams, TokenEvent, TopToken
from kimmy_swarm.model.tokenizer import Tokenizer

__all__ = [
    "TOOLS_HEADER",
    "ChatPrompt",
    "OutputMode",
    "assistant_message",
    "generation_params",
    "output_mode",
    "parse_tool_call",
    "render_chat",
    "template_messages",
    "token_logprob",
    "tools_prompt",
]

TOOLS_HEADER = (
    "# Tools\n"
    "You can call the tools below. To call one, reply with only a JSON object "
    '{"name": "<tool name>", "arguments": {<its arguments>}} and nothing else.\n'
)
_SYSTEM_ROLES = ("system", "developer")


@dataclass(frozen=True)
class ChatPrompt:
    """A rendered conversation: its token ids, text, and the length of the shared prefix."""

    ids: list[int]
    text: str
    cache_point: int | None  # tokens of the leading system messages; None: there are none


@dataclass(frozen=True)
class OutputMode:
    """How the output is constrained and read back."""

    # decoding follows this JSON schema or tool-call grammar (None: free text)
    json_schema: dict[str, Any] | ToolCallGrammar | None
    tool_names: tuple[str, ...] = ()  # tools the answer may call (empty: never a tool call)
    forced: bool = False  # the answer must be a tool call
    tool_format: ToolCallFormat | None = None  # the template's call blocks; None: our JSON


def tools_prompt(tools: Sequence[Tool]) -> str:
    """The tool list as written into the system prompt (see the module docstring)."""
    lines = []
    for tool in tools:
        fn = tool.function
        spec = {"name": fn.name, "description": fn.description, "parameters": fn.parameters}
        clean = {k: v for k, v in spec.items() if v is not None}
        lines.append(json.dumps(clean, ensure_ascii=False))
    return TOOLS_HEADER + "<tools>\n" + "\n".join(lines) + "\n</tools>"


def _call_line(name: str, arguments: str) -> str:
    try:
        args: Any = json.loads(arguments)
    except json.JSONDecodeError:
        args = arguments  # written as the model gave it
    return json.dumps({"name": name, "arguments": args}, ensure_ascii=False)


def _arguments(text: str, *, as_object: bool) -> Any:
    if not as_object:
        return text
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text  # written as the model gave it


def _template_message(
    m: ChatMessage, *, native_tools: bool, tools_in_template: bool = False
) -> dict[str, Any]:
    role = "system" if m.role == "developer" else m.role
    out: dict[str, Any] = {"role": role, "content": m.text()}
    if m.name is not None:
        out["name"] = m.name
    if m.tool_call_id is not None:
        out["tool_call_id"] = m.tool_call_id
    if m.tool_calls:
        if native_tools or tools_in_template:
            out["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {
                        "name": c.function.name,
                        "arguments": _arguments(
                            c.function.arguments_text(), as_object=tools_in_template
                        ),
                    },
                }
                for c in m.tool_calls
            ]
        else:
            lines = [_call_line(c.function.name, c.function.arguments_text()) for c in m.tool_calls]
            out["content"] = "\n".join([t for t in (out["content"],) if t] + lines)
    return out


def _leading_system(messages: Sequence[dict[str, Any]]) -> int:
    n = 0
    while n < len(messages) and messages[n]["role"] == "system":
        n += 1
    return n


def template_messages(
    messages: Sequence[ChatMessage],
    tools: Sequence[Tool] | None,
    *,
    native_tools: bool,
    tools_in_template: bool = False,
) -> list[dict[str, Any]]:
    """The `{"role", "content", …}` dicts given to the chat template ("developer" written as
    "system").

    Args:
        messages: the conversation.
        tools: described in the system prompt, unless `tools_in_template`.
        native_tools: earlier tool calls as OpenAI's `tool_calls` field (arguments as JSON
            text), not as our JSON lines in the content.
        tools_in_template: the template lists the tools and writes calls itself (see
            `tool_calls.tool_call_format`): no tool list here, and `tool_calls` with their
            arguments as objects.
    """
    out = [
        _template_message(m, native_tools=native_tools, tools_in_template=tools_in_template)
        for m in messages
    ]
    if tools and not tools_in_template:
        described = tools_prompt(tools)
        if out and out[0]["role"] == "system":
            first = out[0]["content"]
            out[0] = {**out[0], "content": f"{first}\n\n{described}" if first else described}
        else:
            out.insert(0, {"role": "system", "content": described})
    return out


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def render_chat(
    tokenizer: Tokenizer, messages: Sequence[ChatMessage], tools: Sequence[Tool] | None = None
) -> ChatPrompt:
    """Render and encode a conversation, with the generation prompt for the assistant.

    Raises:
        GenerationError: the template rejected the messages.
        CheckpointError: the template is broken.
    """
    own = tool_call_format(tokenizer) is not None
    dicts = template_messages(
        messages, tools, native_tools=tokenizer.chat_template is not None, tools_in_template=own
    )
    listed = [t.model_dump(exclude_none=True) for t in tools] if own and tools else None
    text = tokenizer.apply_chat_template(dicts, add_generation_prompt=True, tools=listed)
    ids = tokenizer.encode(text)
    lead = _leading_system(dicts)
    cache_point = None
    if lead:
        try:
            head = tokenizer.apply_chat_template(
                dicts[:lead], add_generation_prompt=False, tools=listed
            )
        except GenerationError:  # a template that wants a user turn: no shared prefix then
            head = ""
        # the ids the head shares with the full prompt (a BPE merge may cross its end)
        cache_point = _common_prefix(tokenizer.encode(head), ids) or None
    return ChatPrompt(ids, text, cache_point)


def output_mode(req: ChatCompletionRequest, tokenizer: Tokenizer | None = None) -> OutputMode:
    """The grammar decoding must follow, and whether the answer is read as a tool call: in
    the format of `tokenizer`'s template when it has one (`tool_calls.tool_call_format`),
    else in ours.

    `parallel_tool_calls` (OpenAI's default: true) lets a reply in the template's format
    hold one or more calls; ours always holds one.

    Raises:
        GenerationError: a malformed tool or tool_choice (see `schema_for_tool_choice`).
    """
    answer_schema = req.response_format.schema_dict() if req.response_format else None
    if not req.tools or req.tool_choice == "none":
        return OutputMode(answer_schema)
    own = None if tokenizer is None else tool_call_format(tokenizer)
    if own is not None:
        return _own_format_mode(req, answer_schema, own)
    tools = [t.model_dump(exclude_none=True) for t in req.tools]
    choice = req.tool_choice
    wire = choice.model_dump() if isinstance(choice, NamedToolChoice) else choice
    names = tuple(t.function.name for t in req.tools)
    forced = schema_for_tool_choice(tools, wire)
    if forced is not None:
        return OutputMode(forced, names, forced=True)
    return OutputMode(answer_schema, names)


def _own_format_mode(
    req: ChatCompletionRequest, answer_schema: dict[str, Any] | None, fmt: ToolCallFormat
) -> OutputMode:
    tools = req.tools or []
    choice = req.tool_choice
    forced = choice == "required" or isinstance(choice, NamedToolChoice)
    if not forced and answer_schema is not None:
        return OutputMode(answer_schema)  # the answer follows the schema: never a call
    parallel = req.parallel_tool_calls is not False
    grammar = tool_call_grammar(tools, choice, parallel=parallel, fmt=fmt)
    names = tuple(t.function.name for t in tools)
    return OutputMode(grammar, names, forced=forced, tool_format=fmt)


def generation_params(
    req: SamplingOptions,
    *,
    max_tokens: int,
    logprobs: bool = False,
    top_logprobs: int = 0,
    json_schema: dict[str, Any] | ToolCallGrammar | None = None,
    cache_point: int | None = None,
) -> GenerationParams:
    """The engine's options for a request (OpenAI defaults: temperature 1, top_p 1)."""
    return GenerationParams(
        max_tokens=max_tokens,
        temperature=1.0 if req.temperature is None else req.temperature,
        top_p=1.0 if req.top_p is None else req.top_p,
        top_k=max(req.top_k or 0, 0),
        seed=req.seed,
        stop=req.stop_list(),
        stop_token_ids=tuple(req.stop_token_ids or ()),
        ignore_eos=req.ignore_eos,
        logprobs=logprobs or top_logprobs > 0,
        top_logprobs=top_logprobs,
        json_schema=json_schema,
        cache_point=cache_point,
    )


def parse_tool_call(text: str, mode: OutputMode) -> ToolCallOut | None:
    """The tool call `text` holds (`{"name": a tool, "arguments": {…}}`), else None."""
    if not mode.tool_names:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    return tool_call_from_json(value, mode.tool_names)


def assistant_message(
    text: str, mode: OutputMode, finish_reason: str
) -> tuple[AssistantMessage, str]:
    """The reply and its finish reason: tool calls ("tool_calls") when the text is one in
    our format, or holds blocks in the template's own (`tool_calls.parse_tool_call_blocks`)."""
    if mode.tool_format is not None and mode.tool_names:
        parsed = parse_tool_call_blocks(text, mode.tool_format, mode.tool_names)
        if parsed is not None:
            content, calls = parsed
            return AssistantMessage(content=content, tool_calls=calls), "tool_calls"
        return AssistantMessage(content=text), "stop" if finish_reason == "abort" else finish_reason
    call = parse_tool_call(text.strip(), mode)
    if call is not None:
        return AssistantMessage(content=None, tool_calls=[call]), "tool_calls"
    return AssistantMessage(content=text), "stop" if finish_reason == "abort" else finish_reason


def _token_text(tokenizer: Tokenizer | None, token_id: int) -> str:
    return f"<{token_id}>" if tokenizer is None else tokenizer.decode([token_id])


def _top(t: TopToken) -> TopLogprobOut:
    return TopLogprobOut(
        token=t.token, logprob=t.logprob, bytes=list(t.token.encode()), token_id=t.token_id
    )


def token_logprob(tokenizer: Tokenizer | None, event: TokenEvent) -> TokenLogprobOut | None:
    """OpenAI's logprob entry of one generated token (None when none was computed), with the
    `token_id` extension on it and on each alternative."""
    if event.token_id is None or event.logprob is None:
        return None
    token = _token_text(tokenizer, event.token_id)
    return TokenLogprobOut(
        token=token,
        logprob=event.logprob,
        bytes=list(token.encode()),
        token_id=event.token_id,
        top_logprobs=[_top(t) for t in event.top_logprobs],
    )
