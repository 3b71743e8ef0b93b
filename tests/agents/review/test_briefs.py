"""The review's briefs (`agents.review.briefs`) on the real ICLR corpus: what each schema pins
and allows, that an answer under it passes the role's check, and that the schemas compile to
a grammar (xgrammar, as our engine does)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import jsonschema
import pytest

from kimmy_swarm.agents.review import review_roles
from kimmy_swarm.agents.review._claimable import is_prose
from kimmy_swarm.agents.review.briefs import (
    check_brief,
    plan_brief,
    research_brief,
    write_brief,
)
from kimmy_swarm.agents.review.tools import build_toolbox
from kimmy_swarm.agents.toolbox import ToolBox
from kimmy_swarm.agents.tools.corpus import Corpus
from kimmy_swarm.agents.tools.search import SearchIndex


@dataclass
class View:
    """What a brief and a check use of an attempt: inputs, upstream outputs, tool calls."""

    tools: ToolBox
    inputs: dict[str, Any]
    upstream: dict[str, Any] = field(default_factory=dict)
    policy: str = "model"

    def call(self, tool: str, /, **arguments: Any) -> Any:
        return self.tools.get_tool(tool)(arguments)


@pytest.fixture(scope="module")
def box(iclr: Corpus) -> ToolBox:
    return build_toolbox(iclr, SearchIndex(iclr.documents))


def _compiles(schema: dict[str, Any]) -> None:
    xgr = pytest.importorskip("xgrammar")
    assert xgr.Grammar.from_json_schema(json.dumps(schema))


def _doc(iclr: Corpus, words: str) -> str:
    return SearchIndex(iclr.documents).search(words, k=1)[0].doc_id


def test_a_researchers_passages_can_only_be_the_documents_statements(
    iclr: Corpus, box: ToolBox
) -> None:
    doc_id = _doc(iclr, "unrolled generative adversarial networks")
    run = View(box, {"doc_id": doc_id, "topic": "GANs"})
    brief = research_brief(run)
    schema = brief.schema
    assert schema is not None
    _compiles(schema)
    props = schema["properties"]
    assert props["doc_id"] == {"const": doc_id}
    stated = [s["text"] for s in box.get_tool("document_sentences")({"doc_id": doc_id})]
    passages = props["findings"]["items"]["properties"]["passage"]["enum"]
    assert passages == [s for s in dict.fromkeys(stated) if is_prose(s)]
    assert all(f"- {p}" in brief.text for p in passages)
    assert props["findings"]["minItems"] == 1 and props["findings"]["maxItems"] == 3
    assert set(props) == {"doc_id", "contribution", "findings"}  # the metadata is filled
    assert brief.filled["title"] == iclr.get(doc_id).title

    answer = {
        "doc_id": doc_id,
        "contribution": "It stabilises GAN training.",
        "findings": [{"kind": "result", "passage": passages[-1], "text": "It works."}],
    }
    jsonschema.validate(answer, schema)
    role = review_roles()["researcher"]
    notes = role.output.model_validate(brief.complete(answer))
    assert role.check is not None
    role.check(notes, run)  # the check's exact-quote rule holds by construction
    assert notes.findings[0].start is not None and notes.authors == list(iclr.get(doc_id).authors)
    with pytest.raises(jsonschema.ValidationError):  # a paraphrased passage is not allowed
        bad = {**answer, "findings": [{**answer["findings"][0], "passage": "It works well."}]}
        jsonschema.validate(bad, schema)


def test_a_plans_documents_are_its_themes_documents(box: ToolBox) -> None:
    run = View(
        box,
        {
            "topic": "generative adversarial networks",
            "max_papers": 6,
            "themes": None,
            "corpus_size": 489,
            "doc_ids": [],
        },
    )
    brief = plan_brief(run)
    assert brief.schema is not None
    _compiles(brief.schema)
    ids = brief.schema["properties"]["themes"]["items"]["properties"]["doc_ids"]["items"]["enum"]
    assert len(ids) == 12  # two candidates per paper the plan may hold
    answer = {
        "topic": "generative adversarial networks",
        "themes": [
            {"id": "t1", "label": "Training GANs", "doc_ids": ids[:3] + ids[:1]},
            {"id": "t2", "label": "GAN applications", "doc_ids": ids[3:5]},
        ],
    }
    jsonschema.validate(answer, brief.schema)
    completed = brief.complete(answer)
    assert completed["relevant"] == ids[:5]  # each once, in the themes' order
    assert completed["themes"][0]["doc_ids"] == ids[:3]
    role = review_roles()["planner"]
    assert role.check is not None
    role.check(role.output.model_validate(completed), run)
    too_many = {**answer, "themes": [{"id": "t", "label": "All", "doc_ids": ids[:7]}]}
    with pytest.raises(ValueError, match="the plan reviews 7 documents; at most 6"):
        role.check(role.output.model_validate(brief.complete(too_many)), run)


def test_a_writer_cites_its_themes_papers_and_a_checker_gives_a_verdict_per_claim(
    iclr: Corpus, box: ToolBox
) -> None:
    a, b = _doc(iclr, "unrolled generative adversarial"), _doc(iclr, "mode regularized")
    upstream = {}
    for doc_id in (a, b):
        notes = research_brief(View(box, {"doc_id": doc_id}))
        passage = notes.schema["properties"]["findings"]["items"]["properties"]["passage"]["enum"][
            0
        ]  # type: ignore[index]
        upstream[f"read:{doc_id}"] = notes.complete(
            {
                "doc_id": doc_id,
                "contribution": "",
                "findings": [{"kind": "result", "passage": passage, "text": passage}],
            }
        )
    writer = write_brief(
        View(box, {"theme_id": "t1", "label": "GANs", "doc_ids": [a, b]}, upstream)
    )
    assert writer.schema is not None
    _compiles(writer.schema)
    claims = writer.schema["properties"]["claims"]
    assert claims["items"]["properties"]["cited"]["items"]["enum"] == [a, b]
    assert claims["minItems"] == 2  # a claim per paper with findings at least
    section = {
        "theme_id": "t1",
        "title": "Training GANs",
        "summary": "Two papers.",
        "claims": [
            {
                "id": "c1",
                "text": upstream[f"read:{a}"]["findings"][0]["text"],
                "cited": [a],
                "group": "",
            },
            {"id": "c2", "text": "Made up 99.9%.", "cited": [b], "group": ""},
        ],
    }
    jsonschema.validate(section, writer.schema)

    check = check_brief(View(box, {"theme_id": "t1"}, {"write:t1": section}))
    assert check.schema is not None
    _compiles(check.schema)
    verdicts = check.schema["properties"]["checks"]
    shapes = [v.get("anyOf", [v]) for v in verdicts["prefixItems"]]
    assert [{s["properties"]["claim_id"]["const"] for s in each} for each in shapes] == [
        {"c1"},
        {"c2"},
    ]
    supported = verdicts["prefixItems"][0]["anyOf"][0]["properties"]
    answer = {
        "theme_id": "t1",
        "checks": [
            {
                "claim_id": "c1",
                "verdict": "supported",
                "doc_id": a,
                "passage": supported["passage"]["enum"][0],
            },
            {"claim_id": "c2", "verdict": "unsupported", "reason": "No passage gives 99.9%."},
        ],
    }
    jsonschema.validate(answer, check.schema)
    role = review_roles()["fact_checker"]
    result = role.output.model_validate(check.complete(answer))
    assert role.check is not None
    role.check(result, View(box, {"theme_id": "t1"}, {"write:t1": section}))
    assert [c.claim for c in result.checks] == [c["text"] for c in section["claims"]]
    with pytest.raises(jsonschema.ValidationError):  # one verdict per claim, in order
        jsonschema.validate({**answer, "checks": answer["checks"][::-1]}, check.schema)


def test_without_a_topic_the_plan_reviews_every_document_it_was_given(
    iclr: Corpus, box: ToolBox
) -> None:
    """SmolLM2 grouped 2 of the 3 documents it was given: a review of fewer papers than asked,
    accepted as valid until this check."""
    given = iclr.ids[:3]
    run = View(box, {"topic": "", "max_papers": 3, "themes": None, "corpus_size": 489,
                     "doc_ids": given})  # fmt: skip
    brief = plan_brief(run)
    assert "Group all 3 into themes" in brief.text
    role = review_roles()["planner"]
    assert role.check is not None
    two = brief.complete({"topic": "", "themes": [{"id": "t", "label": "A", "doc_ids": given[:2]}]})
    with pytest.raises(ValueError, match="leaves out documents it was given to review"):
        role.check(role.output.model_validate(two), run)
    three = brief.complete({"topic": "", "themes": [{"id": "t", "label": "A", "doc_ids": given}]})
    role.check(role.output.model_validate(three), run)
