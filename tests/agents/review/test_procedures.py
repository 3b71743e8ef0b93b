"""Each review role's offline procedure, run by a real swarm over the real ICLR corpus."""

from __future__ import annotations

from typing import Any

import pytest

from agents import install
from agents.review import review_roles
from agents.review._prose import attribution, split_attribution, third_person
from agents.review.tools import build_toolbox
from agents.tools.corpus import Corpus
from agents.tools.search import SearchIndex
from swarm import Swarm
from swarm.schema import SubtaskStatus


def _run_one(corpus: Corpus, subtasks: list[dict[str, Any]]) -> dict[str, Any]:
    swarm = Swarm(max_retries=0, failure_policy="continue")
    install(swarm, review_roles(), build_toolbox(corpus))
    result = swarm.run_sync({"subtasks": subtasks})
    bad = {k: r.error for k, r in result.results.items() if r.status is not SubtaskStatus.DONE}
    assert not bad, bad
    return result.outputs


def _doc_by_title(corpus: Corpus, title: str) -> str:
    return next(d.id for d in corpus if d.title == title)


def test_orchestrator_retrieves_relevant_papers_and_partitions_them(iclr: Corpus) -> None:
    out = _run_one(
        iclr,
        [
            {
                "id": "plan",
                "role": "orchestrator",
                "inputs": {
                    "topic": "reinforcement learning",
                    "max_papers": 80,
                    "corpus_size": len(iclr),
                },
            }
        ],
    )["plan"]
    relevant = out["relevant"]
    assert 40 <= len(relevant) <= 80
    for doc_id in relevant[:20]:  # the best hits really are about the topic
        doc = iclr.get(doc_id)
        assert "reinforcement" in (doc.title + doc.text).lower()
    themed = [d for t in out["themes"] for d in t["doc_ids"]]
    assert sorted(themed) == sorted(relevant)  # every paper in exactly one theme
    assert len({t["label"] for t in out["themes"]}) == len(out["themes"]) >= 2


def test_orchestrator_notes_a_topic_nothing_matches(iclr: Corpus) -> None:
    out = _run_one(
        iclr,
        [
            {
                "id": "plan",
                "role": "orchestrator",
                "inputs": {"topic": "zygomorphic xylophones", "max_papers": 10},
            }
        ],
    )
    assert out["plan"]["relevant"] == [] and "no document" in out["plan"]["notes"][0]


def test_researcher_quotes_exact_passages_with_offsets(iclr: Corpus) -> None:
    doc_id = _doc_by_title(iclr, "Understanding deep learning requires rethinking generalization")
    notes = _run_one(
        iclr,
        [
            {
                "id": "r",
                "role": "researcher",
                "inputs": {"doc_id": doc_id, "topic": "generalization"},
            }
        ],
    )["r"]
    doc = iclr.get(doc_id)
    assert notes["doc_id"] == doc_id and notes["year"] == 2017
    assert 2 <= len(notes["findings"]) <= 3
    for f in notes["findings"]:
        assert doc.text[f["start"] : f["end"]] == f["passage"]
        assert f["text"].startswith("Zhang et al. (2017)")
    joined = " ".join(f["passage"] for f in notes["findings"])
    assert "random labeling" in joined  # the paper's headline result is among the findings


def _section(iclr: Corpus, claims: list[tuple[str, str]]) -> dict[str, Any]:
    return {
        "theme_id": "t1",
        "title": "T",
        "claims": [{"id": f"t1.c{i}", "text": t, "cited": [d]} for i, (t, d) in enumerate(claims)],
    }


