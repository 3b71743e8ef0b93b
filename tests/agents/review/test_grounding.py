"""`_grounding.ungrounded`: the sentences of a model's prose that its sources do not ground."""

from __future__ import annotations

from kimmy_swarm.agents.review._grounding import ungrounded

SOURCES = [
    "Unrolled Generative Adversarial Networks",
    "We introduce a method to stabilize Generative Adversarial Networks (GANs) by defining "
    "the generator objective with respect to an unrolled optimization of the discriminator.",
    "Metz et al. (2017)",
    "Mode Regularized Generative Adversarial Networks",
    "We argue that these bad behaviors of GANs are due to the very particular functional "
    "shape of the trained discriminators in high dimensional spaces, which can easily make "
    "training stuck or push probability mass in the wrong direction.",
]


def test_a_rewording_of_the_sources_is_grounded() -> None:
    text = (
        "This theme examines how the papers stabilize the training of generative adversarial "
        "networks. Metz et al. (2017) introduce Unrolled Generative Adversarial Networks, "
        "which unroll the optimization of the discriminator. Both papers address training "
        "that gets stuck."
    )
    assert ungrounded(text, SOURCES) == []


def test_an_invented_name_or_vocabulary_is_not() -> None:
    text = (
        "It presents the concept of Reverse Artificial Intelligence, which transforms the "
        "data into advertisements. Blockchain ledgers tokenize marketing budgets across "
        "retail franchises worldwide. The papers stabilize training."
    )
    found = ungrounded(text, SOURCES)
    assert len(found) == 2
    assert found[0].endswith("(names Reverse Artificial Intelligence, which no paper names)")
    assert found[1].startswith("'Blockchain ledgers") and "of its words are the papers'" in found[1]


def test_a_sentences_first_word_and_short_sentences_are_not_judged_alone() -> None:
    # "Unrolled" opens the sentence; the rest of the name is the sources'; short ones pass
    assert ungrounded("Unrolled Adversarial Networks work. A new introduction.", SOURCES) == []
