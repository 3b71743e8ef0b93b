"""Reading a wide task's answer: a Markdown table or a JSON list of row objects, into rows.

`parse_answer` finds the rows (JSON first: a list of objects, an object with `rows`, either
bare or in a fenced block; else every Markdown table in the text) with their keys mapped to
column ids ("First author" → `first_author`). `normalize_cell` makes cells comparable:
strings lose Markdown emphasis, extra whitespace and case; numbers become an int
(`citations`, `n_authors`, `rank`, `karpathy`) or a float to 2 decimals (`rating`,
`variance`); lists (`authors` in order, `emails` as a set) a canonical comma-separated
string. `title_key` is how rows are matched to papers.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

#: Header names (normalized) that mean a column id other than their own spelling.
HEADER_ALIASES: dict[str, str] = {
    "paper": "title",
    "paper_title": "title",
    "name": "title",
    "author": "first_author",
    "first_author_name": "first_author",
    "lead_author": "first_author",
    "citation": "citations",
    "citation_count": "citations",
    "cited_by": "citations",
    "n_citations": "citations",
    "num_citations": "citations",
    "status": "decision",
    "mean_rating": "rating",
    "average_rating": "rating",
    "score": "rating",
    "author_list": "authors",
    "all_authors": "authors",
    "number_of_authors": "n_authors",
    "num_authors": "n_authors",
    "author_count": "n_authors",
    "email_domains": "emails",
    "e_mail_domains": "emails",
    "domains": "emails",
    "link": "url",
    "openreview_url": "url",
    "openreview_link": "url",
    "openreview": "url",
    "paper_link": "url",
}

#: Columns compared as integers, as numbers to 2 decimals, and as lists (authors in order,
#: e-mail domains as a set).
INTEGER_COLUMNS = frozenset({"citations", "n_authors", "rank", "karpathy"})
DECIMAL_COLUMNS = frozenset({"rating", "variance"})
LIST_COLUMNS = frozenset({"authors", "emails"})
_LIST_SPLIT = re.compile(r"\s*[,;]\s*|\s+and\s+")
_FENCED = re.compile(r"```(?:json)?\s*\n(.*?)```", re.DOTALL)
_SEPARATOR = re.compile(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")
_CELL_SPLIT = re.compile(r"(?<!\\)\|")
_EMPHASIS = "*_`~ "
_NOT_ALNUM = re.compile(r"[^0-9a-z]+")


def column_id(header: str) -> str:
    """The column id a header names: "First author" → `first_author`, "Paper" → `title`."""
    key = _NOT_ALNUM.sub("_", _fold(header)).strip("_")
    return HEADER_ALIASES.get(key, key)


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def title_key(title: Any) -> str:
    """How rows are matched to papers: letters and digits only, any case, single spaces."""
    return " ".join(_NOT_ALNUM.sub(" ", _fold(str(title))).split())


def _clean_text(value: Any) -> str:
    text = " ".join(unicodedata.normalize("NFKC", str(value)).split())
    return text.strip(_EMPHASIS).replace("\\|", "|")


def normalize_cell(column: str, value: Any) -> str | int | float | None:
    """A cell in comparable form; None for a missing or unreadable number.

    Integer columns (`citations`, `n_authors`, `rank`, `karpathy`): an int ("1,204", "12.0"
    and 12 all read as such); `rating`, `variance`: a float rounded to 2 decimals; `title`:
    its `title_key`; `authors`: the names in order, `emails`: the domains sorted, each as
    one comma-separated folded string; anything else: text folded to lower case with
    whitespace collapsed and Markdown emphasis stripped (a URL without a trailing "/").
    """
    if value is None:
        return None
    if column in INTEGER_COLUMNS or column in DECIMAL_COLUMNS:
        number = _number(value)
        if number is None:
            return None
        if column in INTEGER_COLUMNS:
            return int(number) if float(number).is_integer() else None
        return round(float(number), 2)
    if column == "title":
        return title_key(_clean_text(value))
    if column in LIST_COLUMNS:
        items = value if isinstance(value, list | tuple) else _LIST_SPLIT.split(str(value))
        folded = [_fold(_clean_text(x)) for x in items]
        names = tuple(x for x in folded if x)
        return ", ".join(sorted(names) if column == "emails" else names)
    text = _fold(_clean_text(value))
    return text.rstrip("/") if column == "url" else text


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    text = _clean_text(value).replace(",", "").replace("_", "").replace(" ", "")
    try:
        return float(text)
    except ValueError:
        return None


def normalize_row(row: dict[str, Any], columns: tuple[str, ...]) -> dict[str, Any]:
    """The row's `columns`, each normalized (a missing column is None)."""
    return {c: normalize_cell(c, row.get(c)) for c in columns}


