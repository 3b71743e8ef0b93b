"""Relevance labels for review topics over the ICLR 2017 corpus: what a paper is about.

A paper is relevant to a topic when its title or abstract contains one of the topic's key
phrases (the topic's own words and the synonyms and method names the field uses for it),
and none of its `exclude` phrases accounts for every match ("attention" in "received much
attention" is not the attention mechanism) — unless a reader judged that it only mentions
the topic in passing (`passing`); and a paper that a reader judged to be about the topic
though it uses none of the phrases is relevant too (`also`). Both lists hold OpenReview ids
only; the labels are computed from the shared corpus at test time; no third-party text is
stored here.

Checked by hand (titles and the matching passages read, 2026-12-04) on the ICLR 2017 file:
- reinforcement learning: all 55 matches (the synonyms add none: every policy-gradient,
  Q-learning or actor-critic paper also says "reinforcement learning"). Most are RL papers;
  4 only mention RL in passing (a regularizer "shown to improve exploration in
  reinforcement learning", a physics engine, a PDE solver, tic-tac-toe concepts): labelled
  relevant then, `passing` since issue 37 (below).
- attention: the 17 matches outside titles. 4 are a generic use ("received considerable
  attention", "increasingly attracting attention", "more and more attentions", "draws much
  attention"), which the `exclude` patterns drop; 1 kept match is weak ("localized
  attention phenomena"); the rest use attention mechanisms.
- generative adversarial networks: the first 24 phrase matches (all about GANs) and the 4
  synonym-only matches (GAN-based domain transfer, beta-VAE's InfoGAN baseline, the
  introspective adversarial network, adversarial examples for VAE-GAN): all relevant.
- graph neural networks: the 6 matches (no paper says "graph neural network"); one
  (hierarchical compositional networks, by "message passing") is borderline.
- variational autoencoders: the one synonym-only match (a VAE/GAN hybrid), relevant.
- word embeddings: the 8 synonym-only matches; all use or study word vectors (one,
  Cat2Vec, applies word2vec-style embedding to categorical data: borderline).

About, not mentions (issue 37, 2026-12-07): the label was "uses the topic's phrases"; a
review is about what papers study. The papers that either retrieval (the BM25 threshold
before issue 37, the topicality rule after it) returned or missed against the phrase
labels were read (abstracts) and judged; papers neither returned were not re-read, so
`also` can miss papers about a topic that no retrieval found (pooled judgements):
- reinforcement learning: passing — the entropy regularizer, a physics engine, a PDE
  solver, tic-tac-toe concepts, hierarchical memory networks (RL only as others' hard
  attention); also — learning to act from sensorimotor streams in Doom, the predictron
  (a Markov reward process for planning), recurrent environment simulators, an iterative
  policy optimization method.
- attention: passing — prototypical networks (others' attention scheme), variable
  computation in RNNs ("localized attention phenomena"), a character-level NMT paper
  (attention only as the usual encoder-decoder's); also — dynamic coattention networks
  ("coattention" is no match of the phrase).
- generative adversarial networks: passing — Edward (GANs among the models it can
  express), beta-VAE (InfoGAN as a baseline), sampling generative networks (examples on
  VAEs and GANs); also — adversarially learned inference, amortized sampling for
  "generative adversarial learning" (the phrase without "networks").
- variational autoencoders: passing — amortised MAP super-resolution ("as in e.g. VAEs"),
  end-to-end image compression (a loss read as a VAE's), sampling generative networks,
  relation networks (inputs from a VAE); also — sampling from generative autoencoders
  ("variational or adversarial autoencoders"), deep variational CCA (a VAE-style model
  with a DNN posterior and a variational bound, never called a VAE).
- word embeddings: passing — a sentence-representation network and a non-factoid answer
  generator (word embeddings as background).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from kimmy_swarm.agents.tools.corpus import Document

__all__ = ["TOPICS", "TopicLabel", "keyword_matches", "labelled"]


@dataclass(frozen=True, slots=True)
class TopicLabel:
    """A topic and the phrases (regular expressions, case-insensitive) that mark relevance.

    Attributes:
        topic: the topic as a user would write it (`--topic`).
        phrase: the topic's own words as a pattern: the plain keyword baseline.
        synonyms: more patterns that mark a paper as relevant.
        exclude: patterns of uses that do not count (removed from the text before matching).
        passing: ids of papers that match but only mention the topic in passing (read).
        also: ids of papers about the topic that match none of the patterns (read).
    """

    topic: str
    phrase: str
    synonyms: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    passing: tuple[str, ...] = ()
    also: tuple[str, ...] = ()

    def _text(self, doc: Document) -> str:
        text = f"{doc.title}\n{doc.text}"
        for pattern in self.exclude:
            text = re.sub(pattern, " ", text, flags=re.IGNORECASE)
        return text

    def relevant(self, doc: Document) -> bool:
        """Whether `doc` is about the topic (the label)."""
        if doc.id in self.also:
            return True
        text = self._text(doc)
        named = any(re.search(p, text, re.IGNORECASE) for p in (self.phrase, *self.synonyms))
        return named and doc.id not in self.passing

    def has_phrase(self, doc: Document) -> bool:
        """Whether `doc` contains the topic's own words (the keyword-search baseline)."""
        return re.search(self.phrase, f"{doc.title}\n{doc.text}", re.IGNORECASE) is not None


