"""Streamed answers (`stream=True`): the client puts a server's chunks back together into the
response a non-streamed call returns, hands each piece on as it arrives, and says in one
error what went wrong with a broken stream; in a run (`RunConfig.stream`) the pieces reach
the run's sinks (`Swarm.stream`) as `token_delta` events that the store never keeps."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from kimmy_swarm.swarm import Plan, RunConfig, Subtask, SubtaskContext, Swarm
from kimmy_swarm.swarm.errors import ModelRequestError, ModelResponseError
from kimmy_swarm.swarm.events import ModelCalled, TokenDelta
from kimmy_swarm.swarm.llm import OpenAIChat
from kimmy_swarm.swarm.llm.stream_chunks import ChunkAssembler, Delta
from kimmy_swarm.swarm.store import RunStore
from tests.support.openai_behaviours import streamed
from tests.support.openai_server import OpenAIServer, status


def _chunk(delta: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    choices = [] if delta is None else [{"index": 0, "delta": delta, **extra}]
    return {"id": "x", "object": "chat.completion.chunk", "model": "m", "choices": choices}


TOOL_CHUNKS = [
    _chunk({"role": "assistant", "content": ""}),
    _chunk({"content": "Let me "}),
    _chunk({"content": "look."}),
    _chunk({"tool_calls": [{"index": 0, "id": "call_a", "type": "function",
                            "function": {"name": "search", "arguments": ""}}]}),
    _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"query": '}}]}),
    _chunk({"tool_calls": [{"index": 1, "id": "call_b", "function": {"name": "read"}}]}),
    _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"dropout"}'}}]}),
    _chunk({"tool_calls": [{"index": 1, "function": {"arguments": '{"id": "d1"}'}}]}),
    _chunk({}, finish_reason="tool_calls"),
    {**_chunk(None), "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}},
]  # fmt: skip


async def test_a_streamed_answer_is_the_answer_a_plain_call_gets() -> None:
    got: list[Delta] = []
    with OpenAIServer([streamed(TOOL_CHUNKS)]) as srv:
        async with OpenAIChat(srv.base_url, "m") as model:
            answer = await model.chat([{"role": "user", "content": "hi"}], on_delta=got.append)
        body = srv.chat_requests[0].body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert answer.content == "Let me look." and answer.finish_reason == "tool_calls"
    assert [(c.id, c.function.name, c.function.parsed_arguments()) for c in answer.tool_calls] == [
        ("call_a", "search", {"query": "dropout"}), ("call_b", "read", {"id": "d1"})]  # fmt: skip
    assert (answer.usage.prompt_tokens, answer.usage.completion_tokens) == (11, 7)
    assert [(d.kind, d.index, d.text) for d in got] == [
        ("content", 0, "Let me "), ("content", 0, "look."), ("tool_name", 0, "search"),
        ("tool_arguments", 0, '{"query": '), ("tool_name", 1, "read"),
        ("tool_arguments", 0, '"dropout"}'), ("tool_arguments", 1, '{"id": "d1"}'),
    ]  # fmt: skip


def test_logprobs_come_back_from_their_chunks() -> None:
    assembler = ChunkAssembler()
    for text, lp in (("a", -0.5), ("b", -1.0)):
        entry = {"token": text, "logprob": lp, "bytes": None, "top_logprobs": []}
        assembler.add(_chunk({"content": text}, logprobs={"content": [entry]}))
    choice = assembler.completion()["choices"][0]
    assert [e["logprob"] for e in choice["logprobs"]["content"]] == [-0.5, -1.0]
    assert choice["message"] == {"role": "assistant", "content": "ab"}


@pytest.mark.parametrize(
    "behaviour, message",
    [
        (streamed([_chunk({"content": "half"})], done=False),
         r"ended its streamed answer without \[DONE\] after 1 chunks"),
        (streamed([_chunk({"content": "a"}), {"error": {"message": "engine stopped"}}]),
         "broke off its streamed answer: StreamError: engine stopped"),
        (streamed([_chunk({"content": "a"}), "{not json"]),
         "broke off its streamed answer: JSONDecodeError"),
    ],
)  # fmt: skip
async def test_a_broken_stream_is_one_retryable_error_naming_it(
    behaviour: Any, message: str
) -> None:
    with OpenAIServer([behaviour]) as srv:
        async with OpenAIChat(srv.base_url, "m") as model:
            with pytest.raises(ModelResponseError, match=message) as caught:
                await model.chat([{"role": "user", "content": "hi"}], on_delta=lambda d: None)
    assert caught.value.retryable


async def test_a_refused_stream_is_the_servers_error() -> None:
    with OpenAIServer([status(400, {"error": {"message": "stream not allowed here"}})]) as srv:
        async with OpenAIChat(srv.base_url, "m") as model:
            with pytest.raises(ModelRequestError, match="stream not allowed here"):
                await model.chat([{"role": "user", "content": "hi"}], on_delta=lambda d: None)


async def test_a_run_streams_each_answer_to_its_sinks_and_stores_it_whole(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from kimmy_swarm.swarm.llm import LocalModel

    async def write(ctx: SubtaskContext) -> str:
        answer = await ctx.model.chat(
            [{"role": "user", "content": f"write about {ctx.id}"}], max_tokens=12
        )
        return answer.content or ""

    async with LocalModel.tiny() as model:
        swarm = Swarm(model=model, roles={"write": write}, runs_dir=tmp_path,
                      config=RunConfig(stream=True, temperature=0.0))  # fmt: skip
        plan = Plan(goal="g", subtasks=[Subtask(id=f"w{i}", role="write") for i in range(3)])
        pieces: dict[str, list[str]] = {}
        order: list[str] = []
        async for event in swarm.stream(plan, run_id="live"):
            order.append(event.type)
            if isinstance(event, TokenDelta):
                assert event.kind == "content"
                pieces.setdefault(event.subtask_id, []).append(event.text)
        swarm.close()
    with RunStore(tmp_path, create=False) as store:
        stored = list(store.events("live"))
        result = store.load_run("live").results
    assert not [e for e in stored if e.type == "token_delta"]  # never stored
    calls = {e.subtask_id: e for e in stored if isinstance(e, ModelCalled)}
    for key in ("w0", "w1", "w2"):
        whole = "".join(pieces[key])
        assert whole == result[key].output  # the pieces are the answer
        assert calls[key].response is not None and json.dumps(whole)[1:-1] in json.dumps(
            calls[key].response
        )
    # each sub-agent's pieces come before its call is recorded
    assert order.index("token_delta") < order.index("model_called")


@pytest.mark.parametrize(
    "command",
    [["analyze", "statsmodels:longley"],
     ["swarm", "Which factors drive GNP?", "--data", "statsmodels:longley"]],
)  # fmt: skip
def test_the_stream_flag_reaches_the_runs_config(
    tmp_path: Path, command: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from kimmy_swarm.cli.app import main

    for name in ("KIMMY_BASE_URL", "KIMMY_MODEL", "KIMMY_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    runs = tmp_path / "runs"
    code = main([*command, "--stream", "--out", str(tmp_path / "out"), "--runs-dir", str(runs)])
    assert code in (0, 1)
    with RunStore(runs, create=False) as store:
        (started, *_) = store.events("latest", types=["run_started"])
    assert started.settings["stream"] is True  # offline: nothing streams, but it is set


async def test_pieces_are_delivered_a_few_at_a_time_and_all_before_the_call_ends() -> None:
    from kimmy_swarm.swarm.delta_batcher import DeltaBatcher

    published: list[tuple[str, int, str, int, str]] = []

    class Journal:
        def wants(self, cls: Any) -> bool:
            return True

        def publish(self, cls: Any, **f: Any) -> None:
            published.append((f["subtask_id"], f["call"], f["kind"], f["index"], f["text"]))

    batcher = DeltaBatcher(Journal(), interval_s=0.05)  # type: ignore[arg-type]
    to_a, to_b = batcher.open("a", 1), batcher.open("b", 1)
    for piece in (
        Delta("Hel"),
        Delta("lo"),
        Delta("search", "tool_name"),
        Delta('{"q":', "tool_arguments"),
        Delta(" 1}", "tool_arguments"),
    ):
        to_a(piece)  # fmt: skip
    to_b(Delta("x"))
    assert published == []  # gathered
    batcher.end("a", 1)  # the call ended: all of it, joined by kind, in order
    assert published == [("a", 1, "content", 0, "Hello"), ("a", 1, "tool_name", 0, "search"),
                         ("a", 1, "tool_arguments", 0, '{"q": 1}')]  # fmt: skip
    await asyncio.sleep(0.08)  # the interval passed: what b wrote goes, b still streaming
    assert published[-1] == ("b", 1, "content", 0, "x")
    to_b(Delta("y"))
    await asyncio.sleep(0.08)  # and what it wrote since, at the next tick
    assert published[-1] == ("b", 1, "content", 0, "y")
    batcher.end("b", 1)
    assert len(published) == 5  # nothing delivered twice
    batcher.close()