# --- parsing -------------------------------------------------------------------------------


def _json_rows(data: Any) -> list[dict[str, Any]] | None:
    if isinstance(data, dict) and isinstance(data.get("rows"), list):
        data = data["rows"]
    if isinstance(data, list) and all(isinstance(r, dict) for r in data):
        return [{column_id(str(k)): v for k, v in r.items()} for r in data]
    return None


def _from_json(text: str) -> list[dict[str, Any]] | None:
    candidates = [text.strip()] + [m.group(1).strip() for m in _FENCED.finditer(text)]
    for candidate in candidates:
        if not candidate or candidate[0] not in "[{":
            continue
        try:
            rows = _json_rows(json.loads(candidate))
        except json.JSONDecodeError:
            continue
        if rows is not None:
            return rows
    return None


def _cells(line: str) -> list[str]:
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|") and not body.endswith("\\|"):
        body = body[:-1]
    return [_clean_text(c) for c in _CELL_SPLIT.split(body)]


def _from_markdown(text: str) -> list[dict[str, Any]]:
    lines = text.splitlines()
    rows: list[dict[str, Any]] = []
    i = 0
    while i + 1 < len(lines):
        if "|" in lines[i] and _SEPARATOR.match(lines[i + 1]) and "-" in lines[i + 1]:
            header = [column_id(h) for h in _cells(lines[i])]
            i += 2
            while i < len(lines) and "|" in lines[i]:
                cells = _cells(lines[i])
                if any(cells):
                    rows.append(dict(zip(header, cells, strict=False)))
                i += 1
        else:
            i += 1
    return rows


def parse_answer(text: str) -> list[dict[str, Any]]:
    """The rows of an answer, keyed by column id (values as written; see `normalize_row`).

    JSON (a list of row objects, or `{"rows": [...]}`, bare or fenced) wins over Markdown;
    otherwise the rows of every Markdown table in the text, in order. No table: no rows.
    """
    rows = _from_json(text)
    return rows if rows is not None else _from_markdown(text)


def sort_rows(
    rows: list[dict[str, Any]], column: str, *, descending: bool = False
) -> list[dict[str, Any]]:
    """`rows` sorted by `column`, compared as `normalize_cell` reads it (numbers as numbers,
    text folded); rows without a value come last. Stable: ties keep their order."""

    def key(row: dict[str, Any]) -> tuple[int, Any]:
        value = normalize_cell(column, row.get(column))
        if value is None or value == "":
            return (1, 0)
        return (0, value)

    present = [r for r in rows if key(r)[0] == 0]
    missing = [r for r in rows if key(r)[0] == 1]
    numbers = all(isinstance(key(r)[1], int | float) for r in present)
    ordered = sorted(present, key=lambda r: key(r)[1] if numbers else str(key(r)[1]),
                     reverse=descending)  # fmt: skip
    return ordered + missing


def rows_markdown(columns: tuple[str, ...], rows: list[dict[str, Any]]) -> str:
    """Rows as a Markdown table with `columns` as its header (pipes in cells escaped)."""

    def cell(value: Any) -> str:
        return " ".join(str("" if value is None else value).split()).replace("|", "\\|")

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(r.get(c)) for c in columns) + " |" for r in rows]
    return "\n".join(lines) + "\n"


__all__ = [
    "HEADER_ALIASES",
    "column_id",
    "normalize_cell",
    "normalize_row",
    "parse_answer",
    "rows_markdown",
    "sort_rows",
    "title_key",
]
