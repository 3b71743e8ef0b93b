"""Structured output with xgrammar (model/serve/structured.py), driven through the sampler."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
import torch

from kimmy_swarm.model.errors import GenerationError, ModelConfigError
from kimmy_swarm.model.serve.sampling import RequestSampler, sample_batch
from kimmy_swarm.model.serve.structured import (
    GrammarCache,
    canonical_schema,
    schema_for_tool_choice,
    token_byte_strings,
    validate,
)
from kimmy_swarm.model.serve.types import GenerationParams
from kimmy_swarm.model.tokenizer import HFTokenizer, TiktokenTokenizer, train_bpe_tokenizer
from kimmy_swarm.model.train import python_docs_texts

pytest.importorskip("xgrammar")  # the `serve` extra
pytest.importorskip("jsonschema")

WIDTH = 640  # the model's logits: the 600-id vocabulary padded

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "search",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "maxLength": 16},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 10},
                },
                "required": ["query", "limit"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"enum": ["Paris", "Zürich", "東京"]},
                    "unit": {"enum": ["c", "f"]},
                },
                "required": ["city"],
            },
        },
    },
]
RECORD = {
    "type": "object",
    "properties": {
        "kind": {"enum": ["cat", "dog", "émeu"]},
        "age": {"type": "integer", "minimum": 0, "maximum": 99},
        "name": {"type": "string", "minLength": 1, "maxLength": 12},
    },
    "required": ["kind", "age", "name"],
}
ITEMS = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {
            "id": {"type": "integer", "minimum": 0, "maximum": 999},
            "tag": {"type": "string", "maxLength": 8},
            "ok": {"type": "boolean"},
        },
        "required": ["id", "tag", "ok"],
    },
    "minItems": 1,
    "maxItems": 3,
}


@pytest.fixture(scope="module")
def tok() -> HFTokenizer:
    lines = [ln for doc in python_docs_texts() for ln in doc.splitlines() if ln.strip()]
    return train_bpe_tokenizer(lines[:200], vocab_size=600)


@pytest.fixture(scope="module")
def cache(tok: HFTokenizer) -> GrammarCache:
    return GrammarCache(tok, vocab_size=WIDTH)


def _generate(
    tok: HFTokenizer, cache: GrammarCache, schema: dict[str, Any], n: int, seed: int
) -> list[tuple[str, str | None, list[int]]]:
    """n requests in one batch against a random 'model': seeded random logits each step."""
    eos = tok.eos_token_id
    assert eos is not None
    samplers = [
        RequestSampler(
            GenerationParams(
                max_tokens=300,
                seed=i,
                temperature=0.0 if i % 5 == 0 else 1.0,
                top_k=40 if i % 3 == 0 else 0,
            ),
            tokenizer=tok,
            eos_token_ids={eos},
            vocab_size=tok.vocab_size,
            grammar=cache.matcher(schema),
        )
        for i in range(n)
    ]
    g = torch.Generator().manual_seed(seed)
    texts, ids = [""] * n, [[] for _ in range(n)]
    active = list(range(n))
    while active:
        logits = torch.randn(len(active), WIDTH, generator=g) * 3  # (N, W)
        picks = sample_batch(logits, [samplers[i] for i in active])
        for i, pick in zip(active, picks, strict=True):
            ids[i].append(pick.token_id)
            texts[i] += samplers[i].accept(pick.token_id)[0]
        active = [i for i in active if not samplers[i].finished]
    return [(t, s.finish_reason, x) for t, s, x in zip(texts, samplers, ids, strict=True)]


@pytest.mark.parametrize("name", ["record", "items", "tool_call"])
def test_random_model_outputs_parse_and_validate(
    tok: HFTokenizer, cache: GrammarCache, name: str
) -> None:
    schema = {"record": RECORD, "items": ITEMS}.get(name) or schema_for_tool_choice(
        TOOLS, "required"
    )
    assert schema is not None
    before = cache.compile_count
    outputs = _generate(tok, cache, schema, n=30, seed=len(name))
    assert cache.compile_count - before <= 1  # 30 matchers, one compiled grammar
    for text, reason, ids in outputs:
        assert reason == "stop", text  # ended by the grammar, not max_tokens
        assert ids[-1] == tok.eos_token_id
        assert all(i < tok.vocab_size for i in ids)
        validate(schema, text)
    assert len({t for t, _, _ in outputs}) > 20  # really random outputs
    if name == "tool_call":
        names = {validate(schema, t)["name"] for t, _, _ in outputs}
        assert names == {"search", "get_weather"}


def test_one_compiled_grammar_per_schema(cache: GrammarCache) -> None:
    schema = {"type": "object", "properties": {"b": {"type": "integer"}, "a": {"type": "null"}}}
    reordered = {"properties": {"b": {"type": "integer"}, "a": {"type": "null"}}, "type": "object"}
    swapped = {"type": "object", "properties": {"a": {"type": "null"}, "b": {"type": "integer"}}}
    before = cache.compile_count
    first = cache.compile_json_schema(schema)
    matchers = [cache.matcher(schema) for _ in range(30)]
    assert cache.compile_json_schema(reordered) is first
    assert cache.compile_count == before + 1 and len(matchers) == 30
    assert cache.compile_json_schema(swapped) is not first  # property order is output order
    assert list(canonical_schema(swapped)["properties"]) == ["a", "b"]


def test_concurrent_requests_compile_a_new_schema_once(cache: GrammarCache) -> None:
    schema = {"type": "array", "items": {"type": "string", "maxLength": 3}, "maxItems": 2}
    before = cache.compile_count
    results: list[object] = []
    barrier = threading.Barrier(8)

    def worker() -> None:
        barrier.wait()
        results.append(cache.compile_json_schema(schema))

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert cache.compile_count == before + 1
    assert len(results) == 8 and all(r is results[0] for r in results)


def test_greedy_row_follows_the_grammar(tok: HFTokenizer, cache: GrammarCache) -> None:
    schema = {"enum": ["yes", "no"]}
    s = RequestSampler(
        GenerationParams(temperature=0.0, logprobs=True, top_logprobs=1),
        tokenizer=tok,
        eos_token_ids={2},
        vocab_size=tok.vocab_size,
        grammar=cache.matcher(schema),
    )
    logits = torch.zeros(1, WIDTH)  # (1, W)
    wanted = tok.encode("maybe")[0]
    logits[0, wanted] = 100.0  # what the model wants is not allowed
    logits[0, tok.encode('"n')[-1]] = 1.0
    raw = logits[0, : tok.vocab_size].log_softmax(-1)  # (V,) logprobs ignore the grammar
    text = ""
    while not s.finished:
        pick = sample_batch(logits, [s])[0]
        assert pick.token_id != wanted and pick.top[0].token_id == wanted
        assert pick.logprob == pytest.approx(float(raw[pick.token_id]), abs=1e-4)
        text += s.accept(pick.token_id)[0]
    assert validate(schema, text) in ("yes", "no")


def _byte_id(tok: HFTokenizer, byte: int) -> int:
    return token_byte_strings(tok).index(bytes([byte]))


def _allowed(
    tok: HFTokenizer, cache: GrammarCache, schema: dict[str, Any], prefix: bytes
) -> Callable[[int], bool]:
    """Whether the single-byte token of a byte may follow `prefix` (fed byte by byte)."""
    m = cache.matcher(schema)
    for b in prefix:
        assert m.accept_token(_byte_id(tok, b))
    bitmask = torch.zeros(1, (WIDTH + 31) // 32, dtype=torch.int32)  # (1, ⌈W/32⌉)
    m.fill_next_token_bitmask(bitmask, 0)

    def allowed(byte: int) -> bool:
        i = _byte_id(tok, byte)
        return bool((int(bitmask[0, i // 32]) >> (i % 32)) & 1)

    return allowed


def test_strings_never_take_surrogates_or_raw_control_bytes(
    tok: HFTokenizer, cache: GrammarCache
) -> None:
    allowed = _allowed(tok, cache, {"type": "string"}, b'"\xed')
    assert allowed(0x95) and not allowed(0xA0) and not allowed(0xBF)  # 한 yes, U+D800 no
    bounded = _allowed(tok, cache, {"type": "string", "maxLength": 5}, b'"')
    assert bounded(ord("a")) and not bounded(0x19) and not bounded(0x09)


def test_token_bytes_are_exact(tok: HFTokenizer) -> None:
    table = token_byte_strings(tok)
    text = "naïve 你好 😀 code\n\tdef f(): pass"
    assert b"".join(table[i] for i in tok.encode(text)) == text.encode("utf-8")
    assert table[tok.eos_token_id or 0] == b"" and len(table) == tok.vocab_size


def test_tiktoken_token_bytes() -> None:
    ranks = {bytes([b]): b for b in range(256)} | {b"ab": 256, b"\xe4\xbd": 257}
    t = TiktokenTokenizer(ranks, {"eos_token": "<|reserved_token_258|>"})
    table = token_byte_strings(t)
    assert table[256] == b"ab" and table[257] == b"\xe4\xbd" and table[ord("x")] == b"x"
    assert table[258] == b"" and len(table) == t.vocab_size
    assert GrammarCache(t).stop_token_ids == (258,)


def test_schema_for_tool_choice() -> None:
    named = schema_for_tool_choice(TOOLS, {"type": "function", "function": {"name": "search"}})
    assert named == {
        "type": "object",
        "properties": {
            "name": {"const": "search"},
            "arguments": TOOLS[0]["function"]["parameters"],  # type: ignore[index]
        },
        "required": ["name", "arguments"],
        "additionalProperties": False,
    }
    required = schema_for_tool_choice(TOOLS, "required")
    assert required is not None
    assert [c["properties"]["name"]["const"] for c in required["anyOf"]] == [
        "search",
        "get_weather",
    ]
    assert all(schema_for_tool_choice(TOOLS, c) is None for c in ("auto", "none", None))
    with pytest.raises(GenerationError, match="'search', 'get_weather'"):
        schema_for_tool_choice(TOOLS, {"type": "function", "function": {"name": "nope"}})
    with pytest.raises(GenerationError, match="at least one tool"):
        schema_for_tool_choice([], "required")
    with pytest.raises(GenerationError, match=r"tools\[0\]"):
        schema_for_tool_choice([{"type": "function"}], "required")
    with pytest.raises(GenerationError, match="tool_choice must be"):
        schema_for_tool_choice(TOOLS, "sometimes")


def test_validate() -> None:
    assert validate(RECORD, '{"kind": "cat", "age": 3, "name": "Tom"}')["age"] == 3
    with pytest.raises(GenerationError, match="not JSON"):
        validate(RECORD, '{"kind": "cat"')
    with pytest.raises(GenerationError, match="at age"):
        validate(RECORD, '{"kind": "cat", "age": 300, "name": "Tom"}')
    with pytest.raises(GenerationError, match="invalid JSON schema"):
        validate({"type": 5}, "1")


def test_cache_errors(tok: HFTokenizer, cache: GrammarCache) -> None:
    with pytest.raises(GenerationError, match="cannot compile"):
        cache.compile_json_schema({"type": "nonsense"})
    with pytest.raises(ModelConfigError, match="below the tokenizer"):
        GrammarCache(tok, vocab_size=10)
    s = RequestSampler(
        GenerationParams(),
        tokenizer=tok,
        eos_token_ids={2},
        vocab_size=tok.vocab_size,
        grammar=cache.matcher(RECORD),
    )
    with pytest.raises(GenerationError, match="vocab_size=704"):
        sample_batch(torch.zeros(1, 704), [s])  # the cache was built for width 640
