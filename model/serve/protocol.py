"""The OpenAI wire format of `kimmy serve`: request and response bodies as pydantic models.

Requests are checked here, before anything reaches the engine, so a bad body gets a 400 that
names the field (`model_validate(data, context={"max_model_len": n})`). Unknown top-level
fields are refused, as OpenAI does (vLLM ignores them: a misspelt `max_token` would then
generate to the end of the context); nested objects ignore extra keys, so clients that echo
assistant messages back with fields such as `refusal` still work. Only what the engine can
honour is accepted: one choice (`n == 1`), text content, no penalties.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

__all__ = [
    "MAX_CONTENT_CHARS", "MAX_MESSAGES", "MAX_STOP", "MAX_TOOLS", "MAX_TOP_LOGPROBS",
    "ChatCompletion", "ChatCompletionChunk", "ChatCompletionRequest", "ChatMessage",
    "Completion", "CompletionRequest", "ErrorBody", "ErrorDetail", "ModelList",
    "SamplingOptions", "Tool", "ToolCallOut", "Usage",
]  # fmt: skip

MAX_MESSAGES = 4096  # messages in one conversation
MAX_CONTENT_CHARS = 2_000_000  # characters in one message (the body limit applies too)
MAX_STOP = 4  # stop strings, as OpenAI
MAX_STOP_CHARS = 256
MAX_TOOLS = 128
MAX_TOP_LOGPROBS = 20
_NAME = r"^[a-zA-Z0-9_-]{1,64}$"  # OpenAI's rule for tool and schema names

# The published schema (`/openapi.json`) says what the validators below check, so that a
# body valid under it is a body the server takes (issue 35): each model's `json_schema_extra`
# adds to pydantic's schema the rules its validators hold (the messages stay the validators').
_NULL = {"type": "null"}


def _when(schema: dict[str, Any], condition: dict[str, Any], then: dict[str, Any]) -> None:
    """Add `if condition then then` to `schema` (several conditions: all of them)."""
    schema.setdefault("allOf", []).append({"if": condition, "then": then})


def _only(schema: dict[str, Any], name: str, *allowed: Any) -> None:
    """Property `name` may be only null or one of `allowed` (an option not supported)."""
    schema["properties"][name] = {**schema["properties"][name],
                                  "anyOf": [_NULL, *({"const": a} for a in allowed)]}  # fmt: skip


class _Body(BaseModel):
    """A request body: unknown top-level fields are errors."""

    model_config = ConfigDict(extra="forbid")


class _Part(BaseModel):  # a nested request object: unknown keys are ignored
    model_config = ConfigDict(extra="ignore")


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Response(_Out):
    id: str
    created: int
    model: str


def _text_part_schema(schema: dict[str, Any]) -> None:
    schema["properties"]["type"] = {"const": "text", "title": "Type"}
    schema["properties"]["text"] = {"type": "string", "title": "Text"}
    schema["required"] = ["type", "text"]


class ContentPart(_Part):
    model_config = ConfigDict(extra="ignore", json_schema_extra=_text_part_schema)

    type: str
    text: str | None = None

    @model_validator(mode="after")
    def _text_only(self) -> ContentPart:
        if self.type != "text" or self.text is None:
            what = f"content part type {self.type!r} is not supported"
            raise ValueError(f"{what}; this model reads {{'type': 'text', 'text': str}} only")
        return self


class FunctionCallIn(_Part):
    name: str
    arguments: str | dict[str, Any] = "{}"  # some clients send an object

    def arguments_text(self) -> str:
        a = self.arguments
        return a if isinstance(a, str) else json.dumps(a, ensure_ascii=False)


class ToolCallIn(_Part):
    id: str
    type: Literal["function"] = "function"
    function: FunctionCallIn


def _message_schema(schema: dict[str, Any]) -> None:
    content = schema["properties"]["content"]
    content["anyOf"][0] = {"type": "string", "maxLength": MAX_CONTENT_CHARS}
    _when(schema, {"properties": {"role": {"not": {"const": "assistant"}}}},
          {"required": ["content"], "properties": {"content": {"not": _NULL}}})  # fmt: skip


class ChatMessage(_Part):
    model_config = ConfigDict(extra="ignore", json_schema_extra=_message_schema)

    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[ContentPart] | None = None
    name: str | None = None
    tool_calls: list[ToolCallIn] | None = None
    tool_call_id: str | None = None

    @model_validator(mode="after")
    def _check(self) -> ChatMessage:
        if self.content is None and self.role != "assistant":
            raise ValueError(f"a {self.role!r} message needs content (a string or text parts)")
        if (size := len(self.text())) > MAX_CONTENT_CHARS:
            raise ValueError(f"content has {size} characters; at most {MAX_CONTENT_CHARS}")
        return self

    def text(self) -> str:
        """The content as one string (text parts joined by newlines, None as "")."""
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(p.text or "" for p in self.content)


class FunctionDef(_Part):
    name: str = Field(pattern=_NAME)
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class Tool(_Part):
    type: Literal["function"] = "function"
    function: FunctionDef


class _ChosenFunction(_Part):
    name: str


class NamedToolChoice(_Part):
    type: Literal["function"] = "function"
    function: _ChosenFunction


class JsonSchemaSpec(_Part):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    name: str = Field(default="response", pattern=_NAME)
    description: str | None = None
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    strict: bool | None = None


def _format_schema(schema: dict[str, Any]) -> None:
    _when(schema, {"properties": {"type": {"const": "json_schema"}}},
          {"required": ["json_schema"], "properties": {"json_schema": {"not": _NULL}}})  # fmt: skip


class ResponseFormat(_Part):
    model_config = ConfigDict(extra="ignore", json_schema_extra=_format_schema)

    type: Literal["text", "json_object", "json_schema"]
    json_schema: JsonSchemaSpec | None = None

    @model_validator(mode="after")
    def _schema_iff_json_schema(self) -> ResponseFormat:
        if self.type == "json_schema" and self.json_schema is None:
            raise ValueError("type 'json_schema' needs a json_schema object {name, schema}")
        return self

    def schema_dict(self) -> dict[str, Any] | None:
        """The JSON schema that constrains the output (None: free text)."""
        if self.type == "json_object":
            return {"type": "object"}
        if self.type == "json_schema" and self.json_schema is not None:
            return self.json_schema.schema_ or {"type": "object"}
        return None


class StreamOptions(_Part):
    include_usage: bool = False


def _check_max_tokens(value: int | None, info: ValidationInfo) -> int | None:
    limit = (info.context or {}).get("max_model_len")
    if value is not None and limit is not None and value > limit:
        raise ValueError(f"{value} is more than this model's context length ({limit} tokens)")
    return value


def _sampling_schema(schema: dict[str, Any]) -> None:
    props = schema["properties"]
    props["n"] = {**props["n"], "const": 1}
    stop = {"type": "string", "minLength": 1, "maxLength": MAX_STOP_CHARS}
    props["stop"] = {**props["stop"], "anyOf": [
        stop, {"type": "array", "items": stop, "maxItems": MAX_STOP}, _NULL]}  # fmt: skip
    _only(schema, "presence_penalty", 0)
    _only(schema, "frequency_penalty", 0)
    props["logit_bias"] = {**props["logit_bias"],
                           "anyOf": [{"type": "object", "maxProperties": 0}, _NULL]}  # fmt: skip
    _when(schema, {"required": ["stream_options"],
                   "properties": {"stream_options": {"not": _NULL}}},
          {"required": ["stream"], "properties": {"stream": {"const": True}}})  # fmt: skip
    for name in ("max_tokens", "max_completion_tokens"):
        if name in props:
            props[name]["description"] = "At most the model's context length (GET /v1/models)."


class SamplingOptions(_Body):
    """The sampling options both endpoints share (OpenAI's, plus vLLM's top_k/ignore_eos/
    stop_token_ids)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_sampling_schema)

    model: str | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, gt=0, le=1)
    top_k: int | None = Field(default=None, ge=-1)  # -1 or 0: off (vLLM spells it -1)
    n: int = 1
    stream: bool = False
    stream_options: StreamOptions | None = None
    stop: str | list[str] | None = None
    stop_token_ids: list[int] | None = Field(default=None, max_length=64)
    ignore_eos: bool = False
    seed: int | None = Field(default=None, ge=-(2**63), lt=2**64)
    presence_penalty: float | None = Field(default=None, ge=-2, le=2)
    frequency_penalty: float | None = Field(default=None, ge=-2, le=2)
    logit_bias: dict[str, float] | None = None
    user: str | None = None

    _fits_context = field_validator("max_tokens")(_check_max_tokens)

    @field_validator("n")
    @classmethod
    def _one_choice(cls, value: int) -> int:
        if value != 1:
            raise ValueError(f"must be 1: this server returns one choice per request; got {value}")
        return value

    @field_validator("stop")
    @classmethod
    def _stops(cls, value: str | list[str] | None) -> str | list[str] | None:
        stops = [value] if isinstance(value, str) else value or []
        if len(stops) > MAX_STOP:
            raise ValueError(f"at most {MAX_STOP} stop strings; got {len(stops)}")
        if any(not s or len(s) > MAX_STOP_CHARS for s in stops):
            raise ValueError(f"stop strings must have 1 to {MAX_STOP_CHARS} characters")
        return value

    @model_validator(mode="after")
    def _supported_options(self) -> SamplingOptions:
        for name in ("presence_penalty", "frequency_penalty", "logit_bias"):
            if getattr(self, name):  # 0, {} and null are fine
                raise ValueError(f"{name} is not supported by this server; send 0, {{}} or null")
        if self.stream_options is not None and not self.stream:
            raise ValueError("stream_options is only allowed when stream is true")
        return self

    def stop_list(self) -> tuple[str, ...]:
        return (self.stop,) if isinstance(self.stop, str) else tuple(self.stop or ())


