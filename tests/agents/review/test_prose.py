"""Attributions as a review writes them, and the fact-checker reading each form back."""

from __future__ import annotations

from typing import Any

import pytest

from kimmy_swarm.agents import install
from kimmy_swarm.agents.review import review_roles
from kimmy_swarm.agents.review._prose import (
    CONNECTORS,
    opens_with_source,
    parenthetical,
    plain_tex,
    split_attribution,
    third_person,
    with_connector,
)
from kimmy_swarm.agents.review.tools import build_toolbox
from kimmy_swarm.agents.tools.corpus import Corpus
from kimmy_swarm.agents.tools.passages import sentences
from kimmy_swarm.swarm import Swarm

ZHANG = "Zhang et al. (2017)"


@pytest.mark.parametrize(
    ("sentence", "claim", "subject", "body"),
    [
        (  # the authors become the subject
            "We propose a gadget loader.",
            "Zhang et al. (2017) propose a gadget loader.",
            ZHANG,
            "propose a gadget loader.",
        ),
        (  # "we" after an opening clause of any length
            "Inspired by the long tradition of widget frobnication, here we study gadgets.",
            "Inspired by the long tradition of widget frobnication, here Zhang et al. (2017) "
            "study gadgets.",
            ZHANG,
            "Inspired by the long tradition of widget frobnication, here study gadgets.",
        ),
        (  # a statement in its own words gets a closing citation, not "reports that"
            "Gadget loaders are slow on large widget stores.",
            "Gadget loaders are slow on large widget stores (Zhang et al., 2017).",
            "Zhang et al., 2017",
            "Gadget loaders are slow on large widget stores.",
        ),
        (
            "Our loader reads 3 widgets per second.",
            "The loader reads 3 widgets per second (Zhang et al., 2017).",
            "Zhang et al., 2017",
            "The loader reads 3 widgets per second.",
        ),
    ],
)
def test_attribution_forms_round_trip(sentence: str, claim: str, subject: str, body: str) -> None:
    assert third_person(sentence, ZHANG) == claim
    assert split_attribution(claim) == (subject, body)
    connected = with_connector(claim, "In contrast")
    assert split_attribution(connected) == (subject, body)


def test_documentation_sources_are_cited_by_title() -> None:
    claim = third_person("Widget files are read in blocks.", "“zorp”")
    assert claim == "Widget files are read in blocks (“zorp”)."
    assert split_attribution(claim) == ("“zorp”", "Widget files are read in blocks.")
    assert third_person("Provides a widget reader.", "“zorp”") == "“zorp” provides a widget reader."


def test_connectors() -> None:
    claim = "Zhang et al. (2017) propose a gadget loader."
    assert opens_with_source(claim) and not opens_with_source("Gadgets load (Zhang et al., 2017).")
    assert with_connector(claim, "Similarly") == "Similarly, " + claim
    assert (
        with_connector("The paper by Kim (2016) studies X.", "Relatedly")
        == "Relatedly, the paper by Kim (2016) studies X."
    )
    assert split_attribution("Relatedly, the paper by Kim (2016) studies X.") == (
        "Kim (2016)",
        "studies X.",
    )
    with pytest.raises(ValueError, match="unknown connector 'Therefore'"):
        with_connector(claim, "Therefore")
    assert "In contrast" in CONNECTORS
    assert parenthetical(ZHANG) == "(Zhang et al., 2017)" and parenthetical("“a”") == "(“a”)"


def _checked(iclr: Corpus, claims: list[tuple[str, str]]) -> list[dict[str, Any]]:
    swarm = Swarm(max_retries=0)
    install(swarm, review_roles(), build_toolbox(iclr))

    @swarm.role("fake_writer")
    async def fake_writer(ctx: Any) -> dict[str, Any]:
        return {
            "theme_id": "t1",
            "title": "T",
            "claims": [
                {"id": f"t1.c{i}", "text": t, "cited": [d]} for i, (t, d) in enumerate(claims)
            ],
        }

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
    return result.outputs["check:t1"]["checks"]


def test_the_fact_checker_reads_every_form(iclr: Corpus) -> None:
    doc = next(d for d in iclr if d.title.startswith("Understanding deep learning requires"))
    subject = f"{doc.authors[0].split()[-1]} et al. ({doc.year})"
    plain = next(s.text for s in sentences(doc) if "we " not in s.text.lower())
    claims = [
        third_person(plain, subject),  # closing citation
        with_connector(third_person(plain, subject), "By comparison"),
    ]
    assert claims[0].endswith(f"({doc.authors[0].split()[-1]} et al., {doc.year}).")
    wrong = [c.replace(doc.authors[0].split()[-1], "Hinton") for c in claims]
    checks = _checked(iclr, [(c, doc.id) for c in claims + wrong])
    assert [c["verdict"] for c in checks] == ["supported"] * 2 + ["unsupported"] * 2
    assert all("attribution" in c["reason"] for c in checks[2:])


def test_tex_of_a_prose_sentence_is_shown_plain() -> None:
    sentence = r"Our agent reaches 880\% and a speedup of 10$\times$ with \emph{GMAN} on $k$-means."
    claim = third_person(sentence, ZHANG)
    assert (
        claim
        == "The agent reaches 880% and a speedup of 10× with GMAN on k-means (Zhang et al., 2017)."
    )
    assert plain_tex(r"samples $S_P \sim P^n$ stay") == r"samples $S_P \sim P^n$ stay"  # a formula
