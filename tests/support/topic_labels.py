"""Relevance labels for review topics over the ICLR 2017 corpus, by key phrases.

A paper is relevant to a topic when its title or abstract contains one of the topic's key
phrases (the topic's own words and the synonyms and method names the field uses for it),
and none of its `exclude` phrases accounts for every match ("attention" in "received much
attention" is not the attention mechanism). The labels are computed from the shared corpus
at test time; no third-party text is stored here.

Checked by hand (titles and the matching passages read, 2026-12-04) on the ICLR 2017 file:
- reinforcement learning: all 55 matches (the synonyms add none: every policy-gradient,
  Q-learning or actor-critic paper also says "reinforcement learning"). Most are RL papers;
  4 only mention RL in passing (a regularizer "shown to improve exploration in
  reinforcement learning", a physics engine, a PDE solver, tic-tac-toe concepts) and are
  labelled relevant all the same: the label is "uses the topic's phrases", not "is mainly
  about it".
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
    """

    topic: str
    phrase: str
    synonyms: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()

    def _text(self, doc: Document) -> str:
        text = f"{doc.title}\n{doc.text}"
        for pattern in self.exclude:
            text = re.sub(pattern, " ", text, flags=re.IGNORECASE)
        return text

    def relevant(self, doc: Document) -> bool:
        """Whether `doc` is about the topic (the label)."""
        text = self._text(doc)
        return any(re.search(p, text, re.IGNORECASE) for p in (self.phrase, *self.synonyms))

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
    ),
    TopicLabel(
        "word embeddings",
        r"word embeddings?",
        synonyms=(r"word vectors?", r"\bword2vec\b", r"\bglove\b", r"word representations?"),
    ),
)


def labelled(topic: TopicLabel, documents: Iterable[Document]) -> set[str]:
    """The ids of the documents relevant to `topic`."""
    return {d.id for d in documents if topic.relevant(d)}


def keyword_matches(topic: TopicLabel, documents: Iterable[Document]) -> set[str]:
    """The ids of the documents that contain the topic phrase itself (keyword search)."""
    return {d.id for d in documents if topic.has_phrase(d)}
