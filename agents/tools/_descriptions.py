"""What each column of a bundled dataset measures, read from the dataset's own metadata.

statsmodels modules have a `NOTE` with a "Variable name definitions" section of
`NAME - description` lines (also `NAME : description`, `NAME = description`, or the name
alone on a line with the description indented below it); sklearn's `DESCR` lists
`- name   description` lines under ":Attribute Information:" and says what the target is
in a ":Target:" line. Only names that are columns of the loaded frame are kept (any
case), and each description is cut to its first sentence.

`statsmodels_codes` reads the coded values a `NOTE` lists for a column, inline
("rate_marriage : How rate marriage, 1 = very poor, 2 = poor, ...") or one a line below it
("0 - Strong Democrat"); "Same as occupation" gives a column the codes of another.

Example:
    >>> statsmodels_descriptions("Variable name definitions::\\n  TOTEMP - Total Employment",
    ...                          ["TOTEMP"])
    {'TOTEMP': 'Total Employment'}
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["sklearn_codes", "sklearn_descriptions", "statsmodels_codes", "statsmodels_descriptions"]

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
# a code and its meaning's start: "1 = very poor", "0 - Strong Democrat" ("-" needs spaces
# around it, so "1-8 grades" and "$3,000-$4,999" are no codes)
_CODE_AT = re.compile(r"(?<![\w.$,-])(-?\d+(?:\.\d+)?)(?:\s*=\s*|\s+-\s+)(?=\S)")
_SAME_AS = re.compile(r"same as ([A-Za-z_]\w*)", flags=re.IGNORECASE)


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
    found = _entries(note, columns, keep_codes=False)
    described = {c: _first_sentence(" ".join(parts)) for c, parts in found.items()}
    return {c: d for c, d in described.items() if d}


def _entries(note: str, columns: Iterable[str], *, keep_codes: bool) -> dict[str, list[str]]:
    """The text lines of each column's entry under "Variable name definitions"; a coded
    value's line ("0 - Strong Democrat") ends the entry unless `keep_codes`."""
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
        elif (
            current is not None and _indent(line) > indent and (keep_codes or not _CODE.match(text))
        ):
            found[current].append(text)
        else:
            current = None
    return found


def _codes_in(text: str) -> dict[str, str]:
    """The coded values in a column's entry, {code: meaning} ("1": "very poor")."""
    marks = list(_CODE_AT.finditer(text))
    out: dict[str, str] = {}
    ends = [m.start() for m in marks[1:]] + [len(text)] if marks else []
    for m, end in zip(marks, ends, strict=True):
        meaning = text[m.end() : end].strip(" ,;.")
        out[m.group(1)] = " ".join(meaning.split())
    return out


def statsmodels_codes(note: str, columns: Iterable[str]) -> dict[str, dict[str, str]]:
    """The coded values a statsmodels `NOTE` lists per column ({column: {code: meaning}}).

    Only columns with two or more codes are kept; codes are written as the note writes them
    ("1", "0"). A column described as "Same as <column>" gets that column's codes.

    Example:
        >>> statsmodels_codes("definitions:\\n  r : How rated, 1 = poor, 2 = good", ["r"])
        {'r': {'1': 'poor', '2': 'good'}}
    """
    found = _entries(note, columns, keep_codes=True)
    codes = {c: _codes_in(" ".join(parts)) for c, parts in found.items()}
    for c, parts in found.items():
        same = _SAME_AS.search(" ".join(parts))
        if same is not None and len(codes[c]) < 2:
            codes[c] = dict(codes.get(same.group(1), {}))
    return {c: k for c, k in codes.items() if len(k) >= 2}


def sklearn_codes(labels: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
    """sklearn's class names of its target are its codes ({"target": {"0": "setosa"}})."""
    return {c: dict(k) for c, k in labels.items()}


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
