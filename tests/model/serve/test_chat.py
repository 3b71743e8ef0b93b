"""Chat requests to prompts and engine options, and model text back to assistant messages:
the rendered prompt and its shared-prefix length, tools in the system prompt, tool_choice /
response_format to schemas, tool-call parsing, and the request limits of the protocol."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from kimmy_swarm.model.presets import tiny_tokenizer
from kimmy_swarm.model.serve.chat import (
    TOOLS_HEADER,
    assistant_message,
    generation_params,
    output_mode,
    parse_tool_call,
    render_chat,
    tools_prompt,
)
from kimmy_swarm.model.serve.protocol import ChatCompletionRequest, ChatMessage, Tool
from kimmy_swarm.model.serve.structured import schema_for_tool_choice
from kimmy_swarm.model.tokenizer import HFTokenizer, Tokenizer

TOK = tiny_tokenizer(vocab_size=320, num_docs=20)
ROLE = "You review Python code. Answer in one short sentence."
SEARCH = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the docs.",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
    },
}
CLOSE = {"type": "function", "function": {"name": "close"}}


def _msgs(*pairs: tuple[str, str]) -> list[ChatMessage]:
    return [ChatMessage(role=r, content=c) for r, c in pairs]  # type: ignore[arg-type]


def _req(**body: Any) -> ChatCompletionRequest:
    body.setdefault("messages", [{"role": "user", "content": "hi"}])
    return ChatCompletionRequest.model_validate(body, context={"max_model_len": 256})


def test_default_template_renders_kimi_turns_and_encodes_specials_as_single_ids() -> None:
    prompt = render_chat(TOK, _msgs(("system", ROLE), ("user", "Is `x = 1` fine?")))
    assert prompt.text == (
        f"<|im_system|>system<|im_middle|>{ROLE}<|im_end|>"
        "<|im_user|>user<|im_middle|>Is `x = 1` fine?<|im_end|>"
        "<|im_assistant|>assistant<|im_middle|>"
    )
    assert prompt.ids == TOK.encode(prompt.text)
    assert prompt.ids.count(TOK.eos_token_id) == 2  # each turn end is one id: the EOS
    assert TOK.decode(prompt.ids) == prompt.text


def test_cache_point_covers_the_shared_system_prompt_and_nothing_after() -> None:
    a = render_chat(TOK, _msgs(("system", ROLE), ("user", "first task")))
    b = render_chat(TOK, _msgs(("system", ROLE), ("user", "another, longer task")))
    head = TOK.encode(f"<|im_system|>system<|im_middle|>{ROLE}<|im_end|>")
    assert a.cache_point == b.cache_point == len(head)
    assert a.ids[: a.cache_point] == b.ids[: b.cache_point] == head
    assert a.ids[a.cache_point] == TOK.token_to_id("<|im_user|>")  # the user turn starts there
    assert render_chat(TOK, _msgs(("user", "no role prompt"))).cache_point is None
    dev = render_chat(TOK, _msgs(("developer", ROLE), ("user", "first task")))
    assert dev.ids == a.ids  # "developer" is written as "system"


def test_tools_are_described_in_the_system_prompt_and_cached_with_it() -> None:
    tools = [Tool.model_validate(SEARCH), Tool.model_validate(CLOSE)]
    described = tools_prompt(tools)
    assert described.startswith(TOOLS_HEADER)
    lines = described.split("<tools>\n")[1].removesuffix("\n</tools>").splitlines()
    assert [json.loads(line) for line in lines] == [
        {k: v for k, v in SEARCH["function"].items()},
        {"name": "close"},
    ]
    with_role = render_chat(TOK, _msgs(("system", ROLE), ("user", "q")), tools)
    assert f"{ROLE}\n\n{described}<|im_end|>" in with_role.text
    alone = render_chat(TOK, _msgs(("user", "q")), tools)
    assert alone.text.startswith(f"<|im_system|>system<|im_middle|>{described}<|im_end|>")
    assert alone.cache_point == len(TOK.encode(alone.text.split("<|im_user|>")[0]))


def _history() -> list[ChatMessage]:
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "search", "arguments": '{"q": "x"}'},
    }
    return [
        ChatMessage(role="user", content="find x"),
        ChatMessage.model_validate({"role": "assistant", "content": None, "tool_calls": [call]}),
        ChatMessage(role="tool", content="x is 1", tool_call_id="c1"),
    ]


def test_earlier_tool_calls_are_written_back_as_the_json_the_model_is_asked_for() -> None:
    prompt = render_chat(TOK, _history())
    assert (
        '<|im_assistant|>assistant<|im_middle|>{"name": "search", "arguments": {"q": "x"}}'
        "<|im_end|><|im_system|>tool<|im_middle|>x is 1<|im_end|>"
    ) in prompt.text


def test_a_checkpoint_template_gets_openai_tool_calls_itself() -> None:
    template = (
        "{% for m in messages %}[{{ m['role'] }}]{{ m['content'] }}"
        "{% for c in m.get('tool_calls', []) %}<call {{ c['function']['name'] }} "
        "{{ c['function']['arguments'] }}>{% endfor %}{% endfor %}"
    )
    own: Tokenizer = HFTokenizer(TOK._tok, {**TOK.config, "chat_template": template})
    text = render_chat(own, _history()).text
    assert text == '[user]find x[assistant]<call search {"q": "x"}>[tool]x is 1'


def test_tool_choice_and_response_format_become_the_decoding_schema() -> None:
    named = {"type": "function", "function": {"name": "search"}}
    mode = output_mode(_req(tools=[SEARCH, CLOSE], tool_choice=named))
    assert mode.forced and mode.tool_names == ("search", "close")
    assert mode.json_schema == schema_for_tool_choice([SEARCH, CLOSE], named)
    required = output_mode(_req(tools=[SEARCH, CLOSE], tool_choice="required"))
    assert required.forced and len(required.json_schema["anyOf"]) == 2  # type: ignore[index]
    auto = output_mode(_req(tools=[SEARCH]))
    assert auto.json_schema is None and auto.tool_names == ("search",) and not auto.forced
    assert output_mode(_req(tools=[SEARCH], tool_choice="none")).tool_names == ()
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    fmt = {"type": "json_schema", "json_schema": {"name": "A", "schema": schema}}
    assert output_mode(_req(response_format=fmt)).json_schema == schema
    assert output_mode(_req(response_format={"type": "json_object"})).json_schema == {
        "type": "object"
    }
    assert output_mode(_req(response_format={"type": "text"})).json_schema is None


def test_tool_calls_are_parsed_only_when_the_text_is_one() -> None:
    mode = output_mode(_req(tools=[SEARCH, CLOSE]))
    call = parse_tool_call('{"name": "search", "arguments": {"q": "é"}}', mode)
    assert call is not None and call.function.name == "search" and call.id.startswith("call_")
    assert json.loads(call.function.arguments) == {"q": "é"}  # arguments: a JSON string
    for text in ('{"name": "other", "arguments": {}}', '{"name": "close", "arguments": 3}',
                 "search for x", '["search"]'):  # fmt: skip
        assert parse_tool_call(text, mode) is None, text
    message, finish = assistant_message(' {"name": "close", "arguments": {}}\n', mode, "stop")
    assert message.content is None and finish == "tool_calls"
    assert message.tool_calls and message.tool_calls[0].function.arguments == "{}"
    plain, finish = assistant_message("just text", mode, "length")
    assert plain.content == "just text" and plain.tool_calls is None and finish == "length"
    free = output_mode(_req())
    assert assistant_message('{"name": "close", "arguments": {}}', free, "stop")[1] == "stop"


def test_generation_params_follow_openai_defaults() -> None:
    p = generation_params(_req(stop="END", top_k=-1, seed=7), max_tokens=9, cache_point=12)
    assert (p.temperature, p.top_p, p.top_k, p.seed, p.stop) == (1.0, 1.0, 0, 7, ("END",))
    assert (p.max_tokens, p.cache_point, p.logprobs, p.json_schema) == (9, 12, False, None)
    q = generation_params(_req(temperature=0, logprobs=True, top_logprobs=3), max_tokens=1,
                          logprobs=True, top_logprobs=3)  # fmt: skip
    assert q.greedy and q.logprobs and q.top_logprobs == 3


@pytest.mark.parametrize(
    ("body", "where", "says"),
    [
        ({"n": 2}, ("n",), "must be 1"),
        ({"max_tokens": 257}, ("max_tokens",), "context length (256"),
        ({"max_completion_tokens": 0}, ("max_completion_tokens",), "greater than or equal"),
        ({"stop": ["a", "b", "c", "d", "e"]}, ("stop",), "at most 4"),
        ({"temperature": 2.5}, ("temperature",), "less than or equal to 2"),
        ({"top_logprobs": 21, "logprobs": True}, ("top_logprobs",), "20"),
        ({"top_logprobs": 2}, (), "needs logprobs"),
        ({"stream_options": {"include_usage": True}}, (), "only allowed when stream"),
        ({"tool_choice": "required"}, (), "needs at least one tool"),
        (
            {"tools": [SEARCH], "tool_choice": {"type": "function", "function": {"name": "x"}}},
            (),
            "not in tools",
        ),
        ({"frequency_penalty": 0.5}, (), "frequency_penalty is not supported"),
        ({"max_token": 5}, ("max_token",), "Extra inputs"),
        ({"messages": []}, ("messages",), "at least 1"),
        ({"messages": [{"role": "user"}]}, ("messages", 0), "needs content"),
        ({"messages": [{"role": "robot", "content": "x"}]}, ("messages", 0, "role"), "'user'"),
    ],
)
def test_request_limits_name_the_field(body: dict[str, Any], where: tuple, says: str) -> None:
    with pytest.raises(ValidationError) as info:
        _req(**body)
    error = info.value.errors()[0]
    assert tuple(error["loc"])[: len(where)] == where and says in error["msg"]


def test_image_parts_are_refused_and_text_parts_joined() -> None:
    with pytest.raises(ValidationError, match="'image_url' is not supported"):
        _req(messages=[{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}])
    parts = [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
    assert _req(messages=[{"role": "user", "content": parts}]).messages[0].text() == "a\nb"
