"""The metadata at the top of a .md/.txt corpus file: YAML front matter, and plain
`Key: value` lines (`Title:`, `Authors:`, `Year:`, `Venue:`, `URL:`), before or after a
first Markdown heading.

    ---                               # Attention Is All You Need
    title: Attention Is All You Need  Authors: Ashish Vaswani, Noam Shazeer
    authors: [Ashish Vaswani, ...]    Year: 2017
    year: 2017
    ---

`split_header` returns the fields as a record mapping (`_readers.record_from_mapping`'s
keys) and the text after them. Like the readers, it never raises for bad content: front
matter that is not a YAML mapping stays part of the text, with a note.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Header", "split_header"]

#: The fields a `Key: value` line may give (lower case), and the record key each fills.
_LINE_KEYS = {
    "title": "title",
    "author": "authors",
    "authors": "authors",
    "year": "year",
    "date": "year",
    "venue": "venue",
    "url": "url",
}
_KEY_LINE = re.compile(r"^\s*([A-Za-z]+)\s*:\s*(\S.*?)\s*$")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+\S")
_CLOSE = ("---", "...")


@dataclass(slots=True)
class Header:
    """What the top of a text file said: record fields, the text after them, notes."""

    fields: dict[str, Any] = field(default_factory=dict)
    body: str = ""
    notes: dict[str, str] = field(default_factory=dict)


def _plain(value: Any) -> Any:
    """A YAML value as JSON can hold it (dates become their ISO text)."""
    return json.loads(json.dumps(value, default=str))


def _yaml_block(lines: list[str]) -> tuple[dict[str, Any] | str, int] | None:
    """The front matter's mapping (or why it is not used) and the index of the line after
    it; None when the text has no front matter."""
    if not lines or lines[0].strip() != "---":
        return None
    end = next((i for i, ln in enumerate(lines[1:], 1) if ln.strip() in _CLOSE), 0)
    if not end:
        return None  # a "---" rule opening the text, never closed: not front matter
    import yaml

    try:
        data = yaml.safe_load("\n".join(lines[1:end]))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" on line {mark.line + 2}" if mark is not None else ""  # the file's line
        problem = getattr(exc, "problem", None) or " ".join(str(exc).split())
        return f"not valid YAML{where}: {problem}; kept as text", end + 1
    if data is None:
        return {}, end + 1
    if not isinstance(data, dict):
        return f"not a YAML mapping (got {type(data).__name__})", end + 1
    fields = {str(k).lower(): _plain(v) for k, v in data.items()}
    if "year" not in fields and "date" in fields:
        fields["year"] = fields["date"]
    if "authors" not in fields and "author" in fields:
        fields["authors"] = fields.pop("author")
    return fields, end + 1


def _key_lines(lines: list[str], start: int) -> tuple[dict[str, str], int, int | None]:
    """`Key: value` lines from `start` (one Markdown heading may come first; blank lines
    between them): the fields, the index of the first line after them, and the heading's."""
    fields: dict[str, str] = {}
    heading: int | None = None
    i, after = start, start
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        if heading is None and not fields and _HEADING.match(line):
            heading = i
        elif (m := _KEY_LINE.match(line)) and m.group(1).lower() in _LINE_KEYS:
            fields.setdefault(_LINE_KEYS[m.group(1).lower()], m.group(2))
        else:
            break
        i += 1
        after = i
    return fields, after, heading


def split_header(text: str) -> Header:
    """The fields the top of `text` gives and the text after them (unchanged when none)."""
    lines = text.split("\n")
    header = Header(body=text)
    start = 0
    block = _yaml_block(lines)
    if block is not None:
        found, start = block
        if isinstance(found, str):
            header.notes["front_matter"] = found
            return header  # kept as text: nothing of it is lost
        header.fields.update(found)
    found_lines, after, heading = _key_lines(lines, start)
    if not found_lines:
        header.body = "\n".join(lines[start:]).strip("\n") if start else text
        return header
    for key, value in found_lines.items():
        header.fields.setdefault(key, value)
    kept = [lines[heading]] if heading is not None else []  # the heading stays the title
    header.body = "\n".join([*kept, *lines[after:]]).strip("\n")
    return header
