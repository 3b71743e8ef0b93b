"""Structured output: JSON-schema grammars (xgrammar) that constrain decoding token by token.

    cache = GrammarCache(tokenizer, vocab_size=model_vocab_size)        # once per engine
    schema = schema_for_tool_choice(tools, tool_choice) or response_schema
    sampler = RequestSampler(params, ..., grammar=cache.matcher(schema))
    value = validate(schema, text)                                       # parsed and checked

One compiled grammar serves every request with the same schema (compiling costs ms to
seconds; a matcher costs microseconds). xgrammar is imported on first use, so the engine
runs without it as long as no request asks for structured output.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from itertools import pairwise
from typing import TYPE_CHECKING, Any

import torch

from kimmy_swarm.model.errors import GenerationError, ModelConfigError
from kimmy_swarm.model.tokenizer import HFTokenizer, TiktokenTokenizer, Tokenizer

if TYPE_CHECKING:
    import xgrammar as xgr

__all__ = [
    "GrammarCache",
    "JsonGrammarMatcher",
    "canonical_schema",
    "schema_for_tool_choice",
    "token_byte_strings",
    "validate",
]


# ---- the vocabulary as bytes ---------------------------------------------------------------
def _byte_level_chars() -> dict[str, int]:
    """Byte-level BPE's printable stand-in character for each byte (GPT-2 scheme): bytes
    that are printable Latin-1 stand for themselves, the others map to U+0100 onwards."""
    kept = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    char_of = {b: chr(b) for b in kept}
    for n, b in enumerate(b for b in range(256) if b not in char_of):
        char_of[b] = chr(0x100 + n)
    return {c: b for b, c in char_of.items()}


def _decoder_types(node: Any) -> set[str]:
    """All `type` names in a tokenizer.json `decoder` (Sequence decoders nest)."""
    if isinstance(node, Mapping):
        found = {node["type"]} if isinstance(node.get("type"), str) else set()
        for value in node.values():
            found |= _decoder_types(value)
        return found
    if isinstance(node, list):
        return set().union(*(_decoder_types(v) for v in node)) if node else set()
    return set()


def _hf_piece_bytes(piece: str, kind: str, byte_of: Mapping[str, int]) -> bytes:
    if kind == "byte_level":
        return bytes(byte_of[c] for c in piece) if all(c in byte_of for c in piece) else b""
    if kind == "sentencepiece" and len(piece) == 6 and piece.startswith("<0x"):
        return bytes([int(piece[3:5], 16)])  # byte-fallback token "<0x0A>"
    return piece.replace("\u2581", " ").encode("utf-8")  # "▁" is SentencePiece's space


def _hf_token_bytes(tokenizer: HFTokenizer) -> list[bytes]:
    tok = tokenizer._tok  # the wrapped `tokenizers.Tokenizer`; Tokenizer has no bytes API
    types = _decoder_types(json.loads(tok.to_str()).get("decoder"))
    kind = (
        "byte_level"
        if "ByteLevel" in types
        else "sentencepiece"
        if types & {"ByteFallback", "Metaspace"}
        else "plain"
    )
    byte_of = _byte_level_chars()
    added = tok.get_added_tokens_decoder()  # {id: AddedToken}
    out = []
    for i in range(tokenizer.vocab_size):
        if i in added:  # written out as is, or never text at all when special
            out.append(b"" if added[i].special else added[i].content.encode("utf-8"))
            continue
        piece = tok.id_to_token(i)
        out.append(b"" if piece is None else _hf_piece_bytes(piece, kind, byte_of))
    return out


def _tiktoken_token_bytes(tokenizer: TiktokenTokenizer) -> list[bytes]:
    enc = tokenizer._enc  # the wrapped `tiktoken.Encoding`
    out = []
    for i in range(tokenizer.vocab_size):
        if i in tokenizer._special_ids:
            out.append(b"")
            continue
        try:
            out.append(enc.decode_single_token_bytes(i))
        except KeyError:  # an id between the ranks and the specials
            out.append(b"")
    return out


def token_byte_strings(tokenizer: Tokenizer) -> list[bytes]:
    """The raw bytes each id stands for (`b""` for special tokens: never text).

    Exact for byte-level BPE (our trained tokenizers), SentencePiece byte fallback and
    tiktoken; for any other `Tokenizer` the decoded text of the single id (lossy where a
    token holds part of a character).
    """
    if isinstance(tokenizer, HFTokenizer):
        return _hf_token_bytes(tokenizer)
    if isinstance(tokenizer, TiktokenTokenizer):
        return _tiktoken_token_bytes(tokenizer)
    return [tokenizer.decode([i]).encode("utf-8") for i in range(tokenizer.vocab_size)]


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


# ---- the cache -----------------------------------------------------------------------------
class GrammarCache:
    """One xgrammar compiler for a tokenizer, and the compiled grammars by schema.

    Thread-safe: concurrent requests for a new schema compile it once; different schemas
    compile in parallel. The least recently used grammars go past `max_entries`.

    Args:
        tokenizer: the model's tokenizer.
        vocab_size: the width of the model's logits (may exceed the tokenizer's
            vocabulary: the extra ids are never allowed); default the tokenizer's.
        stop_token_ids: ids that end a complete document; default the tokenizer's EOS.
        any_whitespace: allow free whitespace between JSON tokens. Off by default: a small
            or random model may otherwise emit whitespace until max_tokens.
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
        self._token_bytes = _grammar_vocabulary(token_byte_strings(tokenizer))
        self._no_tail = _pack_bits(
            [not (t and t[0] in _SURROGATE_TAIL) for t in self._token_bytes]
            + [True] * (vocab - len(self._token_bytes))
        )
        info = xgr.TokenizerInfo(
            self._token_bytes,
            xgr.VocabType.RAW,
            vocab_size=vocab,
            stop_token_ids=stops,
        )
        # xgrammar's own cache is keyed by the schema text; ours by canonical schema
        self._compiler = xgr.GrammarCompiler(info, max_threads=max_threads, cache_enabled=False)
        self._any_whitespace = any_whitespace
        self._max_entries = max_entries
        self._compiled: OrderedDict[str, xgr.CompiledGrammar] = OrderedDict()
        self._locks: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()
        self.compile_count = 0

    def compile_json_schema(self, schema: Mapping[str, Any]) -> xgr.CompiledGrammar:
        """The compiled grammar of `schema`, the same object for every equal schema.

        Raises:
            GenerationError: xgrammar cannot compile the schema (the message says why).
        """
        canonical = canonical_schema(schema)
        key = json.dumps(canonical, separators=(",", ":"), ensure_ascii=False)
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
                compiled = self._compiler.compile_json_schema(
                    key, any_whitespace=self._any_whitespace, strict_mode=True
                )
            except (RuntimeError, ValueError) as e:  # xgrammar's InvalidJSONError, …
                raise GenerationError(f"cannot compile the JSON schema: {e}") from e
            with self._lock:
                self.compile_count += 1
                self._compiled[key] = compiled
                self._locks.pop(key, None)
                while len(self._compiled) > self._max_entries:
                    self._compiled.popitem(last=False)
        return compiled

    def matcher(self, schema: Mapping[str, Any]) -> JsonGrammarMatcher:
        """A fresh matcher (one per request) of `schema`'s shared compiled grammar."""
        import xgrammar as xgr

        compiled = self.compile_json_schema(schema)
        return JsonGrammarMatcher(xgr.GrammarMatcher(compiled), self._token_bytes, self._no_tail)
