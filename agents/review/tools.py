"""The literature review's tools, bound to one corpus: search, read, passages, claims, themes.

Both policies use them: a model through function calls, the offline procedures through
`run.call`. Results are plain JSON (what a model would see).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from kimmy_swarm.agents.review._selection import named_in_passing
from kimmy_swarm.agents.review._sentence_roles import SentenceRole, classify
from kimmy_swarm.agents.review._venue import standing_of
from kimmy_swarm.agents.toolbox import ToolBox, make_tool
from kimmy_swarm.agents.tools.claims import check_claim as _check_claim
from kimmy_swarm.agents.tools.corpus import Corpus, Document
from kimmy_swarm.agents.tools.passages import find_exact, sentences
from kimmy_swarm.agents.tools.research_lines import research_lines
from kimmy_swarm.agents.tools.search import (
    Relevance,
    SearchIndex,
    search_passages,
    tokenize_terms,
)
from kimmy_swarm.agents.tools.topicality import learn_forms

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


def focus_sentences(doc: Document) -> list[str]:
    """The sentences of a paper that state its problem and contribution: its contribution
    sentences (two at most), else its first sentence of method or result."""
    picked = role_sentences(doc, "contribution")[:2]
    return picked or role_sentences(doc, "method", "result")[:1]


def role_sentences(doc: Document, *roles: SentenceRole) -> list[str]:
    """The sentences of a paper of the given roles (`_sentence_roles`), in order: its
    claims are its "contribution" and "result" sentences, its method its "method" ones."""
    return [r.text for r in classify([p.text for p in sentences(doc)]) if r.role in roles]


def _topic_noun(topic: str | None, acronyms: Sequence[str]) -> str:
    """How a theme name completes an adjective with the topic: its acronym, plural when
    the topic is ("energy-based GANs", "model-free RL"), else the topic as written."""
    if not topic:
        return ""
    if not acronyms:
        return topic
    return acronyms[0] + ("s" if topic.rstrip().endswith("s") else "")


def build_toolbox(
    corpus: Corpus, index: SearchIndex | None = None, *, relevance: Relevance | None = None
) -> ToolBox:
    """The review tools over `corpus` (an index is built when not given); `search_corpus`
    returns the documents `relevance` accepts (default: `Relevance()`)."""
    idx = index if index is not None else SearchIndex(corpus.documents)
    rule = relevance if relevance is not None else Relevance()

    @functools.lru_cache(maxsize=32)
    def in_passing(query: str, doc_ids: tuple[str, ...]) -> frozenset[str]:
        """The papers of `doc_ids` that name `query` only in passing (`_selection`)."""
        papers = [corpus.get(d) for d in doc_ids]
        quantile = rule.unnamed_quantile
        return frozenset(named_in_passing(query, idx, papers, unnamed_quantile=quantile))

    def search_corpus(query: str, k: int = 10) -> list[dict[str, Any]]:
        """Search the corpus: the documents about the query, best match first, at most k,
        with their authors, scores, citation counts and standing (accepted, workshop,
        rejected, …).
        About: the query named in the title or where the paper speaks of its own work, or
        its vocabulary dense in the text — not a passing mention (a query "a, b and c"
        matches documents about any of them). `in_passing`: only the paper's background
        names the query, or as what the paper compares with (a review leaves it out)."""
        hits = idx.relevant(query, rule)[: max(1, min(k, len(corpus) or 1))]
        docs = [corpus.get(h.doc_id) for h in hits]
        passing = in_passing(query, tuple(d.id for d in docs))
        out = []
        for h, doc in zip(hits, docs, strict=True):
            out.append(
                {
                    "doc_id": doc.id,
                    "title": doc.title,
                    "authors": list(doc.authors),
                    "year": doc.year,
                    "score": round(h.score, 4),
                    "citations": _count(doc.meta.get("citations")),
                    "status": standing_of(doc.meta),
                    "in_passing": doc.id in passing,
                }
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
            # accepted, workshop, rejected, withdrawn, or "" (the record has no decision)
            "status": standing_of(doc.meta),
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
            "polarity": list(support.polarity),
        }

    def find_themes(
        doc_ids: list[str],
        k: int | None = None,
        exclude_terms: list[str] | None = None,
        topic: str | None = None,
    ) -> list[dict[str, Any]]:
        """Group documents into lines of research: by the problem and method phrases of
        their titles and contribution sentences, each theme named by one that most of its
        papers carry ("other work" for those none names). `topic` (the review's) keeps its
        words and acronyms out of the names."""
        docs = [corpus.get(d) for d in doc_ids]
        forms = learn_forms(topic, corpus.documents) if topic else None
        acronyms = [a.lower() for a in forms.acronyms] if forms else []
        themes = research_lines(
            docs,
            focus={d.id: focus_sentences(d) for d in docs},
            claims={d.id: role_sentences(d, "contribution", "result") for d in docs},
            methods={d.id: role_sentences(d, "method") for d in docs},
            k=k,
            exclude_terms=[*(exclude_terms or ()), *tokenize_terms(topic or ""), *acronyms],
            background=corpus.documents,
            topic_noun=_topic_noun(topic, forms.acronyms if forms else ()),
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
