"""A theme's section as a comparison (issue 37): what its papers share, who reports what
number, and connectors only between claims about the same thing."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

from kimmy_swarm.agents.review._section_prose import RESULTS, _content, theme_section
from kimmy_swarm.agents.review._synthesis import headline
from kimmy_swarm.agents.review.schemas import Finding, PaperNotes
from kimmy_swarm.agents.tools.search import tokenize_terms


def _notes(i: int, author: str, contribution: str, result: str = "") -> PaperNotes:
    findings = [Finding(text=f"{author} (2017) {contribution}", passage="x", kind="contribution")]
    if result:
        findings.append(Finding(text=f"{author} (2017) {result}", passage=result, kind="result"))
    return PaperNotes(
        doc_id=f"d{i}",
        title=f"Paper {i} on memory networks",
        year=2017,
        authors=[f"A. {author}"],
        contribution=contribution,
        findings=findings,
    )


def test_headline_is_the_number_with_what_it_measures() -> None:
    assert headline("averaging 880% expert human performance, and more") == (
        "880% expert human performance"
    )
    assert (
        headline("Edward is at least 35x faster than Stan and 6x faster") == "35x faster than Stan"
    )
    assert headline("a test error rate of 3.65, which is better") == "3.65"
    assert headline("It predicts up to 200 frames (Oh et al., 2015).") == "up to 200 frames"
    assert headline("no number at all") == ""


def test_a_linking_connector_only_joins_claims_about_the_same_thing() -> None:
    papers = [
        _notes(0, "Kim", "use memory networks to play chess openings."),
        _notes(1, "Lee", "use memory networks to play chess endgames."),
        _notes(2, "Park", "use memory networks to translate legal text."),
    ]
    _, claims = theme_section("t", papers, topic="memory networks")
    texts = [c.text for c in claims if c.group and c.group != RESULTS]
    assert texts[1].startswith("Similarly, Lee")  # both on chess
    assert texts[2].startswith("Park")  # nothing in common with the chess claim: no link


def test_results_are_not_compared_and_the_summary_says_who_reports_what() -> None:
    papers = [
        _notes(0, "Kim", "study memory.", "reach 84.7% accuracy on bAbI tasks."),
        _notes(1, "Lee", "study recall.", "improve recall by 12 points on SQuAD."),
    ]
    summary, claims = theme_section("t", papers)
    results = [c.text for c in claims if c.group == RESULTS]
    assert results and not any(t.startswith(("By comparison", "In contrast")) for t in results)
    assert "Who reports what number, each on its own tasks and data: Kim, 2017: 84.7% accuracy" in (
        summary
    )
    assert "Lee, 2017: by 12 points on SQuAD" in summary


def test_the_reviews_say_who_reports_what_and_link_no_unrelated_claims(
    gan_review: Path, rl_review: Path
) -> None:
    gan, rl = (gan_review / "review.md").read_text(), (rl_review / "review.md").read_text()
    assert "Odena et al., 2017, rejected submission: 84.7% of the classes" in gan
    assert "Jaderberg et al., 2017: 880% expert human performance" in rl
    topics = {gan_review: "generative adversarial networks", rl_review: "reinforcement learning"}
    for folder, topic in topics.items():
        # Before issue 37's synthesis every second claim of a paragraph opened "Similarly,"
        # whatever it said; now the two claims share words beyond the topic's.
        lines = (folder / "claims.jsonl").read_text().splitlines()
        claims = [json.loads(x) for x in lines]
        common = set(tokenize_terms(topic))
        for before, after in itertools.pairwise(claims):
            if after["claim"].startswith("Similarly, ") and before["group"] == after["group"]:
                shared = set(_content(before["claim"])) & set(_content(after["claim"]))
                assert shared - common, (before["claim"], after["claim"])
