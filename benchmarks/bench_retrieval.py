"""Retrieval quality of the literature review: precision and recall on labelled ICLR topics.

    python benchmarks/bench_retrieval.py [--corpus ../shared/data/papers/...json] [--json]
                                         [--out PATH]

The labels (`tests/support/topic_labels.py`) mark a paper relevant to a topic when its title
or abstract uses one of the topic's key phrases or synonyms ("policy gradient",
"Q-learning", ... for reinforcement learning), unless a reader found it mentions the topic
only in passing, and when a reader found it about the topic without them. For each topic
three retrievals are scored
against them, all in the same run over the same corpus:

- keyword: the papers that contain the topic phrase itself (the baseline to match);
- top-200: the 200 best hits of a BM25 index over words only, all called relevant (a cut by
  count, the baseline of a cut by score);
- threshold: `SearchIndex.relevant` with the default `Relevance` (the review's relevant set).

Each retrieval is also scored on the ten most-cited labelled papers of a topic (the
record's `citations`): how many it returns, and its recall weighted by their citations
(issue 37: a review must not leave out the papers the field reads most).

Goal: precision >= 0.9 at the recall the keyword search gets. Prints the table;
`--out benchmarks/results/retrieval.md` writes the committed page; `--json` prints the
figures as one object instead of the table.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# Run as a script: `tests.support.topic_labels` imports from the repository root.
if not __package__ and str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))  # last: the repository's folders shadow no installed package

from benchmarks._results import add_out_option, publish  # noqa: E402
from kimmy_swarm.agents.tools.corpus import load_corpus  # noqa: E402
from kimmy_swarm.agents.tools.search import Relevance, SearchIndex, tokenize_terms  # noqa: E402
from tests.support.topic_labels import TOPICS, keyword_matches, labelled  # noqa: E402

ICLR = ROOT.parent / "shared" / "data" / "papers" / "iclr2017_citations_in_2018.json"
OLD_CAP = 200
#: How many of a topic's most-cited labelled papers the citation-weighted recall counts.
TOP_CITED = 10


def _citations(doc: Any) -> int:
    value = doc.meta.get("citations")
    return value if isinstance(value, int) and value >= 0 else 0


def most_cited(relevant: set[str], corpus: Any, k: int = TOP_CITED) -> dict[str, int]:
    """The `k` most-cited labelled papers (ties by id) with their citation counts."""
    ranked = sorted(relevant, key=lambda i: (-_citations(corpus.get(i)), i))[:k]
    return {i: _citations(corpus.get(i)) for i in ranked}


def _score(got: set[str], relevant: set[str], cited: dict[str, int]) -> dict[str, Any]:
    hit = len(got & relevant)
    total = sum(cited.values())
    return {
        "n": len(got),
        "precision": hit / len(got) if got else None,
        "recall": hit / len(relevant) if relevant else None,
        "top_cited": len(got & cited.keys()),
        "top_cited_of": len(cited),
        "cited_recall": sum(c for i, c in cited.items() if i in got) / total if total else None,
    }


def _old_top(documents: list[Any], k: int) -> Any:
    """A cut by count: the `k` best hits of a BM25 index over words only (titles twice, no
    word pairs, unlike `SearchIndex`); a function of the query."""
    import bm25s

    retriever = bm25s.BM25()
    tokens = [tokenize_terms(d.title) * 2 + tokenize_terms(d.text) for d in documents]
    retriever.index(tokens, show_progress=False)

    def top(query: str) -> set[str]:
        terms = [t for t in tokenize_terms(query) if t in retriever.vocab_dict]
        scores = retriever.get_scores(terms)
        ranked = sorted(
            (i for i in range(len(documents)) if scores[i] > 0),
            key=lambda i: (-scores[i], documents[i].id),
        )
        return {documents[i].id for i in ranked[:k]}

    return top


def measure(corpus_path: Path) -> dict[str, Any]:
    """Per topic: the labelled count and the scores of the three retrievals."""
    corpus = load_corpus(corpus_path)
    t0 = time.perf_counter()
    index = SearchIndex(corpus.documents)
    built = time.perf_counter() - t0
    rule = Relevance()
    old_top = _old_top(corpus.documents, OLD_CAP)
    topics = []
    for topic in TOPICS:
        relevant = labelled(topic, corpus.documents)
        cited = most_cited(relevant, corpus)
        t1 = time.perf_counter()
        threshold = {h.doc_id for h in index.relevant(topic.topic, rule)}
        took = time.perf_counter() - t1
        topics.append(
            {
                "topic": topic.topic,
                "labelled": len(relevant),
                "keyword": _score(keyword_matches(topic, corpus.documents), relevant, cited),
                "top200": _score(old_top(topic.topic), relevant, cited),
                "threshold": _score(threshold, relevant, cited),
                "threshold_ms": round(took * 1000, 1),
            }
        )
    return {
        "corpus": corpus_path.name,
        "documents": len(corpus),
        "index_s": round(built, 2),
        "relevance": dataclasses.asdict(rule),
        "topics": topics,
    }


def _cell(score: dict[str, Any]) -> str:
    def f(x: float | None) -> str:
        return "—" if x is None else f"{x:.2f}"

    return f"{f(score['precision'])} / {f(score['recall'])} ({score['n']})"


def _cited_cell(score: dict[str, Any]) -> str:
    weighted = "—" if score["cited_recall"] is None else f"{score['cited_recall']:.2f}"
    return f"{weighted} ({score['top_cited']}/{score['top_cited_of']})"


def table(result: dict[str, Any]) -> str:
    """The Markdown report."""
    rel = result["relevance"]
    lines = [
        "# Retrieval: the review's relevant papers against labelled topics",
        "",
        f"Corpus: {result['corpus']} ({result['documents']} documents; BM25 index built in "
        f"{result['index_s']} s). Labels: `tests/support/topic_labels.py` (what a paper is "
        "about: key phrases and synonyms in title or abstract, less the papers a reader found "
        "to mention the topic only in passing, plus those found about it without its phrases; "
        "judged by hand on the papers any retrieval returned). Each cell: precision / recall "
        "(documents returned).",
        "",
        "- keyword: papers that contain the topic phrase itself (the baseline);",
        f"- top-{OLD_CAP}: a cut by count — the {OLD_CAP} best BM25 hits over words only, all "
        "called relevant;",
        "- threshold: `SearchIndex.relevant` with `Relevance("
        + ", ".join(f"{k}={v}" for k, v in rel.items())
        + ")`, the review's default: papers about the topic (named in the title, twice, or "
        "where the paper speaks of its own work, or dense in the vocabulary of those that "
        "do), not those that mention it in passing.",
        "",
        f"| topic | labelled | keyword | top-{OLD_CAP} | threshold |",
        "|---|---:|---:|---:|---:|",
    ]
    for t in result["topics"]:
        lines.append(
            f"| {t['topic']} | {t['labelled']} | {_cell(t['keyword'])} | {_cell(t['top200'])} "
            f"| {_cell(t['threshold'])} |"
        )
    met = [
        t["topic"]
        for t in result["topics"]
        if t["threshold"]["precision"] is not None
        and t["threshold"]["precision"] >= 0.9
        and (t["threshold"]["recall"] or 0) >= (t["keyword"]["recall"] or 0)
    ]
    lines += [
        "",
        f"The {TOP_CITED} most-cited labelled papers of each topic (by the records' "
        "citations): citation-weighted recall (papers returned of them).",
        "",
        f"| topic | keyword | top-{OLD_CAP} | threshold |",
        "|---|---:|---:|---:|",
    ]
    for t in result["topics"]:
        lines.append(
            f"| {t['topic']} | {_cited_cell(t['keyword'])} | {_cited_cell(t['top200'])} "
            f"| {_cited_cell(t['threshold'])} |"
        )
    lines += [
        "",
        f"Goal (precision >= 0.9 at the keyword search's recall or better): met for "
        f"{len(met)} of {len(result['topics'])} topics ({', '.join(met)}).",
        "",
        "Command: `python benchmarks/bench_retrieval.py`",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=ICLR)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    add_out_option(parser, "retrieval.md")
    args = parser.parse_args()
    if not args.corpus.exists():
        raise SystemExit(f"corpus {str(args.corpus)!r} not found; pass --corpus")
    result = measure(args.corpus)
    publish(table(result), args.out, echo=not args.json)
    if args.json:
        print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
