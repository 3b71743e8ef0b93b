"""What the orchestrator's own corpus tools see: the documents' ids and titles, and BM25
search over them (the index the sub-agents' `search_corpus` uses).

The orchestrator searches to decide *what* to fan out over, and fans out over a query, a
list of ids or the whole corpus without decoding the ids itself: the runtime already has
them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from kimmy_swarm.agents.orchestrator.conditions import Condition, as_number, field_text

if TYPE_CHECKING:
    from kimmy_swarm.agents.toolbox import Tool
    from kimmy_swarm.agents.tools.corpus import Corpus
    from kimmy_swarm.agents.tools.search import SearchIndex


#: The most characters of a document's text a fan-out puts in a task's inputs.
DOCUMENT_TEXT_CHARS = 2_500


#: Fields every document has, whatever its metadata (`n_authors`: how many authors).
DOCUMENT_FIELDS = ("title", "authors", "n_authors", "text", "year", "venue", "url")
#: Metadata keys that say where a value came from (`load_corpus`), not what a paper is.
_PROVENANCE = frozenset({"year_from", "venue_from"})


#: Names a person (or a model) gives the text of a document (the table headers a person
#: writes for the other fields are `agents.widesearch.answer.HEADER_ALIASES`).
FIELD_SYNONYMS: dict[str, str] = dict.fromkeys(
    ("abstract", "abstracts", "body", "content", "summary", "full_text"), "text"
)


def _field_id(name: str) -> str:
    return "_".join("".join(c if c.isalnum() else " " for c in name.lower()).split())


class NothingMeetsError(ValueError):
    """No document meets a `where`; the message says the conditions and a hint."""


class UnknownFieldError(ValueError):
    """A condition names a field the corpus's records do not have."""

    def __init__(self, field: str, fields: Sequence[str]) -> None:
        self.field, self.fields = field, list(fields)
        super().__init__(f"unknown field {field!r}; the documents have: {', '.join(fields)}")


