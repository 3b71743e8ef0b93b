"""Which papers a review keeps (issue 37): the papers about its topic, and under a cap the
most cited and accepted of them (`agents.review._selection`)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from kimmy_swarm.agents.review._selection import most_read, reviewable
from kimmy_swarm.agents.review.tools import build_toolbox
from kimmy_swarm.agents.tools.corpus import Corpus

# OpenReview ids (see tests/agents/tools/test_topicality.py): adversarially learned
# inference, Edward, the predictron, learning to act by predicting the future,
# tic-tac-toe chess concepts, the HJI PDE solver; and energy-based GANs.
ALI, EDWARD, EBGAN = "B1ElR4cgg", "Hy6b4Pqee", "ryh9pmcee"
PREDICTRON, LEARNING_TO_ACT = "BkJsCIcgl", "rJLS7qKel"
CHESS, HJI_PDE = "rJo9n9Feg", "HJTXaw9gx"
# Named only in passing (a blind read of 0005900): "Improved Architectures for Computer Go"
# (RL as AlphaGo's, in its background) and infusion training (a GAN as its baseline).
COMPUTER_GO, INFUSION = "Bk67W4Yxl", "BJAFbaolg"
PASSING = {"reinforcement learning": COMPUTER_GO, "generative adversarial networks": INFUSION}


def _most_cited_labelled(iclr: Corpus, topic: str) -> set[str]:
    """The ten most cited papers about `topic` by the labels (benchmarks/results/retrieval.md)."""
    from tests.support.topic_labels import TOPICS, labelled

    label = next(t for t in TOPICS if t.topic == topic)
    cites = {
        d: int(iclr.get(d).meta.get("citations") or 0) for d in labelled(label, iclr.documents)
    }
    return set(sorted(cites, key=lambda d: (-cites[d], d))[:10])


def _hit(doc_id: str, citations: int | None, status: str = "accepted") -> dict[str, Any]:
    return {"doc_id": doc_id, "citations": citations, "status": status}


def test_the_cap_keeps_the_most_cited_then_accepted_in_search_order() -> None:
    hits = [
        _hit("a", 3),
        _hit("b", 50),
        _hit("c", 10, "rejected"),
        _hit("d", 10, "accepted"),
        _hit("e", None),
    ]
    kept = [h["doc_id"] for h in most_read(hits, 2)]
    assert kept == ["b", "d"]  # 50 citations; then of two with 10 the accepted one
    assert [h["doc_id"] for h in most_read(hits, 3)] == ["b", "c", "d"]  # search order
    # Without citations or decisions: the search's order.
    plain = [{"doc_id": x} for x in "xyz"]
    assert [h["doc_id"] for h in most_read(plain, 2)] == ["x", "y"]
    with pytest.raises(ValueError, match="limit must be >= 1, got 0"):
        most_read(hits, 0)


def test_search_corpus_reports_citations_and_standing(iclr: Corpus) -> None:
    tools = build_toolbox(iclr)
    hits = tools["search_corpus"](query="generative adversarial networks", k=100)
    by_id = {h["doc_id"]: h for h in hits}
    assert by_id[ALI]["citations"] == 122 and by_id[ALI]["status"] == "accepted"
    assert EDWARD not in by_id


@pytest.mark.parametrize("topic", sorted(PASSING))
def test_search_corpus_says_which_papers_name_the_topic_only_in_passing(
    iclr: Corpus, topic: str
) -> None:
    hits = build_toolbox(iclr)["search_corpus"](query=topic, k=1000)
    assert {h["doc_id"] for h in hits if h["in_passing"]} == {PASSING[topic]}
    kept = {h["doc_id"] for h in reviewable(hits)}
    assert PASSING[topic] not in kept and len(kept) == len(hits) - 1
    assert _most_cited_labelled(iclr, topic) <= kept  # GAN 10/10, RL 10/10


def _reviewed(review: Path) -> set[str]:
    """The OpenReview ids the review cites."""
    return set(re.findall(r"forum\?id=([\w-]+)", (review / "review.md").read_text()))


def test_the_gan_review_reviews_ali_not_edward(gan_review: Path) -> None:
    got = _reviewed(gan_review)
    assert {ALI, EBGAN} <= got and EDWARD not in got


def test_the_rl_review_reviews_the_predictron_not_chess(rl_review: Path) -> None:
    got = _reviewed(rl_review)
    assert {PREDICTRON, LEARNING_TO_ACT} <= got
    assert not {CHESS, HJI_PDE} & got


def test_the_reviews_leave_out_papers_that_name_their_topic_in_passing(
    iclr: Corpus, gan_review: Path, rl_review: Path
) -> None:
    gan, rl = _reviewed(gan_review), _reviewed(rl_review)
    assert INFUSION not in gan and COMPUTER_GO not in rl
    assert _most_cited_labelled(iclr, "generative adversarial networks") <= gan
    assert _most_cited_labelled(iclr, "reinforcement learning") <= rl


def _headings(review: Path) -> list[str]:
    """The theme sections of a review: its level-2 headings between the introduction and
    the comparison."""
    heads = re.findall(r"^## (.+)$", (review / "review.md").read_text(), re.MULTILINE)
    return heads[heads.index("Introduction") + 1 : heads.index("Comparison")]


def test_the_reviews_themes_are_lines_of_research(gan_review: Path, rl_review: Path) -> None:
    from kimmy_swarm.agents.tools.research_lines import is_generic

    gan, rl = _headings(gan_review), _headings(rl_review)
    # Before issue 37: "Supervised, approach and feature", "High resolution", "Machine
    # learning", "Neural network architecture and natural language".
    for heading in gan + rl:
        assert heading == "Other work" or not is_generic(heading), heading
    assert "Energy-based GANs" in gan and "Actor-critic" in rl
    assert gan[-1] == rl[-1] == "Other work"  # the miscellany says what it is, and is last
