"""What the orchestrator's own corpus tools see: the documents' ids and titles, and BM25
search over them (the index the sub-agents' `search_corpus` uses).

The orchestrator searches to decide *what* to fan out over, and fans out over a query, a
list of ids or the whole corpus without decoding the ids itself: the runtime already has
them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kimmy_swarm.agents.toolbox import Tool
    from kimmy_swarm.agents.tools.corpus import Corpus
    from kimmy_swarm.agents.tools.search import SearchIndex


#: The most characters of a document's text a fan-out puts in a task's inputs.
DOCUMENT_TEXT_CHARS = 2_500


def _field_text(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return str(value)


@dataclass(frozen=True)
class CorpusView:
    """A run's corpus and its search index, as the orchestrator's tools use them."""

    corpus: Corpus
    index: SearchIndex

    @property
    def ids(self) -> list[str]:
        return list(self.corpus.ids)

    def matching(self, query: str) -> list[str]:
        """Every document whose BM25 score for `query` is above 0, best first; when the
        query quotes phrases ('GAN' or "generative adversarial"), only the documents whose
        title or text holds one of them (whole words, any case)."""
        from kimmy_swarm.agents.tools.search import mentions_any, quoted_phrases

        hits = [h.doc_id for h in self.index.search(query, k=max(1, len(self.corpus)))]
        phrases = quoted_phrases(query)
        if not phrases:
            return hits
        return [d for d in hits if mentions_any(phrases, (self.corpus.get(d).title,
                                                          self.corpus.get(d).text))]  # fmt: skip

    def search(self, query: str, limit: int) -> dict[str, Any]:
        """The `search` tool's answer: how many documents match, and the best `limit` of
        them with their titles."""
        found = self.matching(query)
        shown = [{"id": d, "title": self.corpus.get(d).title} for d in found[:limit]]
        return {"query": query, "matches": len(found), "shown": shown}

    def records(self, ids: Sequence[str], *, max_text_chars: int = DOCUMENT_TEXT_CHARS
                ) -> list[dict[str, Any]]:  # fmt: skip
        """The documents `ids` as a sub-agent's inputs show them: id, title, authors, text
        (cut at `max_text_chars`, saying so) and their plain metadata fields."""
        out = []
        for doc_id in ids:
            doc = self.corpus.get(doc_id)
            text = " ".join(doc.text.split())
            record: dict[str, Any] = {"id": doc.id, "title": doc.title,
                                      "authors": list(doc.authors)}  # fmt: skip
            if len(text) > max_text_chars:
                record["text"] = text[:max_text_chars]
                record["text_cut"] = f"{len(text) - max_text_chars} more characters: read_document"
            else:
                record["text"] = text
            record.update(doc.plain_meta())
            out.append(record)
        return out

    def as_text(self, ids: Sequence[str], *, max_text_chars: int = DOCUMENT_TEXT_CHARS) -> str:
        """The documents `ids` as a task shows them to a sub-agent: one block each, its
        fields one a line (a small model reads these better than a JSON blob)."""
        blocks = []
        records = self.records(ids, max_text_chars=max_text_chars)
        for number, record in enumerate(records, start=1):
            lines = [f"Document {number} of {len(records)} (id {record['id']})",
                     f"title: {record['title']}"]  # fmt: skip
            if record.get("authors"):
                lines.append("authors: " + ", ".join(record["authors"]))
            shown = {"id", "title", "authors", "text", "text_cut"}
            # One field a line: a value is then the rest of its line, which a small model
            # copies without the neighbours' values.
            lines += [f"{k}: {_field_text(v)}" for k, v in record.items() if k not in shown]
            lines.append(f"text: {record['text']}")
            if "text_cut" in record:
                lines.append(f"(text cut: {record['text_cut']})")
            blocks.append("\n".join(lines))
        return "\n\n".join(blocks)

    def titles(self, ids: Sequence[str]) -> list[dict[str, str]]:
        """The documents `ids` as {"id", "title"} (what a task's inputs name them by)."""
        return [{"id": d, "title": self.corpus.get(d).title} for d in ids]

    def cells(self, ids: Sequence[str], columns: Sequence[str]) -> list[dict[str, Any]]:
        """The documents `ids` as {"id", "title", column: value …}: the values of the
        `columns` that are fields of the records (`agents.widesearch.COLUMN_MEANINGS`; the
        others are left to the sub-agent), as the answer table shows them."""
        from kimmy_swarm.agents.widesearch.task import COLUMN_MEANINGS, Paper, column_value

        known = [c for c in columns if c in COLUMN_MEANINGS]
        out = []
        for doc_id in ids:
            doc = self.corpus.get(doc_id)
            paper = Paper.from_document(doc)
            out.append({"id": doc.id, "title": doc.title,
                        **{c: column_value(paper, c) for c in known}})  # fmt: skip
        return out

    def unknown(self, ids: Sequence[str]) -> list[str]:
        """The ids in `ids` that are not documents of the corpus."""
        known = set(self.corpus.ids)
        return [d for d in ids if d not in known]


def search_tool(view: CorpusView) -> Tool:
    """`search(query, limit)` over `view` as a tool an agent may be given (the orchestrator's
    `search`, for an agent that searches and reads by itself)."""
    from kimmy_swarm.agents.toolbox import make_tool

    def search(query: str, limit: int = 10) -> dict[str, Any]:
        """Search the corpus (BM25 over titles and abstracts): how many documents match and
        the best ones' ids and titles. Quoted phrases keep only the documents that hold one
        of them ('GAN' or 'GANs')."""
        return view.search(query, max(1, min(int(limit), 100)))

    return make_tool(search)


def chunks(ids: Sequence[str], *, per_task: int | None, tasks: int | None) -> list[list[str]]:
    """`ids` cut into consecutive parts: `tasks` parts as even as can be, else parts of
    `per_task` ids (the last may be shorter)."""
    items = list(ids)
    if not items:
        return []
    if tasks is not None:
        n = max(1, min(tasks, len(items)))
        size, extra = divmod(len(items), n)
        out, start = [], 0
        for i in range(n):
            end = start + size + (i < extra)
            out.append(items[start:end])
            start = end
        return out
    size = max(1, per_task or 1)
    return [items[i : i + size] for i in range(0, len(items), size)]


__all__ = ["DOCUMENT_TEXT_CHARS", "CorpusView", "chunks", "search_tool"]
