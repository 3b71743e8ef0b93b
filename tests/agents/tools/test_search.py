"""BM25 search over a corpus and over one document's sentences."""

from __future__ import annotations

from pathlib import Path

import pytest

from kimmy_swarm.agents.tools.corpus import Document, UnknownDocumentError, load_corpus
from kimmy_swarm.agents.tools.search import (
    Relevance,
    SearchIndex,
    search_passages,
    stem,
    tokenize_terms,
    topic_facets,
)
from tests.support.topic_labels import TOPICS, keyword_matches, labelled

SHARED_DATA = Path(__file__).resolve().parents[3] / ".." / "shared" / "data"
ICLR = SHARED_DATA / "papers" / "iclr2017_citations_in_2018.json"
needs_iclr = pytest.mark.skipif(not ICLR.exists(), reason="shared ICLR data not present")

DOCS = [
    Document("b-cats", "Cats", "Cats purr. Cats sleep all day."),
    Document("a-cats", "Cats", "Cats purr. Cats sleep all day."),
    Document("dogs", "Dogs", "Dogs bark at the mail carrier and chase cats."),
    Document("fish", "Fish", "Fish swim."),
]


def test_tokenize_terms_drops_stopwords_and_strips_suffixes() -> None:
    assert tokenize_terms("The networks were trained on images, and studies of LSTMs!") == [
        "network",
        "train",
        "imag",
        "study",
        "lstm",
    ]
    assert tokenize_terms("3.5% of x") == ["3", "5"]
    assert tokenize_terms("the of and") == []
    # Forms of one word meet on one term.
    assert stem("generalizes") == stem("generalize") == stem("generalized")
    assert stem("classes") == "class" and stem("focus") == "focus"


def test_search_ranks_and_breaks_ties_by_id() -> None:
    index = SearchIndex(DOCS)
    hits = index.search("cats purring")
    assert [h.doc_id for h in hits] == ["a-cats", "b-cats", "dogs"]
    assert hits[0].score == hits[1].score > hits[2].score > 0
    assert [h.doc_id for h in index.search("cats", k=1)] == ["a-cats"]
    assert index.search("zebra") == [] and index.search("") == [] and index.search("the") == []


def test_title_counts_more_than_text() -> None:
    docs = [
        Document("t", "Memory networks", "We study models."),
        Document("x", "Models", "We study memory networks."),
    ]
    assert [h.doc_id for h in SearchIndex(docs).search("memory")] == ["t", "x"]


def test_within_restricts_and_checks_ids() -> None:
    index = SearchIndex(DOCS)
    assert [h.doc_id for h in index.search("cats", within={"dogs", "fish"})] == ["dogs"]
    assert index.search("cats", within=[]) == []
    with pytest.raises(UnknownDocumentError, match="'cat'"):
        index.search("cats", within=["cat"])


def test_bad_arguments_and_empty_indexes() -> None:
    index = SearchIndex(DOCS)
    for k in (0, -1):
        with pytest.raises(ValueError, match=f"k must be a positive integer, got {k}"):
            index.search("cats", k=k)
    assert SearchIndex([]).search("cats") == []
    assert SearchIndex([Document("e", "", "the of")]).search("the cats") == []
    with pytest.raises(ValueError, match="'a-cats' occurs more than once"):
        SearchIndex([DOCS[1], DOCS[1]])


@needs_iclr
def test_iclr_search_finds_the_right_papers() -> None:
    corpus = load_corpus(ICLR)
    index = SearchIndex(corpus.documents)
    top = index.search("rethinking generalization random labels", k=3)
    assert top[0].doc_id == "Sy8gdB9xx" and len(top) == 3
    nas = index.search("neural architecture search reinforcement learning", k=5)
    assert nas[0].doc_id == "r1Ue8Hcxg"
    attention = index.search("attention", k=20)
    assert all("attention" in corpus.get(h.doc_id).title.lower() for h in attention[:3])
    assert index.search("attention", k=20) == attention  # deterministic


