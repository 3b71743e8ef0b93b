"""Themes as lines of research (`agents.tools.research_lines`), on small sets and ICLR 2017."""

from __future__ import annotations

from pathlib import Path

import pytest

from kimmy_swarm.agents.tools.corpus import Corpus, Document, load_corpus
from kimmy_swarm.agents.tools.research_lines import OTHER_WORK, is_generic, research_lines
from kimmy_swarm.agents.tools.search import SearchIndex, tokenize_terms

ICLR = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "papers"
ICLR_JSON = ICLR / "iclr2017_citations_in_2018.json"
EBGAN = "ryh9pmcee"  # "Energy-based Generative Adversarial Networks" (OpenReview id)

#: Names the old TF-IDF themes gave (issue 37) and others a reader would not keep.
GENERIC_NAMES = (
    "supervised, approach and feature",
    "machine learning",
    "high resolution",
    "neural network architecture",
    "image, present and approach",
    "representations, multiple and unsupervised",
    "state-of-the-art",
)


@pytest.fixture(scope="module")
def iclr() -> Corpus:
    if not ICLR_JSON.exists():
        pytest.skip(f"the shared corpus is not at {ICLR_JSON}")
    return load_corpus(ICLR_JSON)


def test_generic_names_are_told_from_lines_of_research() -> None:
    for name in GENERIC_NAMES:
        assert is_generic(name), name
    for name in ("energy-based GANs", "imitation learning", "policy gradient", "exploration"):
        assert not is_generic(name), name
    assert is_generic("") and is_generic("the of")


def _paper(i: int, title: str, text: str) -> Document:
    return Document(f"p{i:02d}", title, text)


def _set() -> tuple[list[Document], list[Document]]:
    """Sixteen papers: four on imitation learning, four on policy gradients, eight on other
    things; and a corpus of thirty more around them."""
    papers = [
        _paper(i, f"Imitation learning from demonstrations {i}", "We imitate an expert.")
        for i in range(4)
    ]
    papers += [
        _paper(i, f"Variance of policy gradient estimators {i}", "We reduce variance.")
        for i in range(4, 8)
    ]
    papers += [_paper(8 + i, f"Topic {w}", f"We study {w}.") for i, w in enumerate("abcdefgh")]
    corpus = papers + [
        _paper(20 + i, f"Image classification {i}", "We classify images with networks.")
        for i in range(60)
    ]
    return papers, corpus


def test_themes_are_named_by_phrases_most_of_their_papers_carry() -> None:
    papers, corpus = _set()
    themes = research_lines(papers, background=corpus)
    by_label = {t.label: t for t in themes}
    assert set(by_label) == {"imitation learning", "policy gradient estimators", OTHER_WORK}
    assert sorted(by_label["imitation learning"].doc_ids) == ["p00", "p01", "p02", "p03"]
    assert sorted(by_label[OTHER_WORK].doc_ids) == [f"p{i:02d}" for i in range(8, 16)]
    assert themes[-1].label == OTHER_WORK  # the miscellany comes last
    assert sorted(d for t in themes for d in t.doc_ids) == sorted(d.id for d in papers)
    assert research_lines(papers, background=corpus) == themes  # deterministic
    # The topic's own words name nothing.
    topical = research_lines(papers, background=corpus, exclude_terms=["imitation"])
    assert "imitation learning" not in {t.label for t in topical}


def test_bad_and_degenerate_inputs() -> None:
    assert research_lines([]) == []
    (only,) = research_lines([_paper(0, "A", "b"), _paper(1, "C", "d")])
    assert only.label == OTHER_WORK and sorted(only.doc_ids) == ["p00", "p01"]
    with pytest.raises(ValueError, match="k must be a positive integer or None, got 0"):
        research_lines([_paper(0, "A", "b")], k=0)
    with pytest.raises(ValueError, match="'p00' occurs more than once"):
        research_lines([_paper(0, "A", "b"), _paper(0, "A", "b")])


def _carried(name: str, doc: Document) -> bool:
    text = tokenize_terms(f"{doc.title}\n{doc.text}")
    for part in name.split(" and "):
        words = [w for w in tokenize_terms(part) if w not in {"gan", "rl"}]
        if any(text[i : i + len(words)] == words for i in range(len(text) - len(words) + 1)):
            return True
    return False


@pytest.mark.parametrize("topic", ["generative adversarial networks", "reinforcement learning"])
def test_iclr_themes_are_named_lines_that_most_of_their_papers_carry(
    iclr: Corpus, topic: str
) -> None:
    from kimmy_swarm.agents.review.tools import build_toolbox

    ids = [h.doc_id for h in SearchIndex(iclr.documents).relevant(topic)]
    themes = build_toolbox(iclr)["find_themes"](doc_ids=ids, topic=topic)
    named = [t for t in themes if t["label"] != OTHER_WORK]
    assert len(named) >= 4
    for t in named:
        assert not is_generic(t["label"]), t["label"]
        carriers = [d for d in t["doc_ids"] if _carried(t["label"], iclr.get(d))]
        assert 2 * len(carriers) > len(t["doc_ids"]), t["label"]
    assert sorted(d for t in themes for d in t["doc_ids"]) == sorted(ids)
    if topic.startswith("generative"):
        energy = next(t for t in named if t["label"] == "energy-based GANs")
        assert EBGAN in energy["doc_ids"]
    else:
        assert "actor-critic" in {t["label"] for t in named}
