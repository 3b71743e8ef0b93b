"""Themes: TF-IDF + LSA + k-means over the ICLR 2017 abstracts and small sets."""

from __future__ import annotations

from pathlib import Path

import pytest

from kimmy_swarm.agents.tools.corpus import Corpus, Document, load_corpus
from kimmy_swarm.agents.tools.search import tokenize_terms
from kimmy_swarm.agents.tools.themes import default_k, find_themes

SHARED_DATA = Path(__file__).resolve().parents[3] / ".." / "shared" / "data"
ICLR = SHARED_DATA / "papers" / "iclr2017_citations_in_2018.json"


@pytest.fixture(scope="module")
def iclr() -> Corpus:
    if not ICLR.exists():
        pytest.skip("shared ICLR data not present")
    return load_corpus(ICLR)


def test_default_k() -> None:
    assert [default_k(n) for n in (0, 1, 3, 4, 8, 20, 50, 100, 489)] == [0, 1, 1, 2, 2, 3, 5, 7, 8]


def test_iclr_themes_cover_every_document_once(iclr: Corpus) -> None:
    themes = find_themes(iclr.documents)
    assert len(themes) == 8
    assigned = [d for t in themes for d in t.doc_ids]
    assert sorted(assigned) == sorted(iclr.ids)
    assert [t.id for t in themes] == [f"theme-{i}" for i in range(1, 9)]
    assert len({t.label for t in themes}) == 8
    sizes = [len(t.doc_ids) for t in themes]
    assert sizes == sorted(sizes, reverse=True) and min(sizes) >= 10
    for t in themes:
        assert len(t.terms) == 8
        # Named by key phrases of its papers' titles, not by single terms.
        phrases = t.label.split(" / ")
        assert 1 <= len(phrases) <= 2
        for phrase in phrases:
            assert len(phrase.split()) >= 2
            key = tokenize_terms(phrase)
            used = [d for d in t.doc_ids if _has_run(tokenize_terms(iclr.get(d).title), key)]
            assert len(used) >= 2, (phrase, t.doc_ids)
    labels = [p for t in themes for p in t.label.split(" / ")]
    # The field's big topics of 2016-17 come out as themes of their own, named as people do.
    for name in ("reinforcement learning", "generative adversarial networks", "question answering"):
        assert name in labels
    assert find_themes(iclr.documents) == themes  # deterministic


def _has_run(words: list[str], run: list[str]) -> bool:
    return any(words[i : i + len(run)] == run for i in range(len(words) - len(run) + 1))


def test_labels_are_distinctive_phrases_or_terms_when_none() -> None:
    docs = [
        Document("p1", "Policy gradient with baselines", "Agents and rewards."),
        Document("p2", "Natural policy gradient methods", "Agents and rewards again."),
        Document("p3", "Policy gradient for robots", "Robots with rewards."),
        Document("p4", "Neural networks for policy gradient", "Agents and neural networks."),
        Document("g1", "Generative adversarial networks", "Images from noise samples."),
        Document("g2", "Training generative adversarial networks", "Images and noise."),
        Document("g3", "Generative Adversarial Networks for text", "Samples of noise images."),
        Document("g4", "Neural networks and generative adversarial networks", "Images."),
    ]
    themes = {t.doc_ids[0][0]: t for t in find_themes(docs, k=2)}
    assert themes["p"].label.startswith("policy gradient")
    # the phrase in its most used form; "neural networks" is in both themes' titles
    assert themes["g"].label.split(" / ")[0] == "generative adversarial networks"
    assert "neural networks" not in themes["p"].label + themes["g"].label
    # No phrase in titles or texts: the top terms, as before.
    words = [Document(f"w{i}", w, f"{w} {w}") for i, w in enumerate(["cats", "dogs", "fish"])]
    (only,) = find_themes(words)
    assert only.label == " / ".join(only.terms[:3])


def test_exclude_terms_keep_topic_words_out_of_labels(iclr: Corpus) -> None:
    topic = tokenize_terms("deep neural networks learning")  # stemmed forms work too
    themes = find_themes(iclr.documents[:120], exclude_terms=topic, seed=1)
    words = {w for t in themes for term in t.terms for w in tokenize_terms(term)}
    assert not words & set(topic)
    assert sorted(d for t in themes for d in t.doc_ids) == sorted(iclr.ids[:120])


def test_members_are_ordered_by_closeness_to_the_centre() -> None:
    docs = [
        Document("g1", "Graph networks", "Graph neural networks on graph nodes and graph edges."),
        Document("g2", "Graph kernels", "Kernels for graph nodes and graph edges."),
        Document("g3", "Graph pictures", "Graph edges drawn as image pixels in image models."),
        Document("i1", "Image models", "Convolutional image models for image pixels."),
        Document("i2", "Image pixels", "Pixels of an image."),
        Document("i3", "Image nets", "Convolutional image classification."),
    ]
    themes = find_themes(docs, k=2)
    assert sorted(sorted(t.doc_ids) for t in themes) == [["g1", "g2", "g3"], ["i1", "i2", "i3"]]
    graph = next(t for t in themes if "g1" in t.doc_ids)
    assert graph.terms[0] == "graph"
    assert graph.doc_ids[-1] == "g3"  # the member that also talks about images is last


def test_small_and_degenerate_inputs() -> None:
    assert find_themes([]) == []
    three = [Document(f"d{i}", f"Title {i}", f"Text about topic {i}.") for i in range(3)]
    (only,) = find_themes(three, k=5)
    assert sorted(only.doc_ids) == ["d0", "d1", "d2"] and only.id == "theme-1"
    four = [*three, Document("d3", "Title 3", "Text.")]
    assert len(find_themes(four, k=10)) <= 4
    blank = find_themes([Document("x", "", "the of"), Document("y", "", "and")])
    assert blank[0].label == "(no distinctive terms)" and blank[0].doc_ids == ("x", "y")
    with pytest.raises(ValueError, match="k must be a positive integer or None, got 0"):
        find_themes(three, k=0)
    with pytest.raises(ValueError, match="'d0' occurs more than once"):
        find_themes([three[0], three[0]])


def test_iclr_rl_themes_are_named_by_phrases_of_the_field(iclr: Corpus) -> None:
    from kimmy_swarm.agents.tools.search import SearchIndex

    docs = [
        iclr.get(h.doc_id) for h in SearchIndex(iclr.documents).relevant("reinforcement learning")
    ]
    topic = tokenize_terms("reinforcement learning")
    themes = find_themes(docs, exclude_terms=topic, background=iclr.documents)
    phrases = [p for t in themes for p in t.label.split(" / ")]
    assert "policy gradient" in phrases and "imitation learning" in phrases
    # Phrases of common words only, or of the topic's words, name no theme.
    for generic in ("neural networks", "deep reinforcement learning", "reinforcement learning"):
        assert generic not in phrases
    without = find_themes(docs, exclude_terms=topic)  # the themes themselves do not change
    assert sorted(t.doc_ids for t in without) == sorted(t.doc_ids for t in themes)