def _chat_schema(schema: dict[str, Any]) -> None:
    _sampling_schema(schema)
    _when(schema, {"required": ["top_logprobs"],
                   "properties": {"top_logprobs": {"type": "integer", "minimum": 1}}},
          {"required": ["logprobs"], "properties": {"logprobs": {"const": True}}})  # fmt: skip
    _when(
        schema,
        {"required": ["tool_choice"], "properties": {"tool_choice": {"const": "required"}}},
        {"required": ["tools"], "properties": {"tools": {"type": "array", "minItems": 1}}},
    )
    schema["properties"]["tool_choice"]["description"] = (
        "A named function must be one of `tools`; a forced tool call (required or named) "
        "cannot come with a JSON response_format."
    )


class ChatCompletionRequest(SamplingOptions):
    """`POST /v1/chat/completions`."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_chat_schema)

    messages: list[ChatMessage] = Field(min_length=1, max_length=MAX_MESSAGES)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    tools: list[Tool] | None = Field(default=None, max_length=MAX_TOOLS)
    tool_choice: Literal["none", "auto", "required"] | NamedToolChoice | None = None
    parallel_tool_calls: bool | None = None
    response_format: ResponseFormat | None = None
    logprobs: bool | None = None
    top_logprobs: int | None = Field(default=None, ge=0, le=MAX_TOP_LOGPROBS)

    _fits = field_validator("max_completion_tokens")(_check_max_tokens)

    @model_validator(mode="after")
    def _consistent(self) -> ChatCompletionRequest:
        if self.top_logprobs and not self.logprobs:
            raise ValueError("top_logprobs needs logprobs: true")
        choice = self.tool_choice
        names = [t.function.name for t in self.tools or ()]
        if choice == "required" and not names:
            raise ValueError("tool_choice 'required' needs at least one tool in tools")
        if isinstance(choice, NamedToolChoice) and choice.function.name not in names:
            raise ValueError(
                f"tool_choice names {choice.function.name!r}, which is not in tools {names}"
            )
        forced = choice == "required" or isinstance(choice, NamedToolChoice)
        if forced and self.response_format and self.response_format.schema_dict() is not None:
            raise ValueError("tool_choice forces a tool call, response_format JSON: send one")
        return self

    def token_limit(self) -> int | None:
        return self.max_completion_tokens or self.max_tokens


def _completion_schema(schema: dict[str, Any]) -> None:
    _sampling_schema(schema)
    props = schema["properties"]
    ids = {"type": "array", "items": {"type": "integer"}, "minItems": 1}
    props["prompt"] = {"title": "Prompt", "anyOf": [
        {"type": "string", "minLength": 1}, ids,
        {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1,
         "maxItems": 1},
        {"type": "array", "items": ids, "minItems": 1, "maxItems": 1},
    ]}  # fmt: skip
    props["echo"] = {**props["echo"], "const": False}
    _only(schema, "suffix", "")
    props["best_of"] = {**props["best_of"], "anyOf": [{"const": 1}, _NULL]}


class CompletionRequest(SamplingOptions):
    """`POST /v1/completions`: one prompt, as text or as token ids."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_completion_schema)

    prompt: str | list[int] | list[str] | list[list[int]]
    max_tokens: int | None = Field(default=16, ge=1)  # the legacy API's default
    logprobs: int | None = Field(default=None, ge=0, le=MAX_TOP_LOGPROBS)
    echo: bool = False
    suffix: str | None = None
    best_of: int | None = None

    @model_validator(mode="after")
    def _supported(self) -> CompletionRequest:
        if isinstance(self.prompt, list) and self.prompt and not isinstance(self.prompt[0], int):
            if len(self.prompt) != 1:
                raise ValueError(f"send one prompt per request; got {len(self.prompt)}")
            self.prompt = self.prompt[0]  # type: ignore[assignment]
        if not self.prompt:
            raise ValueError("prompt is empty")
        if self.echo or self.suffix or (self.best_of or 1) != 1:
            raise ValueError("echo, suffix and best_of > 1 are not supported by this server")
        return self


