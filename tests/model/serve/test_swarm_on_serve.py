"""A swarm of 1,000 sub-agents against `kimmy serve --tiny`, a real server process on
loopback, reached through the same `OpenAIChat` client as any server: every sub-agent's
answer is valid for its role's schema on the first turn (structured output), and the role
prompt they share is prefilled once, not 1,000 times."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from pydantic import BaseModel, Field

from agents import Role, install
from swarm import Plan, Subtask, SubtaskContext, Swarm
from swarm.llm import OpenAIChat
from tests.support.serve_process import tiny_server

ROOT = Path(__file__).resolve().parents[3]
N = 1000


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


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    """`kimmy serve --tiny` in a subprocess, on a free loopback port."""
    with tiny_server() as url:
        yield url


def _metrics(url: str) -> dict[str, float]:
    text = httpx.get(url.removesuffix("/v1") + "/metrics", timeout=10).text
    return {
        s.name: s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if not s.labels
    }


async def tally(ctx: SubtaskContext) -> dict[str, int]:
    """The reduce: verdicts counted over every checker's answer (upstream outputs arrive as
    JSON-ready dicts)."""
    return dict(Counter(check["verdict"] for check in ctx.upstream.values()))


async def test_a_swarm_of_1000_subagents_gets_a_valid_answer_from_every_one(
    server_url: str,
) -> None:
    before = _metrics(server_url)
    checks = [
        Subtask(id=f"c{i}", role="checker", instructions=f"Claim {i}: method {i % 7} wins.")
        for i in range(N)
    ]
    plan = Plan(
        goal="Fact-check 1,000 claims",
        subtasks=[*checks, Subtask(id="tally", role="tally", depends_on=[c.id for c in checks])],
    )
    async with OpenAIChat(server_url, max_connections=256, timeout_s=600) as model:
        swarm = Swarm(model=model, max_concurrency=256)
        install(swarm, [CHECKER], policy="model")
        swarm.add_role("tally", tally)
        result = await swarm.execute(plan)
    assert result.ok, [r.error for r in result.results.values() if r.error]
    answers = [Check.model_validate(result.outputs[c.id]) for c in checks]  # JSON-ready dicts
    assert len(answers) == N
    assert sum(result.outputs["tally"].values()) == N
    # Every answer parsed and validated on the first turn: no repair turns were needed.
    assert result.usage.model_calls == N
    after = _metrics(server_url)
    prompt = after["kimmy_prompt_tokens_total"] - before["kimmy_prompt_tokens_total"]
    computed = (
        after["kimmy_prefill_tokens_computed_total"] - before["kimmy_prefill_tokens_computed_total"]
    )
    cached = after["kimmy_cached_prompt_tokens_total"] - before["kimmy_cached_prompt_tokens_total"]
    # The shared system prompt (role prompt + answer schema) is most of each prompt; with
    # reuse only the per-sub-agent tail is run through the model.
    assert cached / prompt > 0.6 and computed / prompt < 0.4, (cached, computed, prompt)
