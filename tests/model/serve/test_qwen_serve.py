"""`kimmy serve qwen2.5-coder-1.5b`: the installed Qwen2.5-Coder-1.5B-Instruct (GGUF Q4_K_M,
`kimmy models install`, which `make models` and CI run) on llama.cpp's kernels under our
engine, as a server process on loopback — it answers, writes code, and calls tools in its
own `<tool_call>` format with every call valid for the tool's schema."""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator

import httpx
import pytest

from kimmy_swarm.model.catalog import MODELS
from kimmy_swarm.model.ggml_model import llama_cpp_available
from kimmy_swarm.model.locate import installed_path
from tests.support.serve_process import kimmy_server

NAME = "qwen2.5-coder-1.5b"
if installed_path(MODELS[NAME]) is None:
    pytest.skip(f"{NAME} is not installed (make models)", allow_module_level=True)
if not llama_cpp_available():
    pytest.skip("llama-cpp-python is not installed (make llama-cpp)", allow_module_level=True)

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
SPAWN = {
    "type": "function",
    "function": {
        "name": "spawn_subagents",
        "description": "Start sub-agents, one per task, in parallel.",
        "parameters": {
            "type": "object",
            "properties": {
                "tasks": {"type": "array", "items": {"type": "string"}, "minItems": 1},
            },
            "required": ["tasks"],
        },
    },
}


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with kimmy_server(NAME, "--max-model-len", "4096", "--max-num-seqs", "8") as url:
        yield url


def _chat(url: str, body: dict) -> dict:
    response = httpx.post(f"{url}/chat/completions", json={"model": NAME, **body}, timeout=600)
    response.raise_for_status()
    return response.json()["choices"][0]


def test_it_answers_and_writes_code(server: str) -> None:
    answer = _chat(
        server,
        {
            "messages": [
                {"role": "user", "content": "What is the capital of France? One word."},
            ],
            "temperature": 0,
            "max_tokens": 8,
        },
    )
    assert "Paris" in answer["message"]["content"]
    code = _chat(
        server,
        {
            "messages": [
                {
                    "role": "user",
                    "content": "Write a Python function square(x) that returns x squared. "
                    "Only the code.",
                }
            ],
            "temperature": 0,
            "max_tokens": 48,
        },
    )
    text = code["message"]["content"]
    body = text.split("```python")[-1].split("```")[0] if "```" in text else text
    # read, never run: model-written code runs only in the sandbox
    (fn,) = [n for n in ast.walk(ast.parse(body)) if isinstance(n, ast.FunctionDef)]
    assert fn.name == "square" and [a.arg for a in fn.args.args] == ["x"]
    assert any(isinstance(n, ast.Return) for n in ast.walk(fn))


@pytest.mark.parametrize(
    "choice", ["required", {"type": "function", "function": {"name": "get_weather"}}]
)
def test_forced_tool_calls_are_native_and_valid(server: str, choice: object) -> None:
    answer = _chat(
        server,
        {
            "messages": [{"role": "user", "content": "Is it raining in Paris right now?"}],
            "tools": [WEATHER, SPAWN],
            "tool_choice": choice,
            "temperature": 0,
            "max_tokens": 64,
        },
    )
    assert answer["finish_reason"] == "tool_calls"
    calls = answer["message"]["tool_calls"]
    assert calls and calls[0]["function"]["name"] == "get_weather"
    assert json.loads(calls[0]["function"]["arguments"])["city"].lower() == "paris"


def test_an_orchestrator_turn_spawns_sub_agents(server: str) -> None:
    """The orchestrator's own request shape (`tool_choice` "required"): a native call whose
    arguments hold the tasks, never text to parse."""
    answer = _chat(
        server,
        {
            "messages": [
                {
                    "role": "system",
                    "content": "You are an orchestrator. Split the user's goal into "
                    "independent tasks and spawn one sub-agent per task.",
                },
                {
                    "role": "user",
                    "content": "Find the population of Paris, of Rome and of Madrid.",
                },
            ],
            "tools": [SPAWN, WEATHER],
            "tool_choice": "required",
            "temperature": 0,
            "max_tokens": 128,
        },
    )
    assert answer["finish_reason"] == "tool_calls"
    call = answer["message"]["tool_calls"][0]["function"]
    assert call["name"] == "spawn_subagents"
    tasks = json.loads(call["arguments"])["tasks"]
    assert len(tasks) >= 2 and all(isinstance(t, str) and t for t in tasks)