def test_search_passages_returns_the_matching_sentences() -> None:
    d = Document(
        "p",
        "Paper",
        "We train on ImageNet. Random labels are memorized easily.\n\nNoise images too. The end.",
    )
    found = search_passages(d, "memorize random labels", k=2)
    assert found[0][0].text == "Random labels are memorized easily."
    assert len(found) == 1 and found[0][1] > 0
    assert all(d.text[p.start : p.end] == p.text for p, _ in found)
    assert search_passages(d, "the") == [] and search_passages(d, "zebra") == []
    with pytest.raises(ValueError, match="k must be a positive integer"):
        search_passages(d, "labels", k=0)


def test_a_phrase_outscores_its_words_apart() -> None:
    docs = [
        Document("a-apart", "Models", "A variational bound for a denoising autoencoder."),
        Document("b-phrase", "Models", "A variational autoencoder with a denoising bound."),
    ]
    hits = SearchIndex(docs).search("variational autoencoders")
    assert [h.doc_id for h in hits] == ["b-phrase", "a-apart"]
    assert hits[0].score > hits[1].score


def test_topic_facets_split_alternatives() -> None:
    assert topic_facets("reinforcement learning") == [["reinforcement", "learn"]]
    assert topic_facets("parsing and encoding text, files; data formats / files") == [
        ["pars"],
        ["encod", "text"],
        ["file"],
        ["data", "format"],
    ]
    assert topic_facets("the and of") == []


def test_relevance_is_a_threshold_not_a_count() -> None:
    docs = [
        Document(f"rl{i}", f"Reinforcement learning {i}", "Agents learn from rewards.")
        for i in range(3)
    ]
    docs += [Document(f"sl{i}", "Supervised learning", "We learn to classify.") for i in range(30)]
    index = SearchIndex(docs)
    assert [h.doc_id for h in index.relevant("reinforcement learning")] == ["rl0", "rl1", "rl2"]
    # The 33 documents that share a word with the topic, when both checks are off.
    assert len(index.relevant("reinforcement learning", Relevance(0.0, 0.0))) == 33
    assert index.relevant("zebra") == [] and index.relevant("the of") == []
    # A topic of alternatives: documents about either.
    either = {h.doc_id for h in index.relevant("reinforcement learning or supervised learning")}
    assert either == {"rl0", "rl1", "rl2"} | {f"sl{i}" for i in range(30)}


def test_relevance_rejects_bad_shares() -> None:
    for bad in (-0.1, 1.5):
        with pytest.raises(ValueError, match=rf"min_score_ratio must be in \[0, 1\], got {bad}"):
            Relevance(min_score_ratio=bad)
    with pytest.raises(ValueError, match="min_coverage must be a number in"):
        Relevance(min_coverage="high")  # type: ignore[arg-type]


@needs_iclr
@pytest.mark.parametrize(
    ("topic", "min_precision", "min_recall"),
    [
        ("reinforcement learning", 0.95, 0.95),
        ("generative adversarial networks", 0.95, 0.95),
        # The labels are what papers are about since issue 37: 0.89 / 0.94 here (0.70 /
        # 0.94 for the rule before it); a paper using a VAE's codes as its input is in.
        ("variational autoencoders", 0.85, 0.9),
    ],
)
def test_iclr_relevance_on_labelled_topics(
    topic: str, min_precision: float, min_recall: float
) -> None:
    """Precision >= 0.9 at the keyword search's recall (benchmarks/bench_retrieval.py)."""
    corpus = load_corpus(ICLR)
    label = next(t for t in TOPICS if t.topic == topic)
    relevant = labelled(label, corpus.documents)
    index = SearchIndex(corpus.documents)
    got = {h.doc_id for h in index.relevant(topic)}
    precision, recall = len(got & relevant) / len(got), len(got & relevant) / len(relevant)
    keyword = keyword_matches(label, corpus.documents)
    assert precision >= min_precision and recall >= min_recall
    assert recall >= len(keyword & relevant) / len(relevant)  # as good as the keyword search
    # The old review's "relevant" set, the 200 best hits, was mostly off topic.
    top = {h.doc_id for h in index.search(topic, k=200)}
    assert len(top & relevant) / len(top) < 0.5