def test_fact_checker_keeps_true_claims_and_flags_altered_ones(iclr: Corpus) -> None:
    doc_id = _doc_by_title(iclr, "Understanding deep learning requires rethinking generalization")
    other = _doc_by_title(iclr, "Structured Attention Networks")
    true = (
        "Zhang et al. (2017) show how these traditional approaches fail to explain why "
        "large neural networks generalize well in practice."
    )
    swarm = Swarm(max_retries=0)
    install(swarm, review_roles(), build_toolbox(iclr))

    @swarm.role("fake_writer")
    async def fake_writer(ctx: Any) -> dict[str, Any]:
        return _section(
            iclr,
            [
                (true, doc_id),
                (true.replace("Zhang", "Hinton"), doc_id),  # wrong attribution
                (
                    "Zhang et al. (2017) show that networks fit 97% of random labels in 3 epochs.",
                    doc_id,
                ),
                (true, other),  # cites the wrong paper
            ],
        )

    result = swarm.run_sync(
        {
            "subtasks": [
                {"id": "write:t1", "role": "fake_writer"},
                {
                    "id": "check:t1",
                    "role": "fact_checker",
                    "inputs": {"theme_id": "t1"},
                    "depends_on": ["write:t1"],
                },
            ]
        }
    )
    checks = result.outputs["check:t1"]["checks"]
    assert [c["verdict"] for c in checks] == [
        "supported",
        "unsupported",
        "unsupported",
        "unsupported",
    ]
    doc = iclr.get(doc_id)
    assert doc.text[checks[0]["start"] : checks[0]["end"]] == checks[0]["passage"]
    assert "attribution" in checks[1]["reason"]
    assert "97%" in checks[2]["missing"] or "97" in " ".join(checks[2]["missing"])


def test_writer_and_synthesizer_build_on_upstream_notes(iclr: Corpus) -> None:
    ids = [h.doc_id for h in SearchIndex(iclr.documents).search("memory networks", k=3)]
    subtasks = [
        {"id": f"read:{d}", "role": "researcher", "inputs": {"doc_id": d, "topic": "memory"}}
        for d in ids
    ]
    subtasks += [
        {
            "id": "write:t1",
            "role": "writer",
            "depends_on": [f"read:{d}" for d in ids],
            "inputs": {
                "theme_id": "t1",
                "label": "memory / networks",
                "terms": ["memory"],
                "doc_ids": ids,
            },
        },
        {
            "id": "check:t1",
            "role": "fact_checker",
            "depends_on": ["write:t1"],
            "inputs": {"theme_id": "t1"},
        },
        {
            "id": "synthesize",
            "role": "synthesizer",
            "depends_on": ["write:t1", "check:t1"],
            "inputs": {"topic": "memory", "corpus_size": len(iclr)},
        },
    ]
    out = _run_one(iclr, subtasks)
    section = out["write:t1"]
    assert section["title"] == "Memory and networks"
    assert [r["doc_id"] for r in section["rows"]] == ids
    assert {d for c in section["claims"] for d in c["cited"]} <= set(ids)
    assert len(section["claims"]) >= len(ids)  # ≤ 6 papers: up to two claims each
    prose = out["synthesize"]
    n_checks = len(out["check:t1"]["checks"])
    assert f"each of the {n_checks} claims" in prose["introduction"]
    assert "3 documents of the 489" in prose["introduction"]


@pytest.mark.parametrize(
    ("authors", "year", "expected"),
    [
        (["Chiyuan Zhang*", "Samy Bengio", "Moritz Hardt"], 2017, "Zhang et al. (2017)"),
        (["Yoon Kim", "Alexander Rush"], 2016, "Kim and Rush (2016)"),
        (["Hinton, Geoffrey"], None, "Hinton (n.d.)"),
        ([], 2017, "“json”"),
    ],
)
def test_attribution(authors: list[str], year: int | None, expected: str) -> None:
    assert attribution(authors, year, "json") == expected


def test_third_person_and_split_roundtrip() -> None:
    claim = third_person(
        "In this paper, we show that our model reaches 95% accuracy.", "Kim and Rush (2016)"
    )
    assert claim == "Kim and Rush (2016) show that their model reaches 95% accuracy."
    assert split_attribution(claim) == (
        "Kim and Rush (2016)",
        "show that their model reaches 95% accuracy.",
    )
    single = third_person("We propose a parser.", "Kim (2016)")
    assert single == "Kim (2016) proposes a parser."
    assert (
        third_person("This paper studies X.", "Kim (2016)") == "The paper by Kim (2016) studies X."
    )
