"""Sentences, passages and quotes of a document, always with exact character offsets.

Every `Passage` satisfies `doc.text[p.start:p.end] == p.text`, so a sub-agent's quote can
be checked, cited and shown in context without guessing where it came from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kimmy_swarm.agents.tools.corpus import Document
from kimmy_swarm.swarm.errors import UserError

__all__ = [
    "Passage",
    "PassageBoundsError",
    "find_exact",
    "read_passage",
    "sentences",
    "split_passages",
]

# A sentence may end at . ! or ? (plus closing quotes/brackets) followed by whitespace and
# then something that can start a sentence: an upper-case letter, a digit, an opening quote
# or bracket. A lower-case next word ("e.g. the", "3.5 and") never starts one.
_END = re.compile(r"[.!?]+[\"'”’)\]]*(?=\s+[\"'“‘(\[A-Z0-9])")
_BLANK = re.compile(r"\n[ \t]*\n")
_HEADING = re.compile(r"[ \t]{0,3}#{1,6}[ \t]")
_LIST_ITEM = re.compile(r"[ \t]*(?:[-*+]|\d{1,3}[.)])[ \t]+\S")
# Tokens that end with a period without ending a sentence (compared lower-case, no final dot).
_ABBREVIATION_TEXT = (
    "e.g i.e al cf vs viz approx resp w.r.t wrt incl ca dr mr mrs ms prof jr sr st u.s u.k a.k.a"
)
_ABBREVIATIONS = frozenset(_ABBREVIATION_TEXT.split())
# Abbreviations that only bind to a following number ("Fig. 3", "No. 5", "pp. 12").
_BEFORE_NUMBER_TEXT = "no nos vol pp p fig figs eq eqs sec secs tab ch thm ref refs"
_BEFORE_NUMBER = frozenset(_BEFORE_NUMBER_TEXT.split())
_QUOTE_CHARS = {
    "'": "['‘’]",
    "‘": "['‘’]",
    "’": "['‘’]",
    '"': '["“”]',
    "“": '["“”]',
    "”": '["“”]',
    "-": "[-‐‑–—]",
    "–": "[-‐‑–—]",
    "—": "[-‐‑–—]",
}


class PassageBoundsError(UserError, ValueError):
    """`read_passage` was given offsets outside the document."""


@dataclass(frozen=True, slots=True)
class Passage:
    """A span of one document: `text == doc.text[start:end]`."""

    doc_id: str
    start: int
    end: int
    text: str


def _passage(doc: Document, start: int, end: int) -> Passage:
    return Passage(doc.id, start, end, doc.text[start:end])


def _trim(text: str, start: int, end: int) -> tuple[int, int] | None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if start < end else None


def _blocks(text: str) -> list[tuple[int, int, bool]]:
    """Paragraph-like blocks as (start, end, is_heading): split at blank lines, and
    around Markdown headings and list items, which never continue the line before."""
    blocks: list[tuple[int, int, bool]] = []
    start = 0
    pos = 0
    for line in text.splitlines(keepends=True):
        line_end = pos + len(line)
        if not line.strip():
            blocks.append((start, pos, False))
            start = line_end
        elif _HEADING.match(line):
            blocks += [(start, pos, False), (pos, line_end, True)]
            start = line_end
        elif _LIST_ITEM.match(line):
            blocks.append((start, pos, False))
            start = pos
        pos = line_end
    blocks.append((start, len(text), False))
    return [(s, e, h) for s, e, h in blocks if e > s]


def _is_boundary(text: str, block_start: int, dot: int, next_char: str) -> bool:
    """Whether the punctuation run starting at `dot` ends a sentence."""
    if text[dot] != ".":
        return True
    word_start = dot
    while word_start > block_start and not text[word_start - 1].isspace():
        word_start -= 1
    word = text[word_start:dot].lstrip("([\"'“‘").lower()
    if word in _ABBREVIATIONS or (word in _BEFORE_NUMBER and next_char.isdigit()):
        return False
    # An initial ("J. Smith") is not a sentence end.
    return not (len(word) == 1 and word.isalpha() and text[dot - 1].isupper())


def _sentence_spans(text: str) -> list[tuple[int, int, bool]]:
    """Sentence spans (start, end, starts_section) over the whole text, trimmed."""
    spans: list[tuple[int, int, bool]] = []
    for b_start, b_end, heading in _blocks(text):
        start = b_start
        if not heading:
            for m in _END.finditer(text, b_start, b_end):
                nxt = m.end()
                while nxt < b_end and text[nxt].isspace():
                    nxt += 1
                if nxt < b_end and _is_boundary(text, b_start, m.start(), text[nxt]):
                    if (span := _trim(text, start, m.end())) is not None:
                        spans.append((*span, False))
                    start = m.end()
        if (span := _trim(text, start, b_end)) is not None:
            spans.append((*span, heading))
    return spans


def _cut(text: str, start: int, end: int, max_chars: int) -> list[tuple[int, int]]:
    """Split a span longer than `max_chars` at whitespace (hard cut inside a long token)."""
    pieces = []
    while end - start > max_chars:
        limit = start + max_chars
        cut = max((i for i in range(start + 1, limit + 1) if text[i].isspace()), default=limit)
        if (span := _trim(text, start, cut)) is not None:
            pieces.append(span)
        start = cut
        while start < end and text[start].isspace():
            start += 1
    if (span := _trim(text, start, end)) is not None:
        pieces.append(span)
    return pieces


def _check_max(max_chars: int | None) -> None:
    if max_chars is not None and max_chars < 1:
        raise ValueError(f"max_chars must be at least 1, got {max_chars}")


def sentences(doc: Document, *, max_chars: int | None = None) -> list[Passage]:
    """The sentences of `doc.text`, in order, without surrounding whitespace.

    Handles abbreviations ("e.g.", "et al.", "Fig. 3"), decimals ("3.5"), initials,
    line-wrapped abstracts (a single newline does not end a sentence; a blank line does)
    and Markdown headings and list items.

    Args:
        doc: the document.
        max_chars: if given, a longer sentence (e.g. PDF text without punctuation) is cut
            at whitespace into pieces of at most this many characters.
    """
    _check_max(max_chars)
    spans = [(s, e) for s, e, _ in _sentence_spans(doc.text)]
    if max_chars is not None:
        spans = [piece for s, e in spans for piece in _cut(doc.text, s, e, max_chars)]
    return [_passage(doc, s, e) for s, e in spans]


def split_passages(doc: Document, *, max_chars: int = 600) -> list[Passage]:
    """Consecutive sentences grouped into passages of at most `max_chars` characters.

    A sentence longer than `max_chars` is cut at whitespace; a Markdown heading always
    starts a new passage.

    Raises:
        ValueError: `max_chars` < 1.
    """
    _check_max(max_chars)
    out: list[Passage] = []
    group: tuple[int, int] | None = None
    for s, e, new_section in _sentence_spans(doc.text):
        for ps, pe in _cut(doc.text, s, e, max_chars):
            if group is not None and not new_section and pe - group[0] <= max_chars:
                group = (group[0], pe)
                continue
            if group is not None:
                out.append(_passage(doc, *group))
            group = (ps, pe)
            new_section = False
    if group is not None:
        out.append(_passage(doc, *group))
    return out


def read_passage(doc: Document, start: int, end: int) -> Passage:
    """The passage `doc.text[start:end]`.

    Raises:
        PassageBoundsError: (a `ValueError`) the bounds are not integers with
            0 <= start <= end <= len(doc.text).
    """
    n = len(doc.text)
    ints = all(isinstance(v, int) and not isinstance(v, bool) for v in (start, end))
    if not ints or not 0 <= start <= end <= n:
        raise PassageBoundsError(
            f"bad passage bounds start={start!r}, end={end!r} for document {doc.id!r} of "
            f"length {n}; need integers with 0 <= start <= end <= {n}"
        )
    return _passage(doc, start, end)


def _loose_pattern(quote: str) -> re.Pattern[str] | None:
    words = quote.split()
    if not words:
        return None
    parts = ["".join(_QUOTE_CHARS.get(c, re.escape(c)) for c in w) for w in words]
    return re.compile(r"\s+".join(parts))


def find_exact(doc: Document, quote: str) -> Passage | None:
    """Where `quote` occurs in `doc.text` (first occurrence), or None.

    Tries the exact substring first, then a match that ignores differences in whitespace
    (line breaks, repeated spaces) and in quote and dash styles; either way the passage has
    the exact offsets of the text as it is in the document.
    """
    stripped = quote.strip()
    if not stripped:
        return None
    at = doc.text.find(stripped)
    if at >= 0:
        return _passage(doc, at, at + len(stripped))
    pattern = _loose_pattern(stripped)
    m = pattern.search(doc.text) if pattern else None
    return _passage(doc, m.start(), m.end()) if m else None
