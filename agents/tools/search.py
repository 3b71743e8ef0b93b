"""BM25 search over a corpus (bm25s) and over the sentences of one document.

`tokenize_terms` is the one tokenizer shared with `claims` and `themes`, so a term that
matches in search also counts as the same term when a claim is checked. The corpus index
holds each document's terms and its pairs of adjacent terms ("reinforcement learning" is
also one token), so a query's phrase outscores its words scattered over a text.
`SearchIndex.relevant` decides which documents are about a topic (`Relevance`): a score
threshold and the topic's key words, not a count.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from kimmy_swarm.agents.tools.corpus import Document, UnknownDocumentError
from kimmy_swarm.agents.tools.passages import Passage, sentences
from kimmy_swarm.agents.tools.terms import STOPWORDS, stem, tokenize_terms

if TYPE_CHECKING:
    from kimmy_swarm.agents.tools.topicality import Topicality

__all__ = [
    "QUOTED_PHRASE",
    "STOPWORDS",
    "Hit",
    "Relevance",
    "SearchIndex",
    "mentions_any",
    "phrase_pattern",
    "quoted_phrases",
    "search_passages",
    "stem",
    "tokenize_terms",
    "topic_facet_texts",
    "topic_facets",
]

_K1 = 1.5
_B = 0.75


@lru_cache(maxsize=512)
def phrase_pattern(phrase: str) -> re.Pattern[str]:
    """A regex that finds `phrase` as whole words in any case ("agent" does not match
    "agents"); its words may be split by any whitespace (abstracts have line breaks) or a
    hyphen."""
    words = [re.escape(w) for w in phrase.split()]
    return re.compile(r"(?<!\w)" + r"[\s-]+".join(words) + r"(?!\w)", re.IGNORECASE)


def mentions_any(phrases: Sequence[str], texts: Sequence[str]) -> bool:
    """Whether one of `texts` holds one of `phrases` (see `phrase_pattern`)."""
    return any(phrase_pattern(p).search(t) for p in phrases for t in texts)


#: A quoted phrase in a query.
QUOTED_PHRASE = re.compile(r"\"([^\"]+)\"|'([^']+)'")


def quoted_phrases(query: str) -> list[str]:
    """The quoted phrases of a query, e.g. `'GAN' or "generative adversarial"`."""
    return [" ".join((a or b).split()) for a, b in QUOTED_PHRASE.findall(query) if (a or b).strip()]


@dataclass(frozen=True, slots=True)
class Hit:
    """One search result: a document id and its BM25 score (> 0)."""

    doc_id: str
    score: float


@dataclass(frozen=True, slots=True)
class Relevance:
    """When a document counts as relevant to a topic (`SearchIndex.relevant`).

    A topic is read as alternatives ("parsing and encoding text, files and data formats":
    parsing; encoding text; files; data formats — see `topic_facets`). For each, a document
    is relevant when it is *about* it (`agents.tools.topicality`): it names the alternative
    (its phrase, its acronym as the corpus defines it, a name built on that acronym) in its
    title, twice in its text, or once where it speaks of its own work — or its words are as
    dense in the vocabulary of those papers as most of them are. A document that names it
    once in passing ("… which has been shown to improve exploration in reinforcement
    learning") is not relevant on that ground. Where no document names an alternative
    ("graph neural networks" in ICLR 2017), or for one that never names it, BM25 decides
    as below.

    Attributes:
        min_score_ratio: its BM25 score for the alternative is at least this share of the
            best document's score for it. 0.4 by default: on labelled ICLR 2017 topics
            (benchmarks/results/retrieval.md) it keeps every paper that names the topic in
            its title or states it in the abstract, and drops papers that only share its
            common words ("learning" in "reinforcement learning").
        min_coverage: the document contains at least this share of the alternative's key
            words, weighted by their rarity (IDF): with 0.7 a paper on "reinforcement
            learning" must say "reinforcement" ("learning" carries 14% of the weight), one
            on "variational autoencoders" both words. 0 turns the check off.
        unnamed_quantile: a document that never names the alternative is about it when its
            vocabulary density reaches this quantile of the central papers' (0.1: that of
            nine in ten of them). 1 keeps only the densest.
        passing_quantile: the same for a document that names it once in passing (0.25).
        vocabulary_precision: and only at a density above which at least this share of
            the corpus's documents are central (0.85); 1 turns the vocabulary off where any
            non-central document is as dense as the central ones.

    Raises:
        ValueError: a share outside [0, 1].
    """

    min_score_ratio: float = 0.4
    min_coverage: float = 0.7
    unnamed_quantile: float = 0.1
    passing_quantile: float = 0.25
    vocabulary_precision: float = 0.85

    def __post_init__(self) -> None:
        for name in (
            "min_score_ratio",
            "min_coverage",
            "unnamed_quantile",
            "passing_quantile",
            "vocabulary_precision",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"Relevance.{name} must be a number in [0, 1], got {value!r}")
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"Relevance.{name} must be in [0, 1], got {value!r}")


_FACET_SPLIT = re.compile(r"[,;/]|\b(?:and|or)\b", re.IGNORECASE)


def topic_facet_texts(topic: str) -> list[str]:
    """The alternatives of a topic as written, each once (see `topic_facets`)."""
    out: list[str] = []
    seen: list[list[str]] = []
    for part in _FACET_SPLIT.split(topic):
        terms = list(dict.fromkeys(tokenize_terms(part)))
        if terms and terms not in seen:
            seen.append(terms)
            out.append(" ".join(part.split()))
    return out


def topic_facets(topic: str) -> list[list[str]]:
    """The alternatives of a topic, each as its terms: the topic split at commas, semicolons,
    slashes, "and" and "or" ("parsing and encoding text" -> [["pars"], ["encod", "text"]]).
    Parts without a term are dropped; a repeated part is kept once."""
    facets: list[list[str]] = []
    for part in _FACET_SPLIT.split(topic):
        terms = list(dict.fromkeys(tokenize_terms(part)))
        if terms and terms not in facets:
            facets.append(terms)
    return facets


def _with_pairs(terms: list[str]) -> list[str]:
    """`terms` and each pair of adjacent terms as one more token ("reinforcement_learn")."""
    return terms + [f"{a}_{b}" for a, b in pairwise(terms)]


def _check_k(k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
        raise ValueError(f"k must be a positive integer, got {k!r}")


@dataclass(slots=True)
class _Vocabulary:
    """Which terms each document contains, and in how many documents each term occurs."""

    terms: list[frozenset[str]] = field(default_factory=list)
    df: Counter[str] = field(default_factory=Counter)

    def idf(self, term: str) -> float:
        n, df = len(self.terms), self.df[term]
        return math.log(1 + (n - df + 0.5) / (df + 0.5))  # bm25s' default (Lucene) idf

    def coverage(self, i: int, terms: list[str]) -> float:
        """The IDF-weighted share of `terms` that document `i` contains."""
        weights = [self.idf(t) for t in terms]
        total = sum(weights)
        have = sum(w for t, w in zip(terms, weights, strict=True) if t in self.terms[i])
        return have / total if total else 0.0


class SearchIndex:
    """A BM25 index over documents' titles (counted twice) and texts, with term pairs."""

    def __init__(self, documents: Sequence[Document]) -> None:
        """Index `documents`.

        Raises:
            ValueError: two documents share an id.
        """
        import bm25s  # heavy (numpy, scipy); loaded only when an index is built

        self._documents = list(documents)
        self._ids = [d.id for d in documents]
        self._pos = {doc_id: i for i, doc_id in enumerate(self._ids)}
        if len(self._pos) != len(self._ids):
            dup = next(i for i, n in Counter(self._ids).items() if n > 1)
            raise ValueError(f"document id {dup!r} occurs more than once; ids must be unique")
        self._retriever: bm25s.BM25 | None = None
        self._vocab = _Vocabulary()
        self._standing: dict[str, list[Topicality]] = {}  # `topicality`, by facet
        tokens = []
        for d in documents:
            title, text = tokenize_terms(d.title), tokenize_terms(d.text)
            tokens.append(_with_pairs(title) * 2 + _with_pairs(text))
            self._vocab.terms.append(frozenset(title + text))
        self._vocab.df.update(t for terms in self._vocab.terms for t in terms)
        if any(tokens):  # bm25s cannot index a corpus without a single term
            self._retriever = bm25s.BM25()
            self._retriever.index(tokens, show_progress=False)

    def __len__(self) -> int:
        return len(self._ids)

    @property
    def documents(self) -> list[Document]:
        """The indexed documents, in order."""
        return self._documents

    @property
    def document_terms(self) -> list[frozenset[str]]:
        """Each document's terms of title and text (`tokenize_terms`), in order."""
        return self._vocab.terms

    def topicality(self, facet: str) -> list[Topicality]:
        """How each document stands to one facet of a topic (`topicality.topicality`, which
        reads every sentence of the corpus: a second of a review's search), computed once
        per facet and kept: a review searches its topic several times, and its selection
        reads the same standing."""
        found = self._standing.get(facet)
        if found is None:
            from kimmy_swarm.agents.tools.topicality import topicality

            found = topicality(facet, self._documents, self._vocab.terms)
            self._standing[facet] = found  # two threads may both compute it: the same list
        return found

    def _scores(self, terms: list[str]) -> Any:
        """BM25 scores of every document for `terms` and their adjacent pairs (or None)."""
        if self._retriever is None:
            return None
        query = [t for t in _with_pairs(terms) if t in self._retriever.vocab_dict]
        return self._retriever.get_scores(query) if query else None

    def search(
        self, query: str, k: int = 10, *, within: Collection[str] | None = None
    ) -> list[Hit]:
        """The `k` best documents for `query`, best first (ties broken by id).

        Args:
            query: free text; stopwords are ignored.
            k: how many hits at most.
            within: if given, only these document ids are ranked.

        Returns:
            Hits with score > 0 only; [] for an empty query or an empty index.

        Raises:
            ValueError: `k` is not a positive integer.
            UnknownDocumentError: an id in `within` is not in the index.
        """
        _check_k(k)
        if within is not None:
            for doc_id in within:
                if doc_id not in self._pos:
                    raise UnknownDocumentError(doc_id, self._ids)
        scores = self._scores(tokenize_terms(query))
        if scores is None:
            return []
        positions = range(len(self._ids)) if within is None else {self._pos[i] for i in within}
        hits = [Hit(self._ids[i], float(scores[i])) for i in positions if scores[i] > 0]
        hits.sort(key=lambda h: (-h.score, h.doc_id))
        return hits[:k]

    def relevant(self, topic: str, rule: Relevance = Relevance()) -> list[Hit]:
        """Every document relevant to `topic` by `rule` (about one of its alternatives),
        best first by its BM25 score for the whole topic and the acronyms the corpus gives
        it (a document about the topic that never uses its words comes last, by its
        vocabulary density; ties broken by id). A count is not a criterion: cap the list
        after.

        Returns:
            [] for a topic without a term, or when nothing matches.
        """
        from kimmy_swarm.agents.tools.topicality import about, learn_forms

        keep: dict[int, float] = {}
        query: list[str] = []
        for part in topic_facet_texts(topic):
            terms = list(dict.fromkeys(tokenize_terms(part)))
            standing = self.topicality(part)
            chosen = about(
                standing,
                unnamed_quantile=rule.unnamed_quantile,
                passing_quantile=rule.passing_quantile,
                precision=rule.vocabulary_precision,
            )
            for i, ok in enumerate(chosen):
                if ok:
                    keep[i] = max(keep.get(i, 0.0), standing[i].density)
            unnamed = {i for i, s in enumerate(standing) if s.mentions == 0 and not s.title}
            for i in self._bm25_relevant(terms, rule) & unnamed:
                keep.setdefault(i, 0.0)
            query += terms + learn_forms(part, self._documents).terms()
        if not keep:
            return []
        whole = self._scores(list(dict.fromkeys(query)))
        hits = [Hit(self._ids[i], _rank_score(whole, i, density)) for i, density in keep.items()]
        hits.sort(key=lambda h: (-h.score, h.doc_id))
        return hits

    def _bm25_relevant(self, terms: list[str], rule: Relevance) -> set[int]:
        """The documents whose BM25 score for `terms` reaches `rule.min_score_ratio` of the
        best one's and that hold `rule.min_coverage` of the terms' weight."""
        scores = self._scores(terms)
        if scores is None:
            return set()
        floor = max(rule.min_score_ratio * float(scores.max()), 0.0)
        return {
            i
            for i in map(int, (scores > 0).nonzero()[0])
            if scores[i] >= floor and self._vocab.coverage(i, terms) >= rule.min_coverage
        }


