"""Tool calls in a chat template's own format (model/serve/tool_calls.py, chat.py): which
templates have one, tools and history rendered by the template, tool_choice to grammars whose
output is always a valid call (random logits through the sampler), blocks parsed back, our
own format kept for other templates, and the real Qwen2.5 template read from its GGUF."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import torch

from kimmy_swarm.model.errors import GenerationError
from kimmy_swarm.model.serve.chat import (
    TOOLS_HEADER,
    assistant_message,
    output_mode,
    render_chat,
)
from kimmy_swarm.model.serve.protocol import ChatCompletionRequest, ChatMessage, Tool
from kimmy_swarm.model.serve.sampling import RequestSampler, sample_batch
from kimmy_swarm.model.serve.structured import (
    GrammarCache,
    schema_for_tool_choice,
    token_byte_strings,
    validate,
)
from kimmy_swarm.model.serve.tool_calls import (
    HERMES,
    ToolCallGrammar,
    parse_tool_call_blocks,
    tool_call_format,
    tool_call_grammar,
)
from kimmy_swarm.model.serve.types import GenerationParams
from kimmy_swarm.model.tokenizer import HFTokenizer
from tests.support.tool_templates import PLAIN_TEMPLATE, TOOLS_TEMPLATE, with_template

pytest.importorskip("xgrammar")  # the `serve` extra
pytest.importorskip("jsonschema")

WIDTH = 416  # the model's logits: the 386-id vocabulary padded
LOOKUP = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "maxLength": 12},
        "limit": {"type": "integer", "minimum": 1, "maximum": 9},
    },
    "required": ["query", "limit"],
}
CITY = {"type": "object", "properties": {"city": {"enum": ["Paris", "Zürich", "東京"]}}}
TOOLS = [
    {"type": "function", "function": {"name": "lookup", "description": "Look up the docs.",
                                      "parameters": LOOKUP}},
    {"type": "function", "function": {"name": "weather", "parameters": CITY}},
    {"type": "function", "function": {"name": "done"}},
]  # fmt: skip
SCHEMAS = {"lookup": LOOKUP, "weather": CITY, "done": {"type": "object"}}


TOK = with_template(TOOLS_TEMPLATE)


def _req(**body: Any) -> ChatCompletionRequest:
    body.setdefault("messages", [{"role": "user", "content": "hi"}])
    return ChatCompletionRequest.model_validate({"tools": TOOLS, **body})


def _tools() -> list[Tool]:
    return [Tool.model_validate(t) for t in TOOLS]


def _history() -> list[ChatMessage]:
    calls = [
        {"id": "c1", "type": "function", "function": {"name": "lookup",
                                                      "arguments": '{"query": "é", "limit": 2}'}},
        {"id": "c2", "type": "function", "function": {"name": "done", "arguments": "{}"}},
    ]  # fmt: skip
    return [ChatMessage.model_validate(m) for m in [
        {"role": "system", "content": "You review code."},
        {"role": "user", "content": "Find x."},
        {"role": "assistant", "content": "Looking.", "tool_calls": calls},
        {"role": "tool", "tool_call_id": "c1", "content": "x is 1"},
    ]]  # fmt: skip


def test_the_format_is_found_by_rendering_a_probe() -> None:
    assert tool_call_format(TOK) is HERMES
    bare_json = TOOLS_TEMPLATE.replace("<tool_call>{{ '\\n' }}", "").replace(
        "{{ '\\n' }}</tool_call>", ""
    )  # reads `tools`, writes calls as Llama 3.1 does
    unlisted = TOOLS_TEMPLATE.replace("{{ '\\n' + tool | tojson }}", "a tool")
    refusing = "{{ raise_exception('no tools here') if tools }}" + TOOLS_TEMPLATE
    for template in (None, PLAIN_TEMPLATE, bare_json, unlisted, refusing):
        assert tool_call_format(with_template(template)) is None, template


def test_tools_and_history_are_rendered_by_the_template_itself() -> None:
    prompt = render_chat(TOK, _history(), _tools())
    listed = "\n".join(json.dumps(t, ensure_ascii=False) for t in TOOLS)
    system = (
        "<|im_system|>system<|im_middle|>You review code.\n\nTools, one signature per line:\n"
        f"<tools>\n{listed}\n</tools>\n"
    )
    assert prompt.text.startswith(system) and TOOLS_HEADER not in prompt.text
    assert prompt.text.endswith(
        "<|im_user|>user<|im_middle|>Find x.<|im_end|>"
        "<|im_assistant|>assistant<|im_middle|>Looking.\n"
        '<tool_call>\n{"name": "lookup", "arguments": {"query": "é", "limit": 2}}\n</tool_call>\n'
        '<tool_call>\n{"name": "done", "arguments": {}}\n</tool_call><|im_end|>'
        "<|im_user|>tool<|im_middle|><tool_response>\nx is 1\n</tool_response><|im_end|>"
        "<|im_assistant|>assistant<|im_middle|>"
    )  # arguments written as objects, not as JSON text in a JSON string
    head = prompt.text.split("<|im_user|>")[0]
    assert prompt.cache_point == len(TOK.encode(head))  # the system turn, tools included
    assert prompt.ids[prompt.cache_point] == TOK.token_to_id("<|im_user|>")


@pytest.mark.parametrize("template", [None, PLAIN_TEMPLATE])
def test_templates_without_tools_keep_our_format(template: str | None) -> None:
    tok = with_template(template)
    prompt = render_chat(tok, _history()[:2], _tools())
    assert f"You review code.\n\n{TOOLS_HEADER}<tools>\n" in prompt.text
    mode = output_mode(_req(tool_choice="required"), tok)
    assert mode.tool_format is None
    assert mode.json_schema == schema_for_tool_choice(TOOLS, "required")
    message, finish = assistant_message('{"name": "done", "arguments": {}}', mode, "stop")
    assert finish == "tool_calls" and message.tool_calls and message.content is None


def test_tool_choice_becomes_a_tool_call_grammar() -> None:
    required = output_mode(_req(tool_choice="required"), TOK)
    assert isinstance(required.json_schema, ToolCallGrammar) and required.forced
    assert required.json_schema.choice == "required" and required.json_schema.parallel
    assert [n for n, _ in required.json_schema.tools] == ["lookup", "weather", "done"]
    assert required.tool_format is HERMES and required.tool_names == ("lookup", "weather", "done")
    one = output_mode(_req(tool_choice="required", parallel_tool_calls=False), TOK).json_schema
    assert isinstance(one, ToolCallGrammar) and not one.parallel
    named = {"type": "function", "function": {"name": "weather"}}
    forced = output_mode(_req(tool_choice=named), TOK).json_schema
    assert isinstance(forced, ToolCallGrammar)
    assert [n for n, _ in forced.tools] == ["weather"] and not forced.parallel
    auto = output_mode(_req(), TOK)
    assert isinstance(auto.json_schema, ToolCallGrammar) and not auto.forced
    assert auto.json_schema.choice == "auto"
    assert output_mode(_req(tool_choice="none"), TOK).json_schema is None
    fmt = {"type": "json_schema", "json_schema": {"name": "A", "schema": {"type": "object"}}}
    answer = output_mode(_req(response_format=fmt), TOK)  # auto + a schema: the schema
    assert answer.json_schema == {"type": "object"} and answer.tool_names == ()
    assert tool_call_grammar(_tools(), "none", parallel=True) is None
    with pytest.raises(GenerationError, match="tool_choice must be"):
        tool_call_grammar(_tools(), "sometimes", parallel=True)


def test_blocks_are_read_back_as_openai_tool_calls() -> None:
    mode = output_mode(_req(), TOK)
    text = (
        "Let me look.\n"
        '<tool_call>\n{"name": "lookup", "arguments": {"query": "a</tool_call>", "limit": 1}}'
        '\n</tool_call>\n<tool_call>\n{"name": "done", "arguments": {}}\n</tool_call>\n'
    )
    message, finish = assistant_message(text, mode, "stop")
    assert finish == "tool_calls" and message.content == "Let me look."
    assert message.tool_calls is not None
    first, second = message.tool_calls
    assert first.function.name == "lookup" and first.id.startswith("call_") != second.id
    assert json.loads(first.function.arguments) == {"query": "a</tool_call>", "limit": 1}
    assert (second.function.name, second.function.arguments) == ("done", "{}")
    only = '<tool_call>\n{"name": "done", "arguments": {}}\n</tool_call>'
    assert assistant_message(only, mode, "stop")[0].content is None
    for broken in (
        "plain text, no call",
        '<tool_call>\n{"name": "done", "arguments": {}}',  # cut by max_tokens
        '<tool_call>\n{"name": "nope", "arguments": {}}\n</tool_call>',
        '<tool_call>\n{"name": "done", "arguments": 3}\n</tool_call>',
        '<tool_call>\n{"name": "done", "arguments": {}\n</tool_call>',
    ):
        message, finish = assistant_message(broken, mode, "length")
        assert (message.content, message.tool_calls, finish) == (broken, None, "length")
    assert parse_tool_call_blocks("no block", HERMES, ["done"]) is None


def _sampler(cache: GrammarCache, grammar: ToolCallGrammar, seed: int) -> RequestSampler:
    return RequestSampler(
        GenerationParams(max_tokens=600, seed=seed, temperature=1.0 if seed % 4 else 0.0),
        tokenizer=TOK,
        eos_token_ids={TOK.eos_token_id or 0},
        vocab_size=TOK.vocab_size,
        grammar=cache.matcher(grammar),
    )


def _run(samplers: list[RequestSampler], seed: int) -> list[str]:
    """Decode every sampler to its end against a random 'model': seeded random logits."""
    g = torch.Generator().manual_seed(seed)
    texts = [""] * len(samplers)
    active = list(range(len(samplers)))
    while active:
        logits = torch.randn(len(active), WIDTH, generator=g) * 3  # (N, W)
        for i, pick in zip(active, sample_batch(logits, [samplers[i] for i in active]),
                           strict=True):  # fmt: skip
            texts[i] += samplers[i].accept(pick.token_id)[0]
        active = [i for i in active if not samplers[i].finished]
    assert all(s.finish_reason == "stop" for s in samplers), texts  # the grammar ended them
    return texts


@pytest.fixture(scope="module")
def cache() -> GrammarCache:
    return GrammarCache(TOK, vocab_size=WIDTH)


@pytest.mark.parametrize(
    ("choice", "parallel"),
    [("required", False), ("required", True), ({"function": {"name": "lookup"}}, True)],
)
def test_forced_calls_are_valid_blocks_with_random_logits(
    cache: GrammarCache, choice: Any, parallel: bool
) -> None:
    grammar = output_mode(_req(tool_choice=choice, parallel_tool_calls=parallel), TOK).json_schema
    assert isinstance(grammar, ToolCallGrammar)
    texts = _run([_sampler(cache, grammar, seed) for seed in range(24)], seed=7)
    counts, names = [], set()
    for text in texts:
        assert text.startswith("<tool_call>\n"), text  # only blocks: nothing before
        parsed = parse_tool_call_blocks(text, HERMES, list(SCHEMAS))
        assert parsed is not None and parsed[0] is None, text  # and nothing around them
        for call in parsed[1]:
            validate(SCHEMAS[call.function.name], call.function.arguments)
            names.add(call.function.name)
        counts.append(len(parsed[1]))
    assert len(set(texts)) > 16  # really random outputs
    if isinstance(choice, dict):
        assert names == {"lookup"} and set(counts) == {1}
    else:
        assert names == set(SCHEMAS)
        assert set(counts) == {1} if not parallel else max(counts) > 1


def _mask(matcher: Any) -> set[int]:
    bitmask = torch.zeros(1, (WIDTH + 31) // 32, dtype=torch.int32)  # (1, ⌈W/32⌉)
    matcher.fill_next_token_bitmask(bitmask, 0)
    return {i for i in range(WIDTH) if (int(bitmask[0, i // 32]) >> (i % 32)) & 1}


def test_auto_constrains_a_block_once_it_begins(cache: GrammarCache) -> None:
    grammar = tool_call_grammar(_tools(), "auto", parallel=False)
    assert grammar is not None
    table = token_byte_strings(TOK)
    tab = table.index(b"\t")
    open_id = TOK.token_to_id("<tool_call>")
    s = _sampler(cache, grammar, seed=1)
    assert s.grammar is not None
    for token in TOK.encode("Let me\tlook it up:\n"):  # free text: any token, a tab too
        assert token in _mask(s.grammar)
        s.accept(token)
    assert {tab, open_id, TOK.eos_token_id} <= _mask(s.grammar)
    s.accept(open_id)  # the block begins: from here on only a valid call
    allowed = _mask(s.grammar)
    assert allowed and all(table[i].startswith(b"\n") for i in allowed)
    text = "Let me\tlook it up:\n<tool_call>" + _run([s], seed=3)[0]
    parsed = parse_tool_call_blocks(text, HERMES, list(SCHEMAS))
    assert parsed is not None and parsed[0] == "Let me\tlook it up:"
    (call,) = parsed[1]
    validate(SCHEMAS[call.function.name], call.function.arguments)


def test_inside_a_block_strings_never_take_raw_control_bytes(cache: GrammarCache) -> None:
    """The tagged grammars see the whole vocabulary (free text may hold a tab), so inside
    a block the matcher itself keeps out what JSON strings must not hold (xgrammar lets a
    length-bounded string take raw control bytes)."""
    grammar = tool_call_grammar(_tools(), "auto", parallel=False)
    assert grammar is not None
    table = token_byte_strings(TOK)
    controls = [table.index(bytes([b])) for b in (0x01, 0x09, 0x1F)]
    s = _sampler(cache, grammar, seed=3)
    assert s.grammar is not None
    assert set(controls) <= _mask(s.grammar)  # free text
    for token in TOK.encode('<tool_call>\n{"name": "lookup", "arguments": {"query": "a'):
        assert token in _mask(s.grammar)
        s.accept(token)
    inside = _mask(s.grammar)
    assert table.index(b"b") in inside and not set(controls) & inside


def test_auto_leaves_a_text_answer_free(cache: GrammarCache) -> None:
    grammar = tool_call_grammar(_tools(), "auto", parallel=True)
    assert grammar is not None
    s = _sampler(cache, grammar, seed=2)
    answer = "x = {'a':\t1}  # <tools> aren't </tool_call> calls\n"
    for token in TOK.encode(answer):
        assert s.accept(token)[1] is None
    assert s.accept(TOK.eos_token_id or 0)[1] == "stop"


def test_tool_call_grammars_are_compiled_once_per_canonical_form(cache: GrammarCache) -> None:
    reordered = [
        {
            "type": "function",
            "function": {
                "name": "lookup",
                "parameters": {
                    "required": ["query", "limit"],
                    "properties": LOOKUP["properties"],
                    "type": "object",
                },
            },
        }
    ]
    a = tool_call_grammar(_tools()[:1], "required", parallel=False)
    b = tool_call_grammar([Tool.model_validate(reordered[0])], "required", parallel=False)
    assert a is not None and a == b
    first = cache.compile(a)
    compiled = cache.compile_count
    assert cache.compile(b) is first and cache.compile_count == compiled
    assert cache.compile(tool_call_grammar(_tools()[:2], "required", parallel=False)) is not first
    assert cache.compile_count == compiled + 1
    with pytest.raises(GenerationError, match="cannot compile the structural tag"):
        cache.compile(ToolCallGrammar((("f", '{"type": "nonsense"}'),), "required"))
    with pytest.raises(GenerationError, match="at least one tool"):
        ToolCallGrammar((), "auto")


QWEN_GGUF = Path(os.environ.get("KIMMY_QWEN_GGUF", "/work/wheels/qwen15.gguf"))


@pytest.mark.skipif(not QWEN_GGUF.is_file(), reason=f"no Qwen2.5 GGUF at {QWEN_GGUF}")
def test_the_real_qwen_template_lists_tools_and_its_calls_parse() -> None:
    from kimmy_swarm.model.gguf_loader import load_gguf_tokenizer

    qwen = load_gguf_tokenizer(QWEN_GGUF)  # the tokenizer only (no weights)
    assert tool_call_format(qwen) is HERMES
    prompt = render_chat(qwen, _history(), _tools())
    for tool in TOOLS:
        assert json.dumps(tool, ensure_ascii=False) in prompt.text.split("<|im_end|>")[0]
    assert '<tool_call>\n{"name": "lookup", "arguments": {"query": "é", "limit": 2}}\n' in (
        prompt.text
    )
    if (hf := _transformers_render(qwen, _history(), TOOLS)) is not None:
        assert prompt.text == hf  # the same text as transformers renders
    call = '{"name": "lookup", "arguments": {"query": "x", "limit": 3}}'
    reply = f"Sure.\n<tool_call>\n{call}\n</tool_call>"
    message, finish = assistant_message(reply, output_mode(_req(), qwen), "stop")
    assert finish == "tool_calls" and message.content == "Sure." and message.tool_calls
    assert json.loads(message.tool_calls[0].function.arguments) == {"query": "x", "limit": 3}
    ids = qwen.encode(reply)
    assert qwen.token_to_id("<tool_call>") in ids and qwen.decode(ids) == reply


def _transformers_render(tok: HFTokenizer, messages: list[ChatMessage],
                         tools: list[dict[str, Any]]) -> str | None:  # fmt: skip
    try:
        from transformers.utils.chat_template_utils import render_jinja_template
    except ImportError:
        return None
    chat = [m.model_dump(exclude_none=True) for m in messages]
    for m in chat:
        for c in m.get("tool_calls", []):  # transformers wants the arguments as objects
            c["function"]["arguments"] = json.loads(c["function"]["arguments"])
    rendered, _ = render_jinja_template(
        [chat], tools=tools, chat_template=tok.chat_template, add_generation_prompt=True
    )
    return rendered[0]
