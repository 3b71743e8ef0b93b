"""A scripted "model" for the literature review in model mode, served over real HTTP.

`review_behaviour()` answers each chat request the way a tool-using model would, from what
the request holds: the user message names the sub-agent and its role and carries its
inputs and upstream results, `tool` messages carry tool results. It reads real
documents through the tools and quotes them, so the pipeline's checks pass — except where
it misbehaves on purpose:

- the first researcher answer for `bad_quote_doc` misquotes its passage (→ repair turn);
- each writer adds one claim with a number that is not in the cited paper (→ flagged).
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any

from tests.support.openai_behaviours import Behaviour, Reply, ServerRequest, reply

#: The claim every writer invents (its numbers are in no paper).
BOGUS_CLAIM = "This method improves accuracy by exactly 97.3 percent on 12345 benchmarks."
_SUBAGENT = re.compile(r"You are sub-agent '([^']+)' \(role ([\w.-]+)\)")


def _inputs(user: str) -> dict[str, Any]:
    found = re.search(r"Inputs:\n(\{.*?\})\n\n(?:Result of|$)", user + "\n\n", re.DOTALL)
    return json.loads(found.group(1)) if found else {}


def _upstream(user: str) -> dict[str, Any]:
    out = {}
    for m in re.finditer(
        r"Result of (\S+) \([\w.-]+, \w+\):\n(.*?)(?=\n\nResult of |\Z)", user, re.DOTALL
    ):
        out[m.group(1)] = json.loads(m.group(2))
    return out


def _tool_results(messages: list[dict[str, Any]]) -> list[Any]:
    results = []
    for m in messages:
        if m.get("role") == "tool":
            text = m.get("content") or ""
            results.append(json.loads(text) if not text.startswith("error:") else text)
    return results


class ReviewModel:
    """The behaviour's state (thread-safe: the server answers in several threads)."""

    def __init__(self, bad_quote_doc: str | None = None) -> None:
        self.bad_quote_doc = bad_quote_doc
        self.repairs_seen = 0
        self._lock = threading.Lock()

    def __call__(self, request: ServerRequest) -> Reply:
        body = request.body
        messages = body["messages"]
        user = messages[1]["content"]
        subtask, role = _SUBAGENT.search(user).groups()
        if (
            messages[-1]["role"] == "user"
            and "invalid" in messages[-1]["content"]
            and len(messages) > 2
        ):
            with self._lock:
                self.repairs_seen += 1
        handler = getattr(self, f"_{role}")
        content, calls = handler(subtask, _inputs(user), _upstream(user), messages)
        return reply(content, tool_calls=calls)(request)

    def _planner(self, subtask, inputs, upstream, messages):  # type: ignore[no-untyped-def]
        results = _tool_results(messages)
        if not results:
            return None, [("search_corpus", {"query": inputs["topic"], "k": inputs["max_papers"]})]
        if len(results) == 1:
            ids = [h["doc_id"] for h in results[0]]
            return None, [("find_themes", {"doc_ids": ids, "k": 2})]
        themes = results[1]
        relevant = [d for t in themes for d in t["doc_ids"]]
        plan = {
            "topic": inputs["topic"],
            "relevant": relevant,
            "themes": themes,
            "corpus_size": inputs["corpus_size"],
        }
        return json.dumps(plan), None

    def _researcher(self, subtask, inputs, upstream, messages):  # type: ignore[no-untyped-def]
        results = _tool_results(messages)
        if not results:
            return None, [("document_sentences", {"doc_id": inputs["doc_id"]})]
        sentences = [s for s in results[0] if len(s["text"]) > 30] or results[0]
        first = sentences[0]["text"]
        repairing = messages[-1]["role"] == "user" and len(messages) > 2
        passage = first
        if inputs["doc_id"] == self.bad_quote_doc and not repairing:
            passage = first.upper() + " (paraphrased)"
        notes = {
            "doc_id": inputs["doc_id"],
            "title": inputs["doc_id"],
            "contribution": first,
            "findings": [{"text": first, "passage": passage}],
        }
        return json.dumps(notes), None

    def _writer(self, subtask, inputs, upstream, messages):  # type: ignore[no-untyped-def]
        claims = []
        for notes in upstream.values():
            for f in notes["findings"]:
                claims.append(
                    {
                        "id": f"{inputs['theme_id']}.c{len(claims) + 1}",
                        "text": f["text"],
                        "cited": [notes["doc_id"]],
                    }
                )
        first = next(iter(upstream.values()))
        claims.append(
            {
                "id": f"{inputs['theme_id']}.bogus",
                "text": BOGUS_CLAIM,
                "cited": [first["doc_id"]],
            }
        )
        section = {
            "theme_id": inputs["theme_id"],
            "title": inputs["label"],
            "summary": f"Papers about {inputs['label']}.",
            "claims": claims,
            "rows": [{"doc_id": n["doc_id"], "title": n["title"]} for n in upstream.values()],
        }
        return json.dumps(section), None

    def _fact_checker(self, subtask, inputs, upstream, messages):  # type: ignore[no-untyped-def]
        section = next(iter(upstream.values()))
        claims = section["claims"]
        results = _tool_results(messages)
        if not results:
            return None, [
                ("check_claim", {"claim": c["text"], "doc_id": c["cited"][0]}) for c in claims
            ]
        checks = []
        for claim, res in zip(claims, results, strict=True):
            passage = res["passage"] or {}
            checks.append(
                {
                    "claim_id": claim["id"],
                    "claim": claim["text"],
                    "cited": claim["cited"],
                    "verdict": "supported" if res["supported"] else "unsupported",
                    "doc_id": claim["cited"][0],
                    "passage": passage.get("text", ""),
                    "score": res["score"],
                    "missing": res["missing"],
                }
            )
        return json.dumps({"theme_id": inputs["theme_id"], "checks": checks}), None

    def _synthesizer(self, subtask, inputs, upstream, messages):  # type: ignore[no-untyped-def]
        prose = {
            "title": f"Review of {inputs['topic']}",
            "introduction": "A model-written introduction.",
            "conclusion": "The end.",
        }
        return json.dumps(prose), None


def review_behaviour(bad_quote_doc: str | None = None) -> tuple[ReviewModel, Behaviour]:
    model = ReviewModel(bad_quote_doc)
    return model, model


__all__ = ["ReviewModel", "review_behaviour"]
