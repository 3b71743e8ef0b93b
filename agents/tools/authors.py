"""Author names as records give them: `parse_authors` reads a list or an "A and B" /
"A; B" / "A, B" string (BibTeX's "Last, First" becomes "First Last"); `name_parts` splits
a name into given names, family name (with its particles: "van de Panne", "De Turck") and
suffix ("Jr.", "II"), as a citation needs it."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_AND = re.compile(r"\s+and\s+", re.IGNORECASE)
#: Words that belong to the family name when they come before it: "Michiel van de Panne",
#: "Nicolas Le Roux", "Cicero Nogueira dos Santos". A lower-case word before the last one is
#: one whatever it is (BibTeX's "von" part); a capitalised one only from this list, and
#: never as the first word ("Le Song": given name Le).
PARTICLES = frozenset((
    "van", "von", "de", "der", "den", "del", "della", "degli", "dei", "di", "da", "das", "dos",
    "du", "des", "la", "le", "lo", "ter", "ten", "te", "zu",
))  # fmt: skip
_SUFFIXES = frozenset(("jr", "jr.", "sr", "sr.", "ii", "iii", "iv"))
#: Initials written onto the family name without a space ("Frank S.He", "W.M.Smeulders"):
#: the initials are given names, the rest the family name.
_GLUED_INITIALS = re.compile(r"\b((?:[A-Z]\.)+)(?=[A-Z][a-z])")


def _clean_name(name: str) -> str:
    # "*" marks equal contribution in OpenReview author lists; it is not part of the name.
    return " ".join(name.replace("*", " ").split())


def _unglue(name: str) -> str:
    """ "Frank S.He" → "Frank S. He": an initial glued to the family name is a given name."""
    return _GLUED_INITIALS.sub(r"\1 ", name)


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
        # A list item naming two people ("Bert De Brabandere and Arnold W.M. Smeulders"
        # in the ICLR 2017 records) is two authors.
        parts = [q for p in parts for q in _AND.split(p)]
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


@dataclass(frozen=True, slots=True)
class NameParts:
    """One author's name as a citation uses it: "Michiel van de Panne" → given "Michiel",
    family "van de Panne"; "Guy L. Steele Jr." → given "Guy L.", family "Steele", suffix
    "Jr."."""

    given: str
    family: str
    suffix: str = ""

    def bibtex(self) -> str:
        """The name in BibTeX's "von Last, Jr, First" form, which keeps a capitalised particle
        ("De Turck, Filip") and a suffix apart from the given names; a plain "First Last"
        when there is neither (BibTeX reads that form alike)."""
        plain = not self.suffix and " " not in self.family and self.given
        if plain:
            return f"{self.given} {self.family}"
        return ", ".join(p for p in (self.family, self.suffix, self.given) if p)


def _is_particle(word: str) -> bool:
    return word[:1].islower() or word.lower() in PARTICLES


def name_parts(author: str) -> NameParts:
    """The given names, family name and suffix of `author` ("Chiyuan Zhang*" → "Chiyuan",
    "Zhang"; "Zhang, Chiyuan" → the same; "Aäron van den Oord" → "Aäron", "van den Oord").

    The family name is the last word with the particles before it (`PARTICLES`, or any
    lower-case word), never the first word; "Jr.", "Sr.", "II" … are the suffix. Initials
    glued to the family name are given names ("Frank S.He" → "Frank S.", "He").
    """
    name = _unglue(_clean_name(author))
    if "," in name:  # "Zhang, Chiyuan" or "Steele, Jr., Guy"
        pieces = [p.strip() for p in name.split(",")]
        suffix = pieces[1] if len(pieces) >= 3 else ""
        return NameParts(given=pieces[-1], family=pieces[0], suffix=suffix)
    words = name.split()
    suffix = ""
    if len(words) > 2 and words[-1].lower() in _SUFFIXES:
        suffix = words.pop()
    if len(words) <= 1:
        return NameParts(given="", family=name, suffix="")
    first = len(words) - 1
    while first > 1 and _is_particle(words[first - 1]):
        first -= 1
    return NameParts(" ".join(words[:first]), " ".join(words[first:]), suffix)


def family_name(author: str) -> str:
    """The family name a citation names `author` by ("Michiel van de Panne" → "van de
    Panne", written as its owner writes it)."""
    return name_parts(author).family


__all__ = ["PARTICLES", "NameParts", "family_name", "name_parts", "parse_authors"]