TOPICS: tuple[TopicLabel, ...] = (
    TopicLabel(
        "reinforcement learning",
        r"reinforcement[- ]learning",
        synonyms=(
            r"policy[- ]gradients?",
            r"\bq[- ]learning",
            r"\bactor[- ]critic",
            r"\bdeep rl\b",
            r"\b(?:rl|drl)\b",
            r"\bmarkov decision process",
            r"\bmdps?\b",
            r"\ba3c\b",
            r"\bdqn\b",
            r"temporal[- ]difference",
        ),
        passing=("HkCjNI5ex", "SyEiHNKxx", "HJTXaw9gx", "rJo9n9Feg", "BJ0Ee8cxx"),
        also=("rJLS7qKel", "BkJsCIcgl", "B1s6xvqlx", "SJ-uGHcee"),
    ),
    TopicLabel(
        "attention",
        r"\battention",
        synonyms=(r"\battentive\b", r"\battend(?:s|ing)?\b"),
        exclude=(
            r"\b(?:much|great|considerable|increasing|increased|significant|little|growing|"
            r"recent|wide|special|particular|more|less|careful|close|renewed|substantial)"
            r"\s+(?:research\s+)?attention\b",
            r"\battention\s+(?:from|in)\s+(?:the\s+)?(?:research|machine|deep|community|"
            r"literature|recent)",
            r"\b(?:attract|receiv|draw|drew|gain|garner|pa(?:y|id)|captur)\w*\s+"
            r"(?:[\w-]+\s+){0,3}attentions?\b",
        ),
        passing=("B1-Hhnslg", "S1LVSrcge", "rJq_YBqxx"),
        also=("rJeKjwvclx",),
    ),
    TopicLabel(
        "generative adversarial networks",
        r"generative[- ]adversarial[- ]net",
        synonyms=(
            r"\bgans?\b",
            r"\b[a-z]+-gans?\b",
            r"\b(?:dc|info|w|eb|lap|cat|bi|lr|ac|mix|seq)gans?\b",
            r"adversarial networks?\b",
        ),
        passing=("Hy6b4Pqee", "Sy2fzU9gl", "SypU81Ole"),
        also=("B1ElR4cgg", "H1oRQDqlg"),
    ),
    TopicLabel(
        "graph neural networks",
        r"graph neural networks?",
        synonyms=(
            r"graph[- ]convolution",
            r"graph (?:networks?|embeddings?)",
            r"graph[- ]structured",
            r"gated graph",
            r"message[- ]passing",
            r"\bnodes? (?:classification|embeddings?|features?)",
        ),
    ),
    TopicLabel(
        "variational autoencoders",
        r"variational auto-?encoders?",
        synonyms=(r"\bvaes?\b", r"variational auto-?encoding", r"\w+-vaes?\b"),
        passing=("S1RP6GLle", "rJxdQ3jeg", "SypU81Ole", "Bk2TqVcxe"),
        also=("ryXZmzNeg", "H1Heentlx"),
    ),
    TopicLabel(
        "word embeddings",
        r"word embeddings?",
        synonyms=(r"word vectors?", r"\bword2vec\b", r"\bglove\b", r"word representations?"),
        passing=("H1Go7Koex", "ryQbbFile"),
    ),
)


def labelled(topic: TopicLabel, documents: Iterable[Document]) -> set[str]:
    """The ids of the documents relevant to `topic`."""
    return {d.id for d in documents if topic.relevant(d)}


def keyword_matches(topic: TopicLabel, documents: Iterable[Document]) -> set[str]:
    """The ids of the documents that contain the topic phrase itself (keyword search)."""
    return {d.id for d in documents if topic.has_phrase(d)}