def _rank_score(scores: Any, i: int, density: float) -> float:
    """A relevant document's score: its BM25 score, or (for one that never uses the query's
    words) its vocabulary density scaled below any BM25 score, still > 0."""
    bm25 = float(scores[i]) if scores is not None else 0.0
    return bm25 if bm25 > 0 else max(density, 1e-6) * 1e-3


def _bm25(query: list[str], units: list[list[str]]) -> list[float]:
    """Plain BM25 (Lucene idf) of `query` against each unit's terms."""
    n = len(units)
    avg = sum(len(u) for u in units) / n if n else 0.0
    df = Counter(t for u in units for t in set(u))
    scores = []
    for unit in units:
        tf = Counter(unit)
        norm = _K1 * (1 - _B + _B * len(unit) / avg) if avg else _K1
        score = 0.0
        for term in query:
            if tf[term]:
                idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
                score += idf * tf[term] * (_K1 + 1) / (tf[term] + norm)
        scores.append(score)
    return scores


def search_passages(doc: Document, query: str, k: int = 3) -> list[tuple[Passage, float]]:
    """The `k` sentences of `doc` that best match `query` (BM25 over its sentences).

    Sentences longer than 600 characters are cut at whitespace first. Only passages with
    a score > 0 are returned, best first, ties in document order.

    Raises:
        ValueError: `k` is not a positive integer.
    """
    _check_k(k)
    terms = tokenize_terms(query)
    if not terms:
        return []
    passages = sentences(doc, max_chars=600)
    scores = _bm25(terms, [tokenize_terms(p.text) for p in passages])
    ranked = sorted(
        (pair for pair in zip(passages, scores, strict=True) if pair[1] > 0),
        key=lambda pair: (-pair[1], pair[0].start),
    )
    return ranked[:k]
