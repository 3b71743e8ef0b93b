"""The fact-check fan-out both served-model swarm tests run (`kimmy serve --tiny` with 1,000
sub-agents, `kimmy serve smollm2` with 100): N checkers share one role prompt, a tally
reduces their verdicts, and the server's `/metrics` says how much of the prompt was reused."""

from __future__ import annotations

from collections import Counter
from typing import Literal

import httpx
from prometheus_client.parser import text_string_to_metric_families
from pydantic import BaseModel, Field

from kimmy_swarm.agents import Role, install
from kimmy_swarm.swarm import Plan, RunResult, Subtask, SubtaskContext, Swarm
from kimmy_swarm.swarm.llm import OpenAIChat

__all__ = ["CHECKER", "Check", "fact_check_fanout", "server_metrics"]


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
    """The reduce: verdicts counted over every checker's answer (upstream outputs arrive as
    JSON-ready dicts)."""
    return dict(Counter(check["verdict"] for check in ctx.upstream.values()))


async def fact_check_fanout(url: str, n: int, *, max_concurrency: int) -> RunResult:
    """Run `n` checker sub-agents and the tally against the OpenAI-compatible server at `url`
    (model-backed roles, structured output) and check every answer: the run is ok, each
    checker's output validates as `Check`, the tally counts all `n`, and no repair turn was
    needed (`n` model calls)."""
    checks = [
        Subtask(id=f"c{i}", role="checker", instructions=f"Claim {i}: method {i % 7} wins.")
        for i in range(n)
    ]
    plan = Plan(
        goal=f"Fact-check {n} claims",
        subtasks=[*checks, Subtask(id="tally", role="tally", depends_on=[c.id for c in checks])],
    )
    async with OpenAIChat(url, max_connections=max_concurrency, timeout_s=600) as model:
        swarm = Swarm(model=model, max_concurrency=max_concurrency)
        install(swarm, [CHECKER], policy="model")
        swarm.add_role("tally", tally)
        result = await swarm.execute(plan)
    assert result.ok, [r.error for r in result.results.values() if r.error]
    answers = [Check.model_validate(result.outputs[c.id]) for c in checks]
    assert len(answers) == n and sum(result.outputs["tally"].values()) == n
    assert result.usage.model_calls == n  # structured output: valid on the first turn
    return result


def server_metrics(url: str) -> dict[str, float]:
    """The unlabelled samples of the server's Prometheus `/metrics` (`url` ends in `/v1`)."""
    text = httpx.get(url.removesuffix("/v1") + "/metrics", timeout=10).text
    return {
        s.name: s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if not s.labels
    }
