"""What each column of a bundled dataset measures, read from the dataset's own metadata.

statsmodels modules have a `NOTE` with a "Variable name definitions" section of
`NAME - description` lines (also `NAME : description`, `NAME = description`, or the name
alone on a line with the description indented below it); sklearn's `DESCR` lists
`- name   description` lines under ":Attribute Information:" and says what the target is
in a ":Target:" line. Only names that are columns of the loaded frame are kept (any
case), and each description is cut to its first sentence.

Example:
    >>> statsmodels_descriptions("Variable name definitions::\\n  TOTEMP - Total Employment",
    ...                          ["TOTEMP"])
    {'TOTEMP': 'Total Employment'}
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["sklearn_descriptions", "statsmodels_descriptions"]

#: A description is cut to this many characters at most (at a word boundary).
MAX_CHARS = 160
# "TOTEMP - Total Employment", "age : Age of respondent.", "invc = in vehicle cost"
_ENTRY = re.compile(r"([A-Za-z_][\w .]*?)\s*(?:-|:|=)+\s*(.*)")
# a coded value under its column ("0 - Strong Democrat"), never a description line
_CODE = re.compile(r"-?\d[\d.]*\s*(?:-|:|=)")
# a sentence ends after a word of three or more letters ("No. years married. Interval")
_SENTENCE_END = re.compile(r"(?<=[a-z]{3}[.!?])\s+")
# sklearn: "    - bmi     body mass index" (two or more spaces after the name)
_SKLEARN_ENTRY = re.compile(r"\s*-\s+(\S+)\s{2,}(\S.*)")
_SKLEARN_TARGET = re.compile(r"\s*:Target:\s*(?:Column \d+ is\s+)?(.+)", flags=re.IGNORECASE)


def _first_sentence(text: str) -> str:
    sentence = _SENTENCE_END.split(" ".join(text.split()), maxsplit=1)[0].rstrip(" ,;")
    if len(sentence) <= MAX_CHARS:
        return sentence
    return sentence[:MAX_CHARS].rsplit(" ", 1)[0] + " …"


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def statsmodels_descriptions(note: str, columns: Iterable[str]) -> dict[str, str]:
    """The columns' descriptions in a statsmodels `NOTE` ({column: description}).

    Args:
        note: the module's `NOTE` text.
        columns: the loaded frame's columns; a defined name matches one in any case.

    Returns:
        Only columns with a non-empty description, in the order the note defines them.
    """
    lines = note.splitlines()
    start = next((i for i, ln in enumerate(lines) if "definition" in ln.lower()), None)
    if start is None:
        return {}
    by_lower = {str(c).lower(): str(c) for c in columns}
    found: dict[str, list[str]] = {}
    current: str | None = None
    indent = 0
    for line in lines[start + 1 :]:
        text = line.strip()
        if not text:  # a blank line ends a description that has begun
            current = None if current is not None and found[current] else current
            continue
        entry = _ENTRY.fullmatch(text)
        name = by_lower.get(entry.group(1).strip().lower()) if entry else None
        bare = by_lower.get(text.lower())
        if name is not None and entry is not None:
            current, indent = name, _indent(line)
            found[name] = [entry.group(2)] if entry.group(2) else []
        elif bare is not None:  # the name alone, its description indented below it
            current, indent = bare, _indent(line)
            found[bare] = []
        elif current is not None and _indent(line) > indent and not _CODE.match(text):
            found[current].append(text)
        else:
            current = None
    described = {c: _first_sentence(" ".join(parts)) for c, parts in found.items()}
    return {c: d for c, d in described.items() if d}


def sklearn_descriptions(descr: str, columns: Iterable[str], target: str | None) -> dict[str, str]:
    """The columns' descriptions in an sklearn `DESCR` ({column: description}).

    Args:
        descr: the bunch's `DESCR` text.
        columns: the loaded frame's columns (matched exactly).
        target: the target column; the ":Target:" line describes it.

    Returns:
        Only columns with a description (diabetes has them; iris names its columns only).
    """
    names = {str(c) for c in columns}
    out: dict[str, str] = {}
    for line in descr.splitlines():
        entry = _SKLEARN_ENTRY.fullmatch(line)
        if entry is not None and entry.group(1) in names:
            out[entry.group(1)] = _first_sentence(entry.group(2))
        said = _SKLEARN_TARGET.fullmatch(line)
        if said is not None and target in names and target not in out:
            out[str(target)] = _first_sentence(said.group(1))
    return out
