"""BM25 search over a corpus (bm25s) and over the sentences of one document.

`tokenize_terms` is the one tokenizer shared with `claims` and `themes`, so a term that
matches in search also counts as the same term when a claim is checked.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from agents.tools.corpus import Document, UnknownDocumentError
from agents.tools.passages import Passage, sentences

__all__ = ["STOPWORDS", "Hit", "SearchIndex", "search_passages", "stem", "tokenize_terms"]

# English function words (the NLTK list, plus a few words that carry no topic in abstracts).
_STOPWORD_TEXT = """
    a about above after again against ain all also am an and any are aren as at be because
    been before being below between both but by can could couldn d did didn do does doesn
    doing don down during each et al few for from further had hadn has hasn have haven having
    he her here hers herself him himself his how however i if in into is isn it its itself
    just ll m ma may me might mightn more most must mustn my myself needn no nor not now o of
    off on once only or other our ours ourselves out over own re s same shall shan she should
    shouldn so some such t than that the their theirs them themselves then there therefore
    these they this those through thus to too under until up upon us ve very via was wasn we
    were weren what when where which while who whom why will with won would wouldn y you your
    yours yourself yourselves
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())
_WORD = re.compile(r"[^\W_]+")
_K1 = 1.5
_B = 0.75


def stem(word: str) -> str:
    """Light suffix stripping: plurals, -ing, -ed, -ly and a final -e ("models" -> "model",
    "trained" -> "train", "images" -> "imag"). Crude but consistent, which is what matching
    needs; numbers and short words are left alone."""
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("sses"):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if word.endswith("ing") and len(word) >= 7:
        word = word[:-3]
    elif word.endswith(("ed", "ly")) and len(word) >= 6:
        word = word[:-2]
    if word.endswith("e") and len(word) >= 5:
        word = word[:-1]
    return word


def tokenize_terms(text: str) -> list[str]:
    """Lower-case word terms of `text`, without stopwords and single letters, stemmed."""
    out = []
    for word in _WORD.findall(text.lower()):
        if word in STOPWORDS or (len(word) == 1 and not word.isdigit()):
            continue
        out.append(stem(word))
    return out


@dataclass(frozen=True, slots=True)
class Hit:
    """One search result: a document id and its BM25 score (> 0)."""

    doc_id: str
    score: float


def _check_k(k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
        raise ValueError(f"k must be a positive integer, got {k!r}")


class SearchIndex:
    """A BM25 index over documents' titles (counted twice) and texts."""

    def __init__(self, documents: Sequence[Document]) -> None:
        """Index `documents`.

        Raises:
            ValueError: two documents share an id.
        """
        import bm25s  # heavy (numpy, scipy); loaded only when an index is built

        self._ids = [d.id for d in documents]
        self._pos = {doc_id: i for i, doc_id in enumerate(self._ids)}
        if len(self._pos) != len(self._ids):
            dup = next(i for i, n in Counter(self._ids).items() if n > 1)
            raise ValueError(f"document id {dup!r} occurs more than once; ids must be unique")
        self._retriever: bm25s.BM25 | None = None
        tokens = [tokenize_terms(d.title) * 2 + tokenize_terms(d.text) for d in documents]
        if any(tokens):  # bm25s cannot index a corpus without a single term
            self._retriever = bm25s.BM25()
            self._retriever.index(tokens, show_progress=False)

    def __len__(self) -> int:
        return len(self._ids)

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
        if self._retriever is None:
            return []
        terms = [t for t in tokenize_terms(query) if t in self._retriever.vocab_dict]
        if not terms:
            return []
        scores = self._retriever.get_scores(terms)
        positions = range(len(self._ids)) if within is None else {self._pos[i] for i in within}
        hits = [Hit(self._ids[i], float(scores[i])) for i in positions if scores[i] > 0]
        hits.sort(key=lambda h: (-h.score, h.doc_id))
        return hits[:k]


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