# ---- responses -----------------------------------------------------------------------------
class PromptTokensDetails(_Out):
    cached_tokens: int = 0


class Usage(_Out):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    prompt_tokens_details: PromptTokensDetails | None = None


class TopLogprobOut(_Out):
    token: str
    logprob: float
    bytes: list[int] | None = None
    #: Extension (as vLLM's token-id options): the token's id in the model's vocabulary, so a
    #: trainer gets the exact sampled ids instead of re-encoding `token`. OpenAI has no such
    #: field; clients that do not know it ignore it.
    token_id: int


class TokenLogprobOut(TopLogprobOut):
    top_logprobs: list[TopLogprobOut] = Field(default_factory=list)


class ChoiceLogprobs(_Out):
    content: list[TokenLogprobOut] | None = None


class FunctionCallOut(_Out):
    name: str
    arguments: str  # a JSON string, as OpenAI sends it


class ToolCallOut(_Out):
    id: str
    type: Literal["function"] = "function"
    function: FunctionCallOut


class ToolCallDelta(ToolCallOut):
    index: int = 0


class AssistantMessage(_Out):
    role: Literal["assistant"] = "assistant"
    content: str | None = None
    tool_calls: list[ToolCallOut] | None = None


class ChatChoice(_Out):
    index: int = 0
    message: AssistantMessage
    logprobs: ChoiceLogprobs | None = None
    finish_reason: str | None = None


