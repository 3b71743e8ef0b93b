"""A swarm of 1,000 sub-agents against `kimmy serve --tiny`, a real server process on
loopback, reached through the same `OpenAIChat` client as any server: every sub-agent's
answer is valid for its role's schema on the first turn (structured output), and the role
prompt they share is prefilled once, not 1,000 times."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.fact_check_fanout import fact_check_fanout, server_metrics
from tests.support.serve_process import tiny_server

N = 1000


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    """`kimmy serve --tiny` in a subprocess, on a free loopback port."""
    with tiny_server() as url:
        yield url


async def test_a_swarm_of_1000_subagents_gets_a_valid_answer_from_every_one(
    server_url: str,
) -> None:
    before = server_metrics(server_url)
    await fact_check_fanout(server_url, N, max_concurrency=256)
    after = server_metrics(server_url)

    def delta(name: str) -> float:
        return after[name] - before[name]

    prompt = delta("kimmy_prompt_tokens_total")
    computed = delta("kimmy_prefill_tokens_computed_total")
    cached = delta("kimmy_cached_prompt_tokens_total")
    # The shared system prompt (role prompt + answer schema) is most of each prompt; with
    # reuse only the per-sub-agent tail is run through the model.
    assert cached / prompt > 0.6 and computed / prompt < 0.4, (cached, computed, prompt)
