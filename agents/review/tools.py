"""The literature review's tools, bound to one corpus: search, read, passages, claims, themes.

Both policies use them: a model through function calls, the offline procedures through
`run.call`. Results are plain JSON (what a model would see).
"""

from __future__ import annotations

from typing import Any

from kimmy_swarm.agents.toolbox import ToolBox, make_tool
from kimmy_swarm.agents.tools.claims import check_claim as _check_claim
from kimmy_swarm.agents.tools.corpus import Corpus
from kimmy_swarm.agents.tools.passages import find_exact, sentences
from kimmy_swarm.agents.tools.search import Relevance, SearchIndex, search_passages
from kimmy_swarm.agents.tools.themes import find_themes as _find_themes

#: At most this many characters of a document are returned by `read_document`.
MAX_READ_CHARS = 20_000


def _passage(p: Any, score: float | None = None) -> dict[str, Any]:
    out = {"start": p.start, "end": p.end, "text": p.text}
    if score is not None:
        out["score"] = round(float(score), 4)
    return out


def _count(value: Any) -> int | None:
    """A record's count field ("152", 152) as an int; None when absent or not a count."""
    try:
        return int(value) if value is not None and int(value) >= 0 else None
    except (TypeError, ValueError):
        return None


def build_toolbox(
    corpus: Corpus, index: SearchIndex | None = None, *, relevance: Relevance | None = None
) -> ToolBox:
    """The review tools over `corpus` (an index is built when not given); `search_corpus`
    returns the documents `relevance` accepts (default: `Relevance()`)."""
    idx = index if index is not None else SearchIndex(corpus.documents)
    rule = relevance if relevance is not None else Relevance()

    def search_corpus(query: str, k: int = 10) -> list[dict[str, Any]]:
        """Search the corpus (BM25): the documents relevant to the query, best first, at most
        k, with their scores. Relevant: a score near the best one's and the query's key
        words in the document (a query "a, b and c" matches documents about any of them)."""
        hits = idx.relevant(query, rule)[: max(1, min(k, len(corpus) or 1))]
        out = []
        for h in hits:
            doc = corpus.get(h.doc_id)
            out.append(
                {"doc_id": doc.id, "title": doc.title, "year": doc.year, "score": round(h.score, 4)}
            )
        return out

    def read_document(doc_id: str) -> dict[str, Any]:
        """The title, authors, year, venue, URL, citation count and text of one document."""
        doc = corpus.get(doc_id)
        return {
            "doc_id": doc.id,
            "title": doc.title,
            "authors": list(doc.authors),
            "year": doc.year,
            "venue": doc.venue,
            "url": doc.url,
            "citations": _count(doc.meta.get("citations")),
            "text": doc.text[:MAX_READ_CHARS],
            "length": len(doc.text),
        }

    def document_sentences(doc_id: str) -> list[dict[str, Any]]:
        """The sentences of one document with their character offsets."""
        return [_passage(p) for p in sentences(corpus.get(doc_id))]

    def find_passages(doc_id: str, query: str, k: int = 3) -> list[dict[str, Any]]:
        """The passages of one document that best match a query, with offsets."""
        return [_passage(p, s) for p, s in search_passages(corpus.get(doc_id), query, k=k)]

    def quote(doc_id: str, text: str) -> dict[str, Any] | None:
        """Where `text` occurs word for word in a document (None if it does not)."""
        found = find_exact(corpus.get(doc_id), text)
        return _passage(found) if found is not None else None

    def check_claim(claim: str, doc_id: str) -> dict[str, Any]:
        """Whether a document supports a claim: the best passage, a score, what is missing."""
        support = _check_claim(claim, corpus.get(doc_id))
        return {
            "doc_id": support.doc_id,
            "supported": support.supported,
            "score": round(float(support.score), 4),
            "passage": _passage(support.passage) if support.passage is not None else None,
            "missing": list(support.missing),
        }

    def find_themes(
        doc_ids: list[str], k: int | None = None, exclude_terms: list[str] | None = None
    ) -> list[dict[str, Any]]:
        """Group documents into themes (TF-IDF + clustering), each labelled by the key
        phrases of its documents' titles."""
        docs = [corpus.get(d) for d in doc_ids]
        themes = _find_themes(
            docs, k=k, exclude_terms=exclude_terms or (), background=corpus.documents
        )
        return [
            {"id": t.id, "label": t.label, "terms": list(t.terms), "doc_ids": list(t.doc_ids)}
            for t in themes
        ]

    fns = (
        search_corpus,
        read_document,
        document_sentences,
        find_passages,
        quote,
        check_claim,
        find_themes,
    )
    return ToolBox(make_tool(fn) for fn in fns)


__all__ = ["MAX_READ_CHARS", "build_toolbox"]
