"""`kimmy swarm` stores how its model was reached in the run's pipeline record (a
`ModelEndpoint`, never a secret), and `kimmy resume` opens the same model from it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kimmy_swarm.cli.app import main
from kimmy_swarm.cli.commands.solve import _endpoint_of, _source_of
from kimmy_swarm.swarm.llm.endpoint import ModelEndpoint
from kimmy_swarm.swarm.store import RunStore
from tests.support.openai_server import OpenAIServer, echo


@pytest.mark.parametrize(
    ("source", "endpoint"),
    [
        ({"kind": "offline"}, ModelEndpoint()),
        ({"kind": "tiny"}, ModelEndpoint(kind="local", local="tiny")),
        ({"kind": "local", "path": "smollm2"}, ModelEndpoint(kind="local", local="smollm2")),
        (
            {"kind": "http", "base_url": "http://***@h:8000/v1", "model": "m"},
            ModelEndpoint(kind="http", base_url="http://***@h:8000/v1", model="m"),
        ),
        (  # --context-tokens and --max-answer-tokens are stored with the run
            {"kind": "tiny", "context_tokens": 8192, "max_tokens": 64},
            ModelEndpoint(kind="local", local="tiny", context_tokens=8192, max_tokens=64),
        ),
    ],
)
def test_a_model_source_round_trips_through_the_record(
    source: dict[str, Any], endpoint: ModelEndpoint
) -> None:
    assert _endpoint_of(source) == endpoint
    assert _source_of(endpoint) == source


def test_a_url_is_stored_without_its_credentials() -> None:
    stored = _endpoint_of({"kind": "http", "base_url": "http://u:pw@h/v1", "model": "m"})
    assert "pw" not in stored.model_dump_json()
    assert _source_of(ModelEndpoint(kind="other")) == {"kind": "offline"}  # a Python object


def test_swarm_takes_the_model_flags_review_takes(tmp_path: Path) -> None:
    """`kimmy swarm --max-answer-tokens N --context-tokens C --no-probe --tools`: every call
    asks for at most N tokens, and the run records both sizes (a resume uses them)."""
    corpus = tmp_path / "papers.json"
    corpus.write_text(json.dumps([{"title": "A", "abstract": "dropout helps", "authors": ["X"]}]))
    with OpenAIServer(default=echo(), models=["m"]) as srv:
        main(["swarm", "Which papers mention dropout?", "--corpus", str(corpus),
              "--base-url", srv.base_url, "--max-answer-tokens", "40", "--context-tokens",
              "8192", "--no-probe", "--tools", "--max-turns", "1",
              "--out", str(tmp_path / "out"), "--runs-dir", str(tmp_path / "runs")])  # fmt: skip
        asked = [r.body.get("max_tokens") for r in srv.chat_requests]
    assert asked and all(n is not None and n <= 40 for n in asked), asked
    with RunStore(tmp_path / "runs", create=False) as store:
        (started,) = store.events("latest", types=["run_started"])
    endpoint = json.dumps(started.settings)
    assert '"max_tokens": 40' in endpoint and '"context_tokens": 8192' in endpoint
