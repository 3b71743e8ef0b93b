"""`max_tokens_cap` (`--max-answer-tokens`): no call asks a model for more than the cap, over real
HTTP on loopback; through the CLI it is stored with the run, so `kimmy resume` keeps it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from swarm.errors import ConfigError
from swarm.llm import OpenAIChat
from swarm.llm.openai_chat import capped_max_tokens
from tests.support.openai_server import OpenAIServer, reply


def test_a_call_never_asks_for_more_than_the_cap() -> None:
    async def calls(model: OpenAIChat) -> None:
        for asked in (1024, 100, None):
            await model.chat([{"role": "user", "content": "hi"}], max_tokens=asked)
        await model.aclose()

    with OpenAIServer([reply("a"), reply("b"), reply("c")]) as srv:
        model = OpenAIChat(srv.base_url, "test-model")
        model.max_tokens_cap = 256
        asyncio.run(calls(model))
        sent = [r.body.get("max_tokens") for r in srv.chat_requests]
    assert sent == [256, 100, 256]


@pytest.mark.parametrize("bad", [0, -3, True, 2.5])
def test_a_bad_cap_is_refused_naming_it(bad: object) -> None:
    with pytest.raises(ConfigError, match=repr(bad).replace(".", r"\.")):
        capped_max_tokens(10, bad)  # type: ignore[arg-type]


def test_kimmy_analyze_max_tokens_caps_every_call_and_is_stored(tmp_path: Path) -> None:
    from kimmy.app import main
    from swarm.store import RunStore

    with OpenAIServer() as srv:  # echo(): schema-shaped answers, as a constrained server
        code = main(["analyze", "statsmodels:longley", "--out", str(tmp_path / "a"),
                     "--base-url", srv.base_url, "--model", "test-model",
                     "--max-answer-tokens", "64", "--runs-dir", str(tmp_path / "runs"),
                     "--json"])  # fmt: skip
        asked = [r.body.get("max_tokens") for r in srv.chat_requests]
    assert code in (0, 1)
    assert asked and all(a is not None and a <= 64 for a in asked), asked
    with RunStore(tmp_path / "runs") as store:
        run = store.list_runs()[0]
        settings = json.loads(json.dumps(store.load_run(run.run_id).settings))
    assert settings["pipeline"]["endpoint"]["max_tokens"] == 64
