"""Structured output: grammars (xgrammar) that constrain decoding token by token.

    cache = GrammarCache(tokenizer, vocab_size=model_vocab_size)        # once per engine
    schema = schema_for_tool_choice(tools, tool_choice) or response_schema
    sampler = RequestSampler(params, ..., grammar=cache.matcher(schema))
    value = validate(schema, text)                                       # parsed and checked

A grammar is a JSON schema (a mapping), or a `TaggedGrammar`: free text in which tagged
blocks are constrained, compiled from an xgrammar structural tag (the tool calls of a chat
template's own format, `tool_calls.ToolCallGrammar`). One compiled grammar serves every
request with the same one (compiling costs ms to seconds; a matcher costs microseconds).
xgrammar is imported on first use, so the engine runs without it as long as no request
asks for structured output.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from itertools import pairwise
from typing import TYPE_CHECKING, Any, Protocol

import torch

from kimmy_swarm.model.errors import GenerationError, ModelConfigError
from kimmy_swarm.model.serve._token_bytes import token_byte_strings
from kimmy_swarm.model.tokenizer import Tokenizer

if TYPE_CHECKING:
    import xgrammar as xgr

__all__ = [
    "GrammarCache",
    "GrammarSpec",
    "JsonGrammarMatcher",
    "TaggedGrammar",
    "TaggedGrammarMatcher",
    "canonical_schema",
    "schema_for_tool_choice",
    "token_byte_strings",
    "validate",
]


# ---- schemas -------------------------------------------------------------------------------
def canonical_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """`schema` with keys sorted — except the names under `properties`, whose order is the
    order the grammar writes them in (a tool call's "name" before its "arguments")."""
    return _canonical(schema, in_properties=False)


def _canonical(node: Any, *, in_properties: bool) -> Any:
    if isinstance(node, Mapping):
        keys = list(node) if in_properties else sorted(node)
        return {
            k: _canonical(node[k], in_properties=k == "properties" and not in_properties)
            for k in keys
        }
    if isinstance(node, list):
        return [_canonical(v, in_properties=False) for v in node]
    return node


def _tool_function(tool: Any, index: int) -> Mapping[str, Any]:
    # OpenAI's {"type": "function", "function": {...}}, or the bare function object
    fn = tool.get("function", tool) if isinstance(tool, Mapping) else None
    if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
        raise GenerationError(
            f"tools[{index}] must be {{'type': 'function', 'function': {{'name': str, "
            f"'parameters': object}}}}; got {tool!r}"
        )
    return fn


def _call_schema(fn: Mapping[str, Any]) -> dict[str, Any]:
    params = fn.get("parameters") or {"type": "object", "properties": {}}
    return {
        "type": "object",
        "properties": {"name": {"const": fn["name"]}, "arguments": params},
        "required": ["name", "arguments"],
        "additionalProperties": False,
    }


def schema_for_tool_choice(
    tools: Sequence[Any] | None, tool_choice: str | Mapping[str, Any] | None
) -> dict[str, Any] | None:
    """The schema of a forced tool call `{"name": …, "arguments": {…}}`, None when free.

    A named choice (`{"type": "function", "function": {"name": "f"}}`) allows that tool;
    "required" allows any of them (anyOf); "auto", "none" and None constrain nothing.

    Raises:
        GenerationError: a malformed tool, an unknown name, "required" with no tools, or
            another tool_choice value.
    """
    if tool_choice is None or tool_choice in ("auto", "none"):
        return None
    functions = [_tool_function(t, i) for i, t in enumerate(tools or ())]
    if tool_choice == "required":
        if not functions:
            raise GenerationError("tool_choice 'required' needs at least one tool")
        return {"anyOf": [_call_schema(fn) for fn in functions]}
    name = None
    if isinstance(tool_choice, Mapping):
        name = (tool_choice.get("function") or {}).get("name")
    if not isinstance(name, str):
        raise GenerationError(
            "tool_choice must be 'auto', 'none', 'required' or {'type': 'function', "
            f"'function': {{'name': str}}}}; got {tool_choice!r}"
        )
    for fn in functions:
        if fn["name"] == name:
            return _call_schema(fn)
    raise GenerationError(
        f"tool_choice names {name!r}; the tools are {[fn['name'] for fn in functions]}"
    )


def validate(schema: Mapping[str, Any], text: str) -> Any:
    """Parse `text` as JSON and check it against `schema` (jsonschema, the schema's draft,
    2020-12 when it names none); return the parsed value.

    Raises:
        GenerationError: the text is not JSON, does not match, or the schema is invalid.
    """
    import jsonschema

    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise GenerationError(f"output is not JSON ({e}): {text[:200]!r}") from e
    cls = jsonschema.validators.validator_for(schema)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as e:
        raise GenerationError(f"invalid JSON schema: {e.message}") from e
    error = jsonschema.exceptions.best_match(cls(schema).iter_errors(value))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(root)"
        raise GenerationError(f"output does not match the schema at {where}: {error.message}")
    return value


# Two holes of xgrammar (≤ 0.2.9) in JSON strings, closed here so that every output parses
# and validates: length-bounded strings take raw U+0000–U+001F (its issue #800; \n and \r
# it excludes there), and any string takes ED A0–BF …, the UTF-8 form of the surrogates
# U+D800–U+DFFF, which decodes to U+FFFD and so breaks maxLength.
_FORBIDDEN_BYTES = frozenset(range(0x20)) - {0x0A, 0x0D}
_SURROGATE_LEAD = 0xED
_SURROGATE_TAIL = range(0xA0, 0xC0)  # second bytes that make ED … a surrogate


def _grammar_vocabulary(token_bytes: list[bytes]) -> list[bytes]:
    """The vocabulary shown to xgrammar: tokens holding a forbidden control byte or a whole
    surrogate become special (`b""`, never allowed). Valid JSON never needs them: compact
    separators have no control bytes, and with `any_whitespace` a newline still separates."""
    return [
        b"" if _FORBIDDEN_BYTES.intersection(t) or _has_surrogate(t) else t for t in token_bytes
    ]


def _has_surrogate(token: bytes) -> bool:
    return any(a == _SURROGATE_LEAD and b in _SURROGATE_TAIL for a, b in pairwise(token))


def _pack_bits(allowed: list[bool]) -> torch.Tensor:  # (⌈V/32⌉,) int32
    """xgrammar's bitmask layout: bit j of word k stands for id 32·k + j."""
    words = [0] * ((len(allowed) + 31) // 32)
    for i, ok in enumerate(allowed):
        if ok:
            words[i // 32] |= 1 << (i % 32)
    return torch.tensor([w - (1 << 32) if w >= 1 << 31 else w for w in words], dtype=torch.int32)


class JsonGrammarMatcher:
    """An `xgrammar.GrammarMatcher` that also never lets a string continue `ED` with a byte
    that makes a surrogate, when the two bytes come in different tokens."""

    def __init__(
        self, matcher: xgr.GrammarMatcher, token_bytes: Sequence[bytes], no_tail: torch.Tensor
    ) -> None:
        self.matcher = matcher
        self._bytes = token_bytes
        self._no_tail = no_tail  # (⌈V/32⌉,) ids not starting with a surrogate's 2nd byte
        self._after_lead = False

    def accept_token(self, token_id: int) -> bool:
        ok = self.matcher.accept_token(token_id)
        if ok and 0 <= token_id < len(self._bytes) and self._bytes[token_id]:
            self._after_lead = self._bytes[token_id][-1] == _SURROGATE_LEAD
        return ok

    def fill_next_token_bitmask(self, bitmask: torch.Tensor, index: int = 0) -> bool:
        needed = self.matcher.fill_next_token_bitmask(bitmask, index)
        if self._after_lead:
            bitmask[index] &= self._no_tail
            return True
        return needed

    def is_terminated(self) -> bool:
        return self.matcher.is_terminated()

    def is_completed(self) -> bool:
        return self.matcher.is_completed()


class TaggedGrammarMatcher(JsonGrammarMatcher):
    """The matcher of a `TaggedGrammar`. It is compiled over the whole vocabulary, so the
    free text around blocks may hold any token (a tab, say); inside a block, and while the
    text ends in part of its opening, only the tokens JSON grammars take are allowed (`safe`:
    see `_grammar_vocabulary`), so the block's JSON parses and validates as above."""

    def __init__(
        self,
        matcher: xgr.GrammarMatcher,
        token_bytes: Sequence[bytes],
        no_tail: torch.Tensor,
        safe: torch.Tensor,
        *,
        block_open: str,
        block_end: str,
    ) -> None:
        super().__init__(matcher, token_bytes, no_tail)
        self._safe = safe  # (⌈V/32⌉,)
        self._open, self._end = block_open.encode(), block_end.encode()
        self._inside = False
        self._tail = b""  # the last bytes, where a block's opening or end may have begun

    def accept_token(self, token_id: int) -> bool:
        ok = super().accept_token(token_id)
        if ok and 0 <= token_id < len(self._bytes):
            self._advance(self._bytes[token_id])
        return ok

    def _advance(self, data: bytes) -> None:
        text = self._tail + data
        while (at := text.find(mark := self._end if self._inside else self._open)) >= 0:
            text = text[at + len(mark) :]
            self._inside = not self._inside
        keep = max(len(self._open), len(self._end)) - 1
        self._tail = text[-keep:] if keep else b""

    def _guarded(self) -> bool:
        opening = (self._open[:k] for k in range(1, len(self._open)))
        return self._inside or any(self._tail.endswith(part) for part in opening)

    def fill_next_token_bitmask(self, bitmask: torch.Tensor, index: int = 0) -> bool:
        needed = super().fill_next_token_bitmask(bitmask, index)
        if self._guarded():
            bitmask[index] &= self._safe
            return True
        return needed


class TaggedGrammar(Protocol):
    """A grammar given as an xgrammar structural tag: free text in which each block, from
    `block_open` to the first `block_end` after it, is constrained."""

    @property
    def block_open(self) -> str: ...

    @property
    def block_end(self) -> str: ...

    def structural_tag(self, *, max_whitespace: int | None) -> dict[str, Any]: ...


GrammarSpec = Mapping[str, Any] | TaggedGrammar


# ---- the cache -----------------------------------------------------------------------------
class GrammarCache:
    """xgrammar compilers for a tokenizer, and the compiled grammars by canonical form (a
    schema with sorted keys; a structural tag's JSON text).

    Thread-safe: concurrent requests for a new grammar compile it once; different grammars
    compile in parallel. The least recently used grammars go past `max_entries`.

    Args:
        tokenizer: the model's tokenizer.
        vocab_size: the width of the model's logits (may exceed the tokenizer's
            vocabulary: the extra ids are never allowed); default the tokenizer's.
        stop_token_ids: ids that end a complete document; default the tokenizer's EOS.
        any_whitespace: allow free whitespace between JSON tokens. Off by default: a small
            or random model may otherwise emit whitespace until max_tokens (tool-call
            arguments then take at most one whitespace character between tokens).
        max_entries: compiled grammars kept.
        max_threads: xgrammar's compile threads.

    Raises:
        ModelConfigError: no stop token (no EOS and none given), or vocab_size below the
            tokenizer's.
    """

    def __init__(
        self,
        tokenizer: Tokenizer,
        *,
        vocab_size: int | None = None,
        stop_token_ids: Sequence[int] | None = None,
        any_whitespace: bool = False,
        max_entries: int = 256,
        max_threads: int = 8,
    ) -> None:
        import xgrammar as xgr

        vocab = vocab_size if vocab_size is not None else tokenizer.vocab_size
        if vocab < tokenizer.vocab_size:
            raise ModelConfigError(
                f"vocab_size {vocab} is below the tokenizer's {tokenizer.vocab_size}"
            )
        eos = tokenizer.eos_token_id
        stops = list(stop_token_ids) if stop_token_ids is not None else [] if eos is None else [eos]
        if not stops:
            raise ModelConfigError("GrammarCache needs stop_token_ids: the tokenizer has no EOS")
        self.vocab_size = vocab
        self.stop_token_ids = tuple(stops)
        self._raw_bytes = token_byte_strings(tokenizer)
        self._token_bytes = _grammar_vocabulary(self._raw_bytes)
        pad = [True] * (vocab - len(self._raw_bytes))
        self._no_tail = _pack_bits(
            [not (t and t[0] in _SURROGATE_TAIL) for t in self._raw_bytes] + pad
        )
        kept = zip(self._token_bytes, self._raw_bytes, strict=True)
        self._safe = _pack_bits([bool(t) or not r for t, r in kept] + pad)

        def compiler(token_bytes: list[bytes]) -> xgr.GrammarCompiler:
            info = xgr.TokenizerInfo(
                token_bytes, xgr.VocabType.RAW, vocab_size=vocab, stop_token_ids=stops
            )
            # xgrammar's own cache is keyed by the grammar text; ours by canonical form
            return xgr.GrammarCompiler(info, max_threads=max_threads, cache_enabled=False)

        self._compiler = compiler(self._token_bytes)  # JSON schemas
        self._tag_compiler = compiler(self._raw_bytes)  # tagged grammars (free text around)
        self._any_whitespace = any_whitespace
        self._max_entries = max_entries
        self._compiled: OrderedDict[str, xgr.CompiledGrammar] = OrderedDict()
        self._locks: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()
        self.compile_count = 0

    def compile(self, spec: GrammarSpec) -> xgr.CompiledGrammar:
        """The compiled grammar of a JSON schema (a mapping) or a `TaggedGrammar`, the same
        object for every equal one.

        Raises:
            GenerationError: xgrammar cannot compile it (the message says why).
        """
        if isinstance(spec, Mapping):
            return self.compile_json_schema(spec)
        tag = spec.structural_tag(max_whitespace=None if self._any_whitespace else 1)
        text = json.dumps(tag, separators=(",", ":"), ensure_ascii=False)
        return self._cached(
            f"tag:{text}", lambda: self._tag_compiler.compile_structural_tag(text), "structural tag"
        )

    def compile_json_schema(self, schema: Mapping[str, Any]) -> xgr.CompiledGrammar:
        """The compiled grammar of `schema`, the same object for every equal schema.

        Raises:
            GenerationError: xgrammar cannot compile the schema (the message says why).
        """
        key = json.dumps(canonical_schema(schema), separators=(",", ":"), ensure_ascii=False)

        def build() -> xgr.CompiledGrammar:
            return self._compiler.compile_json_schema(
                key, any_whitespace=self._any_whitespace, strict_mode=True
            )

        return self._cached(key, build, "JSON schema")

    def _cached(
        self, key: str, build: Callable[[], xgr.CompiledGrammar], what: str
    ) -> xgr.CompiledGrammar:
        with self._lock:
            if (hit := self._compiled.get(key)) is not None:
                self._compiled.move_to_end(key)
                return hit
            key_lock = self._locks.setdefault(key, threading.Lock())
        with key_lock:
            with self._lock:
                if (hit := self._compiled.get(key)) is not None:
                    return hit  # compiled by another thread meanwhile
            try:
                compiled = build()
            except (RuntimeError, ValueError) as e:  # xgrammar's InvalidJSONError, …
                raise GenerationError(f"cannot compile the {what}: {e}") from e
            with self._lock:
                self.compile_count += 1
                self._compiled[key] = compiled
                self._locks.pop(key, None)
                while len(self._compiled) > self._max_entries:
                    self._compiled.popitem(last=False)
        return compiled

    def matcher(self, spec: GrammarSpec) -> JsonGrammarMatcher:
        """A fresh matcher (one per request) of the shared compiled grammar of `spec` (a
        JSON schema or a `TaggedGrammar`)."""
        import xgrammar as xgr

        matcher = xgr.GrammarMatcher(self.compile(spec))
        if isinstance(spec, Mapping):
            return JsonGrammarMatcher(matcher, self._token_bytes, self._no_tail)
        return TaggedGrammarMatcher(
            matcher, self._raw_bytes, self._no_tail, self._safe,
            block_open=spec.block_open, block_end=spec.block_end,
        )  # fmt: skip
