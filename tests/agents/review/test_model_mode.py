"""The review in model mode: every sub-agent talks to a real OpenAI-compatible HTTP server on
loopback (tool calls, JSON answers, an invalid answer that needs the repair turn)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agents.review import ReviewConfig, run_review
from agents.tools.corpus import Corpus
from agents.tools.search import SearchIndex
from kimmy.app import main
from swarm.events import AgentStep, Event, ToolCalled
from swarm.llm import OpenAIChat
from tests.agents.review.conftest import ICLR_DEFAULTS, ICLR_JSON
from tests.support.openai_server import OpenAIServer
from tests.support.review_model import ReviewModel


class Events:
    def __init__(self) -> None:
        self.events: list[Event] = []

    def handle(self, event: Event) -> None:
        self.events.append(event)


@pytest.fixture
def bad_doc(iclr: Corpus) -> str:
    return SearchIndex(iclr.documents).search("question answering", k=1)[0].doc_id


def test_review_in_model_mode_over_http(tmp_path: Path, iclr: Corpus, bad_doc: str) -> None:
    fake = ReviewModel(bad_quote_doc=bad_doc)
    sink = Events()
    with OpenAIServer(default=fake) as srv:
        model = OpenAIChat(srv.base_url, "test-model")
        out = tmp_path / "review"
        outcome = run_review(
            ReviewConfig(
                corpus=ICLR_JSON,
                topic="question answering",
                out=out,
                max_papers=12,
                model=model,
                defaults=ICLR_DEFAULTS,
            ),
            sinks=[sink],
        )
        requests = srv.chat_requests
    assert outcome.status == "completed", outcome.problems
    assert outcome.relevant == 12 and outcome.themes == 2
    # every sub-agent used the model; tools were offered and called over HTTP
    assert all(r.body["model"] == "test-model" for r in requests)
    called = {e.tool for e in sink.events if isinstance(e, ToolCalled)}
    assert {"search_corpus", "find_themes", "document_sentences", "check_claim"} <= called
    steps = [e for e in sink.events if isinstance(e, AgentStep)]
    assert {e.policy for e in steps} == {"model"}
    # the misquoted passage was caught by the researcher's check and repaired once
    assert fake.repairs_seen == 1
    invalid = [e for e in steps if e.outcome == "invalid"]
    assert [e.subtask_id for e in invalid] == [f"read:{bad_doc}"]
    # the writers' invented claims were flagged by the fact-checkers, not kept
    claims = [json.loads(x) for x in (out / "claims.jsonl").read_text().splitlines()]
    bogus = [c for c in claims if c["claim_id"].endswith(".bogus")]
    assert len(bogus) == 2 and all(c["verdict"] == "unsupported" for c in bogus)
    review = (out / "review.md").read_text()
    assert "A model-written introduction." in review
    assert "~~This method improves accuracy by exactly 97.3 percent" in review
    kept = [c for c in claims if c["verdict"] == "supported"]
    assert len(kept) == 12
    for c in kept:
        assert iclr.get(c["doc_id"]).text[c["start"] : c["end"]] == c["passage"]
    assert outcome.files.flagged == 2


def test_cli_review_with_a_model_server(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with OpenAIServer(default=ReviewModel(), models=["served-model"]) as srv:
        code = main(
            [
                "review",
                str(ICLR_JSON),
                "--topic",
                "question answering",
                "--max-papers",
                "6",
                "--out",
                str(tmp_path),
                "--base-url",
                srv.base_url,
            ]
        )
        assert {r.body["model"] for r in srv.chat_requests} == {"served-model"}
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "claims supported" in captured.out
