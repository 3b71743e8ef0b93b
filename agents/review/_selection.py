"""Which of the papers about a topic a review keeps.

Every paper `search_corpus` returns is about the topic (`agents.tools.topicality`): it
names the topic where it speaks, or its words are the topic's. A review asks more of a
paper that names the topic: that its own work is on it. A paper that names the topic
neither in its title nor in a sentence of its own work (one in its own voice or naming its
title's subject, `Topicality.own_work`; or one of contribution, method, result or
limitation, by `_sentence_roles`) names it *in passing* (`search_corpus` says so of each
hit), and a review leaves it out (`reviewable`), when

- it names the topic as what it compares its work with ("competitive results compared to
  the samples generated with a basic Generative Adversarial Net"): its method is another
  way to the topic's problem, whose words it shares for that reason; or
- it names the topic only in its background ("AlphaGo trains policy networks with …
  reinforcement learning"), and its own sentences are no denser in the topic's vocabulary
  than a paper that never names the topic must be (`Relevance.unnamed_quantile` of the
  central papers): "We propose to train networks for computer Go …" is not; "we present a
  method for unsupervised third-person imitation learning … the agent …" is.

Under `max_papers` the review keeps the papers the field reads most: the most cited first,
and among equally cited ones an accepted paper before a workshop one before a rejected or
withdrawn one, then the search's own order. A corpus without citations or decisions is cut
in the search's order, as before. The kept papers stay in the search's order (best match
first).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kimmy_swarm.agents.review._sentence_roles import classify
from kimmy_swarm.agents.tools.corpus import Document
from kimmy_swarm.agents.tools.passages import sentences
from kimmy_swarm.agents.tools.search import SearchIndex, topic_facet_texts
from kimmy_swarm.agents.tools.topicality import (
    Topicality,
    TopicForms,
    TopicVocabulary,
    central_density,
    learn_forms,
    naming,
    topic_vocabulary,
)

#: How a standing ranks among equally cited papers (lower first); "" has no decision.
_STANDING_RANK = {"accepted": 0, "": 1, "workshop": 2, "rejected": 3, "withdrawn": 4}


@dataclass(frozen=True, slots=True)
class _Facet:
    """One alternative of a topic as the corpus writes it: its forms, how each paper stands
    to it (by id), its vocabulary, and the density of that vocabulary a paper's own
    sentences need when they never name it."""

    forms: TopicForms
    standing: dict[str, Topicality]
    vocabulary: TopicVocabulary
    floor: float

    def in_passing(self, doc: Document) -> bool:
        """Whether `doc` names this alternative only in passing (see the module)."""
        standing = self.standing[doc.id]
        if standing.title or standing.own_work or not standing.mentions:
            return False  # named as its subject, or about it by its vocabulary alone
        roled = classify([s.text for s in sentences(doc)])
        said = [naming(self.forms, r.text) for r in roled]
        if any(n.own and r.role != "background" for r, n in zip(roled, said, strict=True)):
            return False
        if any(n.compared for n in said):
            return True
        own = " ".join(r.text for r in roled if r.role != "background")
        return self.vocabulary.density(own) < self.floor


def _facets(topic: str, index: SearchIndex, quantile: float) -> list[_Facet]:
    documents, terms = index.documents, index.document_terms
    out = []
    for part in topic_facet_texts(topic):
        forms = learn_forms(part, documents)
        if forms.phrases or forms.acronyms:
            standing = index.topicality(part)
            by_id = {d.id: s for d, s in zip(documents, standing, strict=True)}
            vocabulary = topic_vocabulary(standing, terms)
            out.append(_Facet(forms, by_id, vocabulary, central_density(standing, quantile)))
    return out


def named_in_passing(
    topic: str,
    index: SearchIndex,
    papers: Iterable[Document],
    *,
    unnamed_quantile: float,
) -> set[str]:
    """The ids of `papers` that name `topic` only in passing (see the module), judged
    against the corpus `documents`; of a topic of several alternatives ("a, b and c"),
    those that name each only in passing.

    Args:
        topic: the review's topic ("generative adversarial networks").
        index: the corpus's search index (its central papers give the topic's vocabulary;
            it keeps how each paper stands to the topic, `SearchIndex.topicality`).
        papers: the papers about the topic (`SearchIndex.relevant`).
        unnamed_quantile: the quantile of the central papers' vocabulary densities that a
            paper's own sentences need when they never name the topic.
    """
    papers = list(papers)
    facets = _facets(topic, index, unnamed_quantile) if papers else []
    if not facets:
        return set()
    return {d.id for d in papers if all(f.in_passing(d) for f in facets)}


def _weight(hit: Mapping[str, Any], position: int) -> tuple[int, int, int]:
    citations = hit.get("citations")
    cited = citations if isinstance(citations, int) and citations >= 0 else 0
    return (-cited, _STANDING_RANK.get(str(hit.get("status") or ""), 1), position)


def reviewable(hits: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The hits of `search_corpus` a review can keep: not those that name the topic only
    in passing (`"in_passing"`, see the module), in their order."""
    return [hit for hit in hits if not hit.get("in_passing")]


def most_read(hits: Sequence[Mapping[str, Any]], limit: int) -> list[Mapping[str, Any]]:
    """The `limit` hits the field reads most (see the module), in their search order.

    Raises:
        ValueError: `limit` < 1.
    """
    if limit < 1:
        raise ValueError(f"limit must be >= 1, got {limit}")
    ranked = sorted(range(len(hits)), key=lambda i: _weight(hits[i], i))[:limit]
    return [hits[i] for i in sorted(ranked)]


__all__ = ["most_read", "named_in_passing", "reviewable"]
