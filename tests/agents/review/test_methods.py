"""The method a paper's contribution sentence names, said of its authors (issue 37): what a
theme's comparison sentence sets side by side, in the paper's own words."""

from __future__ import annotations

import re

import pytest

from kimmy_swarm.agents.review._methods import clip, method_of
from kimmy_swarm.agents.review._prose import plain_tex

#: (contribution sentence, authors, the method said of them) — one case per rule.
CASES = [
    (  # 1: a named method and what it does, the name in parentheses
        "In this paper, we propose the \\emph{Generative Multi-Adversarial Network} (GMAN), "
        "a framework that extends GANs to multiple discriminators.",
        "Durugkar et al. (2017)",
        "Durugkar et al. (2017) extend GANs to multiple discriminators (GMAN)",
    ),
    (
        "We present LR-GAN: an adversarial image generation model which takes scene "
        "structure and context into account.",
        "Yang et al. (2017)",
        "Yang et al. (2017) take scene structure and context into account (LR-GAN)",
    ),
    (
        "We introduce the adversarially learned inference (ALI) model, which jointly\n"
        "learns a generation network and an inference network using an adversarial\nprocess.",
        "Dumoulin et al. (2017)",
        "Dumoulin et al. (2017) jointly learn a generation network and an inference network "
        "using an adversarial process (ALI)",
    ),
    (  # 2: a method word and what it does; a single author keeps the verb's -s
        "We propose to train networks for computer Go so that given accuracy is reached "
        "with much less examples.",
        "Cazenave (2017)",
        "Cazenave (2017) trains networks for computer Go",
    ),
    (
        "In this paper we describe a new technique that combines policy gradient with "
        "off-policy Q-learning, drawing experience from a replay buffer.",
        "O'Donoghue et al. (2017)",
        "O'Donoghue et al. (2017) combine policy gradient with off-policy Q-learning",
    ),
    (  # 4: "use X to …" is how the paper works, said with its own verb
        "In this paper, we use a recurrent network to generate the model descriptions of "
        "neural networks and train this RNN with reinforcement learning.",
        "Zoph and Le (2017)",
        "Zoph and Le (2017) use a recurrent network to generate the model descriptions of "
        "neural networks",
    ),
    (  # 4: cut before a preposition, within 16 words
        "In this work, we investigate a novel training procedure to learn a generative model "
        "as the transition operator of a Markov chain, such that, when applied repeatedly, it "
        "will denoise it.",
        "Bordes et al. (2017)",
        "Bordes et al. (2017) investigate a novel training procedure to learn a generative "
        "model as the transition operator",
    ),
]


@pytest.mark.parametrize(("sentence", "subject", "said"), CASES)
def test_the_method_is_said_of_the_authors_in_the_papers_words(
    sentence: str, subject: str, said: str
) -> None:
    method = method_of(sentence)
    assert method is not None
    assert method.said_of(subject) == said
    # nothing invented: the words after the verb and the name are the sentence's own
    text = " ".join(plain_tex(sentence).split())
    assert method.rest in text
    assert method.name in text
    assert re.search(rf"\b{method.verb}", text)  # the verb, up to its number


@pytest.mark.parametrize(
    "sentence",
    [
        "We consider an extension of this framework in two directions.",  # points back
        "Deep reinforcement learning agents have achieved state-of-the-art results.",  # no cue
        "We show that the model reaches 84.7% accuracy.",  # a result, no method
    ],
)
def test_no_method_where_the_sentence_names_none(sentence: str) -> None:
    assert method_of(sentence) is None


def test_a_clip_ends_on_a_whole_phrase_outside_parentheses() -> None:
    text = (
        "compare the impact of four different action parameterizations (torques, "
        "muscle-activations, target joint angles, and target joint-angle velocities) in terms "
        "of learning time"
    )
    assert clip(text, 17).endswith("target joint-angle velocities)")
    assert clip(text, 10) == "compare the impact"  # the list in parentheses stays whole
    assert clip("explore methods of producing adversarial examples such as the VAE", 7) == (
        "explore methods of producing adversarial examples"
    )
    assert clip("a short phrase", 16) == "a short phrase"
