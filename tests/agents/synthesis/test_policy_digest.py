"""The model policy past one context: a writer with 16 upstream results of 2,000 characters
each on a 4,096-token model gets a digest of them, and no call goes past the context."""

from __future__ import annotations

import json
from typing import Any

from kimmy_swarm.agents import Answer, Attempt, Role, builtin_roles, install
from kimmy_swarm.swarm import Swarm
from kimmy_swarm.swarm.llm import shared_budget
from kimmy_swarm.swarm.schema import SubtaskStatus
from tests.agents.synthesis.conftest import TokenModel, varied_texts

TEXTS = {
    f"find-{n:02d}": text for n, text in enumerate(varied_texts(16, seed=9, low=2000, high=2000))
}
WRITE = "Write the report from the upstream findings."


def _found(run: Attempt) -> Answer:
    return Answer(answer=TEXTS[run.ctx.id], sources=[run.ctx.id])


def _run(model: TokenModel) -> Any:
    swarm = Swarm(model=model, max_retries=0)
    install(swarm, [Role("researcher", "You research.", procedure=_found)], policy="offline")
    install(swarm, [builtin_roles()["writer"]], policy="model")
    plan = {
        "subtasks": [{"id": key, "role": "researcher"} for key in TEXTS]
        + [{"id": "write", "role": "writer", "instructions": WRITE, "depends_on": list(TEXTS)}]
    }
    return swarm.run_sync(plan)


def _writer_prompt(model: TokenModel) -> str:
    return next(c.user for c in model.answered if c.options.get("response_format"))


def test_a_writer_with_sixteen_long_upstreams_gets_a_digest(tokenizer: Any) -> None:
    model = TokenModel(tokenizer, context_length=4096, name="tiny-4k-told")
    # the sub-agents' metered view of the model carries its context length
    result = _run(model)
    assert result.results["write"].status is SubtaskStatus.DONE
    calls = model.calls
    assert not any(c.rejected for c in calls)  # judged ahead: nothing went past the context
    assert all(c.prompt_tokens + c.options["max_tokens"] <= 4096 for c in calls)
    assert all(c.options.get("max_tokens") for c in calls)
    writer = [c for c in calls if c.options.get("response_format")]
    assert len(writer) == 1 and writer[0].options["max_tokens"] == 1024  # Role.max_tokens
    prompt = _writer_prompt(model)
    assert "Digest of the 16 upstream results" in prompt
    assert "Result of find-" not in prompt and TEXTS["find-00"][:200] not in prompt
    # the reduce calls came before, every result shown to one of them, whole
    reduce_calls = calls[:-1]
    assert len(reduce_calls) >= 3
    for key, text in TEXTS.items():
        assert sum(f"[{key}]" in c.user and text[:1000] in c.user for c in reduce_calls) == 1
    # the writer's answer (the fake names what it saw) rests on the digest's tags
    answer = json.loads(json.dumps(result.results["write"].output))
    assert answer["answer"].startswith("A report built on")


def test_without_a_known_context_the_first_rejection_brings_the_digest(tokenizer: Any) -> None:
    model = TokenModel(tokenizer, context_length=4096, name="tiny-4k-untold", tells_context=False)
    result = _run(model)
    assert result.results["write"].status is SubtaskStatus.DONE
    rejected = [c for c in model.calls if c.rejected]
    # the raw results went once; the rejection named the prompt's tokens and the context
    assert len(rejected) == 1 and "Result of find-00" in rejected[0].user
    budget = shared_budget(model)
    assert budget.context_known and budget.context_tokens == 4096
    assert "Digest of the 16 upstream results" in _writer_prompt(model)
    assert all(c.prompt_tokens + c.options["max_tokens"] <= 4096 for c in model.answered)
    assert all(c.options.get("max_tokens") for c in model.calls)


def test_upstreams_that_fit_go_as_they_are(tokenizer: Any) -> None:
    model = TokenModel(tokenizer, context_length=65_536, name="tiny-64k")
    result = _run(model)
    assert result.results["write"].status is SubtaskStatus.DONE
    assert len(model.calls) == 1
    prompt = _writer_prompt(model)
    assert "Digest of" not in prompt and all(f"Result of {key}" in prompt for key in TEXTS)
