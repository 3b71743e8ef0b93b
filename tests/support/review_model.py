"""A scripted "model" for the literature review in model mode, served over real HTTP.

`ReviewModel` answers each chat request the way a model does that reads its brief
(`agents.review.briefs`): the user message names the sub-agent and its role and carries its
inputs and the brief — the planner's candidates and suggested themes, a document's
statements, a theme's findings, each claim's matching passages. It quotes those exactly, so
the pipeline's checks pass — except where it misbehaves on purpose:

- the first researcher answer for `bad_quote_doc` misquotes its passage (→ repair turn);
- each writer adds one claim with a number that is not in the cited paper (→ flagged).
"""

from __future__ import annotations

import ast
import json
import re
import threading
from typing import Any

from kimmy_swarm.agents.review._factcheck import is_verbatim
from tests.support.openai_behaviours import Behaviour, Reply, ServerRequest, reply

#: The claim every writer invents (its numbers are in no paper).
BOGUS_CLAIM = "This method improves accuracy by exactly 97.3 percent on 12345 benchmarks."
_SUBAGENT = re.compile(r"You are sub-agent '([^']+)' \(role ([\w.-]+)\)")
_CANDIDATE = re.compile(r"^- (\S+): (.+)$")
_THEME = re.compile(r"^- (\S+) \(([^)]*)\): (.+)$")
_PAPER = re.compile(r"^\[(\S+)\] ")
_FINDING = re.compile(r"^  - \((\w+)\) (.+)$")
_CLAIM = re.compile(r"^Claim (\S+): (.+) \(cites ([^)]*)\)$")
_PASSAGE = re.compile(r"^  - (\S+): (.+)$")


def _inputs(user: str) -> dict[str, Any]:
    found = re.search(r"^Inputs:\n(.*)$", user, re.MULTILINE)
    return json.loads(found.group(1)) if found else {}


def _brief(user: str) -> list[str]:
    """The lines of the brief (what follows the inputs)."""
    return user.split("Inputs:\n", 1)[-1].split("\n")[2:]


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
        repairing = messages[-1]["role"] == "user" and len(messages) > 2
        if repairing and "invalid" in messages[-1]["content"]:
            with self._lock:
                self.repairs_seen += 1
        handler = getattr(self, f"_{role}")
        content = handler(subtask, _inputs(user), _brief(user), repairing)
        return reply(content)(request)

    def _planner(self, subtask, inputs, brief, repairing):  # type: ignore[no-untyped-def]
        themes, candidates = [], []
        for line in brief:
            if m := _THEME.match(line):
                ids = m.group(3).split(", ")
                themes.append({"id": m.group(1), "label": m.group(2), "doc_ids": ids})
            elif m := _CANDIDATE.match(line):
                candidates.append(m.group(1))
        relevant = [d for t in themes for d in t["doc_ids"]]
        assert set(relevant) <= set(candidates)
        return json.dumps({"topic": inputs["topic"], "relevant": relevant, "themes": themes})

    def _researcher(self, subtask, inputs, brief, repairing):  # type: ignore[no-untyped-def]
        stated = [line[2:] for line in brief if line.startswith("- ")]
        first = next((s for s in stated if len(s) > 30), stated[0])
        passage = first
        if inputs["doc_id"] == self.bad_quote_doc and not repairing:
            passage = first.upper() + " (paraphrased)"
        finding = {"kind": "contribution", "text": first, "passage": passage}
        notes = {"doc_id": inputs["doc_id"], "contribution": first, "findings": [finding]}
        return json.dumps(notes)

    def _writer(self, subtask, inputs, brief, repairing):  # type: ignore[no-untyped-def]
        claims: list[dict[str, Any]] = []
        papers: list[str] = []
        for line in brief:
            if m := _PAPER.match(line):
                papers.append(m.group(1))
            elif (m := _FINDING.match(line)) and papers:
                claim_id = f"{inputs['theme_id']}.c{len(claims) + 1}"
                claims.append({"id": claim_id, "text": m.group(2), "cited": [papers[-1]]})
        bogus = {"id": f"{inputs['theme_id']}.bogus", "text": BOGUS_CLAIM, "cited": [papers[0]]}
        section = {
            "theme_id": inputs["theme_id"],
            "title": inputs["label"],
            "summary": f"Papers about {inputs['label']}.",
            "claims": [*claims, bogus],
        }
        return json.dumps(section)

    def _fact_checker(self, subtask, inputs, brief, repairing):  # type: ignore[no-untyped-def]
        checks: list[dict[str, Any]] = []
        claim: dict[str, Any] = {}
        for line in brief:
            if m := _CLAIM.match(line):
                claim = {"id": m.group(1), "text": ast.literal_eval(m.group(2))}
                checks.append({"claim_id": claim["id"], "verdict": "unsupported",
                               "reason": "no passage states it"})  # fmt: skip
            elif (
                (m := _PASSAGE.match(line))
                and checks[-1:]
                and checks[-1]["verdict"] != "supported"
                and (claim["text"] in m.group(2) or is_verbatim(claim["text"], m.group(2)))
            ):  # the claim is in the passage, or restates it in the third person
                checks[-1] = {"claim_id": claim["id"], "verdict": "supported",
                                  "doc_id": m.group(1), "passage": m.group(2)}  # fmt: skip
        return json.dumps({"theme_id": inputs["theme_id"], "checks": checks})

    def _synthesizer(self, subtask, inputs, brief, repairing):  # type: ignore[no-untyped-def]
        prose = {
            "title": f"Review of {inputs['topic']}",
            "introduction": "A model-written introduction.",
            "conclusion": "The end.",
        }
        return json.dumps(prose)


def review_behaviour(bad_quote_doc: str | None = None) -> tuple[ReviewModel, Behaviour]:
    model = ReviewModel(bad_quote_doc)
    return model, model


__all__ = ["ReviewModel", "review_behaviour"]