class ChatCompletion(_Response):
    object: Literal["chat.completion"] = "chat.completion"
    choices: list[ChatChoice]
    usage: Usage


class Delta(_Out):
    role: Literal["assistant"] | None = None
    content: str | None = None
    tool_calls: list[ToolCallDelta] | None = None


class ChunkChoice(_Out):
    index: int = 0
    delta: Delta
    logprobs: ChoiceLogprobs | None = None
    finish_reason: str | None = None


class ChatCompletionChunk(_Response):
    object: Literal["chat.completion.chunk"] = "chat.completion.chunk"
    choices: list[ChunkChoice]
    usage: Usage | None = None


class CompletionLogprobs(_Out):
    tokens: list[str]
    #: Extension: the ids of `tokens` (see `TopLogprobOut.token_id`).
    token_ids: list[int]
    token_logprobs: list[float]
    top_logprobs: list[dict[str, float]] | None = None
    text_offset: list[int]


class CompletionChoice(_Out):
    index: int = 0
    text: str
    logprobs: CompletionLogprobs | None = None
    finish_reason: str | None = None


class Completion(_Response):
    object: Literal["text_completion"] = "text_completion"
    choices: list[CompletionChoice]
    usage: Usage | None = None


class ModelCard(_Out):
    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str = "kimmy"
    max_model_len: int | None = None


class ModelList(_Out):
    object: Literal["list"] = "list"
    data: list[ModelCard]


class ErrorDetail(_Out):
    message: str
    type: str
    param: str | None = None
    code: str | None = None


class ErrorBody(_Out):
    """`{"error": {"message", "type", "param", "code"}}`, as OpenAI answers errors."""

    error: ErrorDetail
