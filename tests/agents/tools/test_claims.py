"""The claim-support checker on real ICLR 2017 abstracts and on small documents."""

from __future__ import annotations

from pathlib import Path

import pytest

from kimmy_swarm.agents.tools.claims import (
    check_claim,
    claim_entities,
    claim_numbers,
    polarity_markers,
    strip_citations,
)
from kimmy_swarm.agents.tools.corpus import Corpus, Document, load_corpus

SHARED_DATA = Path(__file__).resolve().parents[3] / ".." / "shared" / "data"
ICLR = SHARED_DATA / "papers" / "iclr2017_citations_in_2018.json"
needs_iclr = pytest.mark.skipif(not ICLR.exists(), reason="shared ICLR data not present")

ZHANG = "Sy8gdB9xx"  # Understanding deep learning requires rethinking generalization
SNAPSHOT = "BJYwwY9ll"  # Snapshot Ensembles: Train 1, Get M for Free
DCN = "rJeKjwvclx"  # Dynamic Coattention Networks For Question Answering


@pytest.fixture(scope="module")
def iclr() -> Corpus:
    if not ICLR.exists():
        pytest.skip("shared ICLR data not present")
    return load_corpus(ICLR)


def test_claim_numbers_are_normalized() -> None:
    text = "3.5% of 1,000 runs, 12 layers in 2017; 95 percent, 0.090 and 71.0% on CIFAR-10"
    assert claim_numbers(text) == ["3.5%", "1000", "12", "2017", "95%", "0.09", "71%", "10"]
    assert claim_numbers("word2vec and VGG16 have no numbers") == []


def test_claim_entities() -> None:
    text = (
        "Deep networks beat LSTM and GANs on ImageNet. Penn Treebank results with ResNet-50 "
        "and the Adam optimizer from Google Brain hold. We agree."
    )
    assert claim_entities(text) == [
        "LSTM",
        "GANs",
        "ImageNet",
        "Penn Treebank",
        "ResNet-50",
        "Adam",
        "Google Brain",
    ]


def test_strip_citations_removes_markers_and_attribution() -> None:
    marked = "Zhang et al. (2017) show that nets memorize [zhang2017understanding]."
    assert strip_citations(marked) == "nets memorize ."
    assert strip_citations("Smith (2016) argues that X holds.") == "X holds."
    assert strip_citations("According to Lee and Kim (2018), nets memorize.") == "nets memorize."
    assert strip_citations("Nets memorize (Zhang et al., 2017; Li, 2018).") == "Nets memorize."
    assert strip_citations("As Zhang et al. note, nets memorize.") == "As note, nets memorize."


@needs_iclr
def test_paraphrase_of_an_abstract_sentence_is_supported(iclr: Corpus) -> None:
    doc = iclr.get(ZHANG)
    claim = (
        "Zhang et al. (2017) show that convolutional networks trained with stochastic gradient "
        "methods easily fit random labels [zhang2017understanding]."
    )
    support = check_claim(claim, doc)
    assert support.supported and support.missing == () and support.score >= 0.8
    assert support.passage is not None
    assert "random labeling of the training data" in support.passage.text
    assert doc.text[support.passage.start : support.passage.end] == support.passage.text


@needs_iclr
def test_numbers_must_match(iclr: Corpus) -> None:
    doc = iclr.get(SNAPSHOT)
    claim = (
        "Snapshot Ensembles of DenseNet reach error rates of 3.4% on CIFAR-10 and 17.4% on "
        "CIFAR-100."
    )
    assert check_claim(claim, doc).supported
    changed = check_claim(claim.replace("3.4%", "2.4%"), doc)
    assert not changed.supported and changed.missing == ("2.4%",)
    assert changed.passage is not None and "3.4%" in changed.passage.text

    dcn = iclr.get(DCN)
    claim = (
        "A single DCN model improves the state of the art on the Stanford question answering "
        "dataset from 71.0% to 75.9% F1."
    )
    assert check_claim(claim, dcn).supported  # "71.0%" == "71%"
    wrong = check_claim(claim.replace("75.9%", "79.9%"), dcn)
    assert not wrong.supported and wrong.missing == ("79.9%",)


@needs_iclr
def test_claims_about_absent_things_are_unsupported(iclr: Corpus) -> None:
    doc = iclr.get(ZHANG)
    absent = check_claim("Quantum annealing speeds up protein folding simulations.", doc)
    assert not absent.supported and absent.score < 0.5 and absent.passage is None
    entity = check_claim(
        "Convolutional networks easily fit a random labeling of the training data on ImageNet.",
        doc,
    )
    assert not entity.supported and entity.missing == ("ImageNet",) and entity.score >= 0.5


def test_threshold_two_sentence_windows_and_title_entities() -> None:
    doc = Document(
        "x",
        "Neural Architecture Search",
        "We search architectures with a controller. It reaches 3.65 error on CIFAR-10.",
    )
    support = check_claim("Neural Architecture Search reaches 3.65 error with a controller.", doc)
    assert support.supported and support.passage is not None
    assert support.passage.text == doc.text  # the window of both sentences
    strict = check_claim("The controller reaches 3.65 error.", doc, threshold=1.0)
    assert strict.supported and strict.score == 1.0
    assert not check_claim("Controllers search widely.", doc, threshold=1.0).supported
    assert check_claim("1,000 samples", Document("n", "", "We use 1000 samples.")).supported
    with pytest.raises(ValueError, match=r"threshold must be within \[0, 1\], got 1.5"):
        check_claim("x", doc, threshold=1.5)


def test_degenerate_inputs() -> None:
    empty = check_claim("Nets memorize.", Document("e", "", ""))
    assert (empty.passage, empty.score, empty.supported) == (None, 0.0, False)
    blank = check_claim("[ref2017]", Document("d", "T", "Some text."))
    assert not blank.supported and blank.missing == ()


_HEDGED = Document(
    id="h",
    title="Combinatorial widgets",
    text=(
        "Our loader finds optimal widget tours for up to 200 gadgets. These results, albeit "
        "still far from state-of-the-art, give insights into how loaders can be used. "
        "Gadget stores may help widget loaders."
    ),
)


@pytest.mark.parametrize(
    ("claim", "polarity"),
    [
        (  # word for word: nothing changed
            "These results, albeit still far from state-of-the-art, give insights into how "
            "loaders can be used.",
            (),
        ),
        (  # the caveat cut off
            "These results give insights into how loaders can be used.",
            ("drops 'albeit'", "drops 'still far from'"),
        ),
        ("Gadget stores help widget loaders.", ("drops 'may'",)),  # the hedge dropped
        ("Gadget stores may not help widget loaders.", ("adds 'not'",)),  # turned around
    ],
)
def test_a_claim_keeps_the_polarity_of_its_passage(claim: str, polarity: tuple[str, ...]) -> None:
    support = check_claim(claim, _HEDGED)
    assert support.polarity == polarity
    assert support.supported is (not polarity)
    assert support.missing == ()  # its words and numbers are all there: only polarity fails


def test_polarity_markers() -> None:
    assert polarity_markers("It doesn't hold and cannot fail, albeit up to 3 times.") == {
        "not",
        "albeit",
        "up to",
    }


def test_a_claim_over_three_sentences_is_checked_against_all_three() -> None:
    claim = (
        "Our loader finds optimal widget tours for up to 200 gadgets. These results, albeit "
        "still far from state-of-the-art, give insights into how loaders can be used. "
        "Gadget stores may help widget loaders."
    )
    support = check_claim(claim, _HEDGED)
    assert support.supported and support.passage is not None
    assert support.passage.text == _HEDGED.text
