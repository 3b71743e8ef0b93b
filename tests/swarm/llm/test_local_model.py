"""`LocalModel`: the engine and server started in-process, used through the `ChatModel`
protocol over real HTTP (another client reaches the same server), stopped on exit; a saved
checkpoint folder serves the same answers as the model in memory."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import torch

from kimmy_swarm.model.presets import tiny_model, tiny_tokenizer
from kimmy_swarm.model.serve.chat import render_chat
from kimmy_swarm.model.serve.protocol import ChatMessage
from kimmy_swarm.model.serve.structured import validate
from kimmy_swarm.swarm.errors import ConfigError
from kimmy_swarm.swarm.llm import ChatModel, LocalModel, OpenAIChat

ASK = [{"role": "system", "content": "You name things."}, {"role": "user", "content": "A name?"}]


async def test_tiny_local_model_answers_through_the_chat_model_protocol() -> None:
    async with LocalModel.tiny(max_num_seqs=4, max_model_len=512) as model:
        assert isinstance(model, ChatModel) and model.name == "kimmy-tiny"
        assert model.context_length == 512  # the engine's max_model_len
        url = model.base_url
        reply = await model.chat(ASK, max_tokens=6, temperature=0)
        assert reply.model == "kimmy-tiny" and 1 <= reply.usage.completion_tokens <= 6
        u = reply.usage
        assert u.total_tokens == u.prompt_tokens + u.completion_tokens and u.model_calls == 1
        async with OpenAIChat(url) as other:  # plain HTTP: any client can use the server
            assert (await other.chat(ASK, max_tokens=6, temperature=0)).content == reply.content
            await other.check()  # `kimmy serve`'s /v1/models card says max_model_len
            assert other.context_length == 512
        schema = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 6}},
                  "required": ["name"], "additionalProperties": False}  # fmt: skip
        fmt = {"type": "json_schema", "json_schema": {"name": "Name", "schema": schema}}
        named = await model.chat(ASK, response_format=fmt, max_tokens=60, seed=3)
        assert set(validate(schema, named.content or "")) == {"name"}
    with pytest.raises(httpx.ConnectError):  # the server is gone with the context
        httpx.get(f"{url}/models")
    with pytest.raises(RuntimeError, match="not started"):
        await model.chat(ASK)
    assert model.context_length is None


async def test_a_saved_checkpoint_serves_the_in_memory_models_answers(tmp_path: Path) -> None:
    tokenizer = tiny_tokenizer()
    lm = tiny_model(tokenizer, seed=3)
    folder = lm.save_pretrained(tmp_path / "reviewer-v1", tokenizer=tokenizer)
    ids = render_chat(tokenizer, [ChatMessage.model_validate(m) for m in ASK]).ids
    out = lm.generate(torch.tensor([ids]), max_new_tokens=5, use_cache=False)
    expected = tokenizer.decode(out[0, len(ids) :].tolist(), skip_special_tokens=True)
    async with LocalModel.from_pretrained(folder, max_model_len=256) as model:
        assert model.name == "reviewer-v1"
        assert (await model.chat(ASK, max_tokens=5, temperature=0)).content == expected


def test_the_module_imports_no_torch_until_a_model_starts() -> None:
    code = "import sys, kimmy_swarm.swarm.llm.local; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.split() == ["False"], out.stderr


async def test_the_tiny_model_takes_an_orchestrators_opening() -> None:
    """`--tiny` (`LocalModel.load("tiny")`) served 4,096 tokens, and its tokenizer makes the
    orchestrator's opening ~6,500: `kimmy swarm … --tiny` failed its first call (HTTP 400).
    The tiny model has no positional limit; it is served with `TINY_CONTEXT`."""
    from kimmy_swarm.model.serve.factory import TINY_CONTEXT

    long_prompt = [{"role": "user", "content": "word " * 5000}]
    for model in (LocalModel.load("tiny", max_num_seqs=2), LocalModel.tiny(max_num_seqs=2)):
        async with model:
            assert model.context_length == TINY_CONTEXT > 6500
            reply = await model.chat(long_prompt, max_tokens=1)
            assert reply.usage.prompt_tokens > 4096


async def test_a_call_fails_only_when_the_engine_makes_no_progress(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The local client's fixed 600 s limit failed calls of a 1.5B model that were still
    being decoded on a busy machine; a call now waits as long as the engine makes progress
    and fails once it has made none for `stall_s` (here 1 s)."""
    from kimmy_swarm.model.serve.async_engine import AsyncEngine
    from kimmy_swarm.swarm.errors import ModelTimeoutError

    step, hung = AsyncEngine._step, threading.Event()
    pace = {"s": 0.3}

    def slow_step(self: AsyncEngine) -> Any:
        time.sleep(pace["s"])  # a busy machine: each engine step is slow, none stops
        while hung.is_set():
            time.sleep(0.05)
        return step(self)

    monkeypatch.setattr(AsyncEngine, "_step", slow_step)
    async with LocalModel.tiny(max_num_seqs=2, max_model_len=256, stall_s=1.0) as model:
        ask = {"max_tokens": 8, "temperature": 0, "stop": None}
        reply = await model.chat(ASK, **ask)  # 8+ steps of 0.3 s: far past 1 s, progressing
        assert reply.usage.completion_tokens == 8
        hung.set()  # the engine stops stepping: the call fails, naming why
        with pytest.raises(ModelTimeoutError, match=r"made no progress for 1 s"):
            await model.chat(ASK, **ask)
        hung.clear()
        pace["s"] = 0.0
        assert (await model.chat(ASK, **ask)).content == reply.content  # it serves on


def test_local_model_limits_must_be_positive() -> None:
    for bad in ({"stall_s": 0}, {"timeout_s": -1.0}):
        with pytest.raises(ConfigError, match=next(iter(bad))):
            LocalModel.tiny(**bad)
