"""Author names as records give them: `parse_authors` reads a list or an "A and B" /
"A; B" / "A, B" string (BibTeX's "Last, First" becomes "First Last")."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_AND = re.compile(r"\s+and\s+", re.IGNORECASE)


def _clean_name(name: str) -> str:
    # "*" marks equal contribution in OpenReview author lists; it is not part of the name.
    return " ".join(name.replace("*", " ").split())


def parse_authors(value: Any, *, bibtex: bool = False) -> tuple[str, ...]:
    """Author names from a list, or from an "A and B" / "A; B" / "A, B" string.

    A string split on " and " (always, with `bibtex`) follows the BibTeX convention:
    "Last, First" becomes "First Last".
    """
    if value is None:
        return ()
    if isinstance(value, str):
        bibtex = bibtex or bool(_AND.search(value))
        parts = _AND.split(value) if bibtex else re.split(r"[;,]", value)
    elif isinstance(value, list | tuple):
        parts = [p.get("name", "") if isinstance(p, Mapping) else str(p) for p in value]
    else:
        parts = [str(value)]
    names = []
    for part in parts:
        name = _clean_name(str(part))
        if bibtex and "," in name:  # "Last, First" or "Last, Jr, First" -> "First Last Jr"
            pieces = [p.strip() for p in name.split(",")]
            suffix = pieces[1] if len(pieces) == 3 else ""
            name = " ".join(p for p in (pieces[-1], pieces[0], suffix) if p)
        if name and name.lower() != "others":
            names.append(name)
    return tuple(names)


__all__ = ["parse_authors"]
