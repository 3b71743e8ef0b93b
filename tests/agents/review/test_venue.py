"""How a review cites a paper by its standing at the venue (`agents.review._venue`): the
ICLR 2017 records hold rejected and workshop submissions, which are never cited as ICLR
2017 papers — not in the text, the references of review.md, or references.bib."""

from __future__ import annotations

import re
from pathlib import Path

import bibtexparser
import pytest

from kimmy_swarm.agents.review._prose import attribution, split_attribution, third_person
from kimmy_swarm.agents.review._venue import in_text_status, standing, venue_note
from kimmy_swarm.agents.review.markdown import render_bibtex
from kimmy_swarm.agents.tools.corpus import Corpus

PENG = "r1kGbydxg"  # Learning Locomotion Skills Using DeepRL (Peng and van de Panne; Reject)
WANG = "H1oRQDqlg"  # Learning to Draw Samples (Wang and Liu; Invite to Workshop Track)
ZHANG = "Sy8gdB9xx"  # Understanding deep learning requires rethinking generalization (Oral)


@pytest.mark.parametrize(
    ("decision", "status", "note"),
    [
        ("Accept (Oral)", "accepted", "ICLR 2017 (oral)"),
        ("Accept (Poster)", "accepted", "ICLR 2017"),
        ("Invite to Workshop Track", "workshop", "ICLR 2017 Workshop Track"),
        ("Reject", "rejected", "Submitted to ICLR 2017; rejected"),
        (None, "", "ICLR 2017"),
    ],
)
def test_the_decision_gives_the_standing(decision: str | None, status: str, note: str) -> None:
    assert standing(decision) == status
    assert venue_note("ICLR 2017", decision) == note


def test_a_rejected_paper_is_cited_as_a_submission_with_its_particles() -> None:
    authors = ["Xue Bin Peng", "Michiel van de Panne"]
    assert attribution(authors, 2017, "t") == "Peng and van de Panne (2017)"
    cited = attribution(authors, 2017, "t", "rejected")
    assert cited == "Peng and van de Panne (2017, rejected submission)"
    assert (
        attribution(["A B", "C D", "E F"], 2017, "t", "workshop")
        == "B et al. (2017, workshop track)"
    )
    assert in_text_status("accepted") == ""
    # the fact-checker reads each form back
    claim = third_person("We compare four action parameterizations.", cited)
    assert claim == f"{cited} compare four action parameterizations."
    assert split_attribution(claim) == (cited, "compare four action parameterizations.")
    closing = third_person("Little is known about action spaces.", cited)
    assert closing.endswith("(Peng and van de Panne, 2017, rejected submission).")
    assert split_attribution(closing)[0] == "Peng and van de Panne, 2017, rejected submission"


def test_references_bib_says_rejected_and_workshop(iclr: Corpus) -> None:
    bib = bibtexparser.parse_string(render_bibtex([PENG, WANG, ZHANG], iclr))
    fields = {e.key: {f.key: f.value for f in e.fields} for e in bib.entries}
    assert fields[PENG]["note"] == "Submitted to ICLR 2017; rejected"
    assert "booktitle" not in fields[PENG]  # no proceedings published it
    assert fields[PENG]["author"] == "Xue Bin Peng and van de Panne, Michiel"
    assert fields[WANG]["booktitle"] == "ICLR 2017 Workshop Track"
    assert fields[ZHANG]["booktitle"] == "ICLR 2017" and "note" not in fields[ZHANG]


def test_the_review_names_particles_and_standings(rl_review: Path, iclr: Corpus) -> None:
    review = (rl_review / "review.md").read_text()
    assert "Peng and van de Panne (2017, rejected submission)" in review
    text, references = review.split("## References", 1)
    assert not re.search(r"Peng and Panne|Panne, 2017\)|Panne \(2017\)", text)
    peng = next(line for line in references.splitlines() if f"[{PENG}]" in line)
    assert "Michiel van de Panne (2017)" in peng and "Submitted to ICLR 2017; rejected." in peng
    # no rejected paper is cited as if accepted, in the text or the references
    rejected = {d.id for d in iclr if d.meta.get("decision") == "Reject"}
    for line in references.splitlines():
        doc_id = line.split("]**", 1)[0].removeprefix("- **[")
        if doc_id in rejected:
            assert "; rejected." in line, line
    cites = re.findall(r"\[([^\]]+?(?: \(|, )\d{4}[^\]]*)\]\((https[^)]+)\)", text)
    assert len(cites) > 50
    for name, url in cites:
        doc = next(d for d in iclr if d.url == url)
        assert ("rejected submission" in name) is (doc.id in rejected), name
    intro = review.split("## Introduction", 1)[1].split("\n## ", 1)[0]
    assert re.search(r"By the records' decisions, \d+ were accepted, \d+ invited to the workshop "
                     r"track and \d+ rejected", intro)  # fmt: skip