@dataclass(frozen=True)
class CorpusView:
    """A run's corpus and its search index, as the orchestrator's tools use them."""

    corpus: Corpus
    index: SearchIndex

    @property
    def ids(self) -> list[str]:
        return list(self.corpus.ids)

    @cached_property
    def fields(self) -> list[str]:
        """The fields conditions may test: `DOCUMENT_FIELDS` and the plain metadata keys of
        the documents (the first 50 read; first-seen order; worked out once)."""
        keys = dict.fromkeys(DOCUMENT_FIELDS)
        for doc in self.corpus.documents[:50]:
            keys.update(dict.fromkeys(k for k in doc.plain_meta() if k not in _PROVENANCE))
        return list(keys)

    def resolve(self, name: str, fields: Sequence[str] | None = None) -> str | None:
        """The field `name` stands for: itself, a field written another way ("Citations",
        "abstract" → text, "OpenReview link" → url), or its plural, singular or count
        ("email" → emails, "citation_count" → citations); None when none is. `fields`:
        the names to resolve among (default: `fields`)."""
        from kimmy_swarm.agents.widesearch.answer import column_id

        known = list(self.fields if fields is None else fields)
        wanted = _field_id(name)
        for candidate in (name, wanted, FIELD_SYNONYMS.get(wanted), column_id(name)):
            if candidate in known:
                return candidate
        # "citation_count" is citations, "email" emails: a count's or a plural's other form
        for form in (wanted, wanted.removesuffix("_count"), wanted.removeprefix("number_of_")):
            for candidate in (form, f"{form}s", form.removesuffix("s")):
                if candidate in known:
                    return candidate
        return None

    def field_hints(self, *, sample: int = 500, choices: int = 6) -> list[str]:
        """Each field of `fields` with what its values look like, for the orchestrator's
        prompt: `decision (one of: Reject, Accept (Poster), …)`, `rating (numbers from 1.5 to
        9.73)`, `emails (lists, e.g. google.com, mit.edu)`; read from `sample` documents
        spread over the corpus, at most `choices` values named."""
        ids = self.ids[:: max(1, len(self.corpus) // sample)]
        out = []
        for name in self.fields:
            if name in ("title", "text"):
                out.append(name)
                continue
            if name == "url":  # what the links look like says what they are
                first = next((u for u in map(self.corpus.get, ids) if u.url), None)
                out.append(f"url (e.g. {first.url})" if first is not None else name)
                continue
            values = [v for v in (self.field_value(d, name) for d in ids) if v not in (None, "")]
            if any(isinstance(v, list) for v in values):
                seen = dict.fromkeys(str(x) for v in values if isinstance(v, list) for x in v)
                out.append(f"{name} (lists, e.g. {', '.join(list(seen)[:2])})")
                continue
            numbers = [n for n in map(as_number, values) if n is not None]
            distinct = list(dict.fromkeys(str(v) for v in values))
            if values and len(numbers) == len(values) and len(distinct) > choices:
                low, high = min(numbers), max(numbers)
                out.append(f"{name} (numbers from {low:g} to {high:g})")
            elif distinct and len(distinct) <= choices:
                out.append(f"{name} (one of: {', '.join(distinct)})")
            else:
                out.append(name)
        return out

    def field_value(self, doc_id: str, field: str) -> Any:
        """The value of `field` in the record of `doc_id` (None where it has none)."""
        doc = self.corpus.get(doc_id)
        if field in ("n_authors", "authors"):
            from kimmy_swarm.agents.tools.authors import parse_authors

            authors = parse_authors(list(doc.authors))
            return len(authors) if field == "n_authors" else list(authors)
        if field in ("title", "text", "url", "year", "venue"):
            return getattr(doc, field)
        return doc.plain_meta().get(field)

    def where(self, ids: Sequence[str], conditions: Sequence[Condition]) -> list[str]:
        """The ids among `ids` whose records meet every condition, in order.

        Raises:
            UnknownFieldError: a condition names a field the records do not have.
        """
        fields = self.fields
        resolved = []
        for condition in conditions:
            field = self.resolve(condition.field, fields)
            if field is None:
                raise UnknownFieldError(condition.field, fields)
            resolved.append(condition.model_copy(update={"field": field}))
        conditions = resolved
        return [d for d in ids
                if all(c.holds(self.field_value(d, c.field)) for c in conditions)]  # fmt: skip

    def select(self, ids: Sequence[str], where: Sequence[Condition]) -> tuple[list[str], list[str]]:
        """The ids among `ids` that meet `where`, and how conditions were read. A `contains`
        condition that no document meets in its field, whose value one other field alone
        holds ("authors contains 'google.com'": the domains are in emails), is read on that
        field, and the second list says so: a small model names the wrong field more often
        than it means a condition nothing meets.

        Raises:
            UnknownFieldError: a condition names a field the records do not have.
            NothingMeetsError: no document meets `where` (the message says why).
        """
        if not where:
            return list(ids), []
        given, asked = list(ids), list(where)
        ids, where, notes = self._either_mentions(given, asked)
        kept = self.where(ids, where)
        if kept:
            return kept, notes
        fixed = []
        for condition in where:
            if condition.op == "contains" and not self.where(ids, [condition]):
                holders = self.fields_holding(condition, ids)
                if len(holders) == 1:
                    read = condition.model_copy(update={"field": holders[0][0]})
                    notes.append(f"{condition.words()} read as {read.words()}")
                    condition = read
            fixed.append(condition)
        kept = self.where(ids, fixed) if fixed != where else []
        if not kept:
            raise NothingMeetsError(self._nothing_meets(given, asked))
        return kept, notes

    def _either_mentions(
        self, ids: Sequence[str], where: Sequence[Condition]
    ) -> tuple[list[str], list[Condition], list[str]]:
        """`title contains v` and `text contains v` together are a small model's way of
        writing "the title or the abstract mentions v" (both must hold, else): they are read
        as that — the documents whose title or text mentions v (whole words, as a quoted
        query) — and the notes say so. Returns the ids kept, the other conditions, notes."""
        from kimmy_swarm.agents.tools.search import mentions_any

        on: dict[str, set[str]] = {}
        for c in where:
            if c.op == "contains" and self.resolve(c.field) in ("title", "text"):
                on.setdefault(str(c.value).lower(), set()).add(str(self.resolve(c.field)))
        both = {value for value, fields in on.items() if fields == {"title", "text"}}
        if not both:
            return list(ids), list(where), []
        merged = [c for c in where if c.op == "contains" and str(c.value).lower() in both
                  and self.resolve(c.field) in ("title", "text")]  # fmt: skip
        rest = [c for c in where if c not in merged]
        kept = [d for d in ids
                if all(mentions_any([v], (self.corpus.get(d).title, self.corpus.get(d).text))
                       for v in both)]  # fmt: skip
        notes = [f"title contains {v!r} and text contains {v!r} read as: the title or the "
                 f"text mentions {v!r}" for v in sorted(both)]  # fmt: skip
        return kept, rest, notes

    def _nothing_meets(self, ids: Sequence[str], where: Sequence[Condition]) -> str:
        """Why a `where` kept nothing: the conditions, and for each one no document meets
        alone, the fields that hold its value or the values its field has."""
        said = "; ".join(c.words() for c in where)
        hints = [self.where_else(c, ids) for c in where if not self.where(ids, [c])]
        hint = "; ".join(h for h in hints if h)
        return f"no document meets where ({said})" + (
            f": {hint}" if hint else ": search shows what matches"
        )

    def where_else(self, condition: Condition, ids: Sequence[str]) -> str:
        """For a condition no document among `ids` meets: the fields whose values do hold its
        value (`'google.com' is in emails (66 documents)`); else the values of its own field
        when they are few (`decision is one of: Accept (Oral), …`); else ""."""
        field = self.resolve(condition.field) or condition.field  # "abstract": text
        values = [self.field_value(d, field) for d in ids]
        if condition.op not in ("contains", "==", "!="):  # an order: say the range
            numbers = [n for n in map(as_number, values) if n is not None]
            return (
                f"{condition.field} ranges from {min(numbers):g} to {max(numbers):g}"
                if numbers
                else ""
            )
        # a list field's values are its items ("gmail.com", not "gmail.com, gmail.com")
        own = {field_text(item) for v in values
               for item in (v if isinstance(v, list | tuple) else [v])}  # fmt: skip
        own_values = f"{condition.field} is one of: {', '.join(sorted(own))}"
        if condition.op != "contains":
            return own_values if 0 < len(own) <= 6 else ""
        found = self.fields_holding(condition, ids)
        if not found:
            return own_values if 0 < len(own) <= 6 else ""
        shown = ", ".join(f"{name} ({count} documents)" for name, count in found[:3])
        return f"{condition.value!r} is in {shown}"

    def fields_holding(self, condition: Condition, ids: Sequence[str]) -> list[tuple[str, int]]:
        """The other fields for which `condition` holds on some of `ids`, with how many,
        most first (where a `contains` value really is: 'google.com' in emails)."""
        own = self.resolve(condition.field) or condition.field
        found = []
        for name in self.fields:
            if name == own:
                continue
            probe = condition.model_copy(update={"field": name})
            count = sum(probe.holds(self.field_value(d, name)) for d in ids)
            if count:
                found.append((name, count))
        return sorted(found, key=lambda pair: -pair[1])

    def matching(self, query: str) -> list[str]:
        """Every document whose BM25 score for `query` is above 0, best first (an empty
        query: every document, in corpus order); when the query quotes phrases ('GAN' or
        "generative adversarial"), only the documents whose title or text holds one of them
        (whole words, any case)."""
        from kimmy_swarm.agents.tools.search import mentions_any, quoted_phrases

        if not query.strip():
            return self.ids
        hits = [h.doc_id for h in self.index.search(query, k=max(1, len(self.corpus)))]
        phrases = quoted_phrases(query)
        if not phrases:
            return hits
        return [d for d in hits if mentions_any(phrases, (self.corpus.get(d).title,
                                                          self.corpus.get(d).text))]  # fmt: skip

    def search(self, query: str, limit: int, where: Sequence[Condition] = ()) -> dict[str, Any]:
        """The `search` tool's answer: how many documents match `query` and meet `where`
        (read as `select` reads it), and the best `limit` of them with their titles; when
        none meets `where`, why (`note`).

        Raises:
            UnknownFieldError: a condition names a field the records do not have.
        """
        found, read_as, note = self.matching(query), [], None
        if where:
            try:
                found, read_as = self.select(found, where)
            except NothingMeetsError as exc:
                found, note = [], str(exc)
        answer: dict[str, Any] = {"query": query, "matches": len(found),
                                  "shown": self.titles(found[:limit])}  # fmt: skip
        if where:
            answer["where"] = [c.words() for c in where]
        if read_as:
            answer["read_as"] = read_as
        if note:
            answer["note"] = note
        return answer

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
            lines += [f"{k}: {field_text(v)}" for k, v in record.items() if k not in shown]
            lines.append(f"text: {record['text']}")
            if "text_cut" in record:
                lines.append(f"(text cut: {record['text_cut']})")
            blocks.append("\n".join(lines))
        return "\n\n".join(blocks)

    @cached_property
    def title_keys(self) -> frozenset[str]:
        """Every document's title as `title_key` (how a table's rows are matched)."""
        from kimmy_swarm.agents.widesearch.answer import title_key

        return frozenset(title_key(d.title) for d in self.corpus.documents)

    def titles(self, ids: Sequence[str]) -> list[dict[str, str]]:
        """The documents `ids` as {"id", "title"} (what a task's inputs name them by)."""
        return [{"id": d, "title": self.corpus.get(d).title} for d in ids]

    def cells(self, ids: Sequence[str], columns: Sequence[str]) -> list[dict[str, Any]]:
        """The documents `ids` as {"id", "title", column: value …}: the values of the
        `columns` that are fields of the records (`agents.widesearch.COLUMN_MEANINGS`; the
        others are left to the sub-agent), as the answer table shows them."""
        from kimmy_swarm.agents.widesearch.task import COLUMN_MEANINGS, Paper, column_value

        # a column named another way ("OpenReview link") is the field it names (url)
        names = list(COLUMN_MEANINGS)
        known = {c: field for c in columns if (field := self.resolve(c, names)) is not None}
        out = []
        for doc_id in ids:
            doc = self.corpus.get(doc_id)
            paper = Paper.from_document(doc)
            out.append({"id": doc.id, "title": doc.title,
                        **{c: column_value(paper, f) for c, f in known.items()}})  # fmt: skip
        return out

    def unknown(self, ids: Sequence[str]) -> list[str]:
        """The ids in `ids` that are not documents of the corpus."""
        known = set(self.corpus.ids)
        return [d for d in ids if d not in known]


def search_tool(view: CorpusView) -> Tool:
    """`search(query, where, limit)` over `view` as a tool an agent may be given (the
    orchestrator's `search`, the same arguments, for an agent that searches and reads by
    itself)."""
    from kimmy_swarm.agents.orchestrator.tools import Search
    from kimmy_swarm.agents.toolbox import Tool, ToolError

    def search(query: str, where: list[Condition], limit: int) -> dict[str, Any]:
        try:
            return view.search(query, limit, where)
        except UnknownFieldError as exc:
            raise ToolError(str(exc)) from None

    return Tool("search", " ".join((Search.__doc__ or "").split()), Search, search)


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


__all__ = [
    "DOCUMENT_FIELDS",
    "DOCUMENT_TEXT_CHARS",
    "FIELD_SYNONYMS",
    "CorpusView",
    "NothingMeetsError",
    "UnknownFieldError",
    "chunks",
    "search_tool",
]
