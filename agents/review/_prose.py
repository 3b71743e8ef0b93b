"""Deterministic prose for the offline policy: attributions and first → third person.

A researcher turns a paper's sentence ("We show that X") into a claim attributed to its
authors ("Zhang et al. (2017) show that X"); the fact-checker splits the attribution off
again, checks it against the cited document's metadata, and checks the rest against the
document's text. Nothing here invents content: every claim is a sentence of the source
with its grammatical person changed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_FIRST_PERSON = {
    "we": "they",
    "We": "They",
    "our": "their",
    "Our": "Their",
    "us": "them",
    "ourselves": "themselves",
    "ours": "theirs",
}
_FIRST_PERSON_RE = re.compile(r"\b(" + "|".join(_FIRST_PERSON) + r")\b")
# "We show", "In this paper, we show", "To address this, we also show": a short opening
# clause (no more than 60 characters up to its comma) may come before the first person.
_OPENING = re.compile(
    r"^(?:(?:In|Here|Finally|Specifically|Moreover|Additionally|Furthermore)"
    r"(?: this (?:paper|work|study|article|note))?,?\s+|[^,.;:()]{1,60},\s+)?"
    r"[Ww]e\s+(?:also\s+|further\s+|then\s+)?(\w+)\b"
)
_THIS_PAPER = re.compile(r"^(?:This|The present|In this) (?:paper|work|study|article)\b,?")
_THIS_THING = re.compile(r"^This (module|package|library|class|function|tool|script)\b")
_ATTRIBUTION = re.compile(
    r"^(?P<subject>(?:The paper by )?[A-Z][^()]{0,60}?\((?:\d{4}|n\.d\.)\)|“[^”]{1,200}”)\s+"
)


#: Verbs a documentation sentence may open with, subject left out ("Provides classes …").
_DOC_VERBS = frozenset((
    "provide", "implement", "define", "contain", "support", "offer", "export", "allow",
    "handle", "create", "return", "represent", "manage", "generate", "parse", "read", "write",
    "convert", "encode", "decode", "build", "run", "add", "give", "include", "let", "make",
    "use", "map", "compute", "describe", "extend", "wrap", "hold",
))  # fmt: skip


def _doc_verb(word: str) -> str | None:
    """The base form of `word` if it is one of `_DOC_VERBS` (any person), else None."""
    low = word.lower()
    for base in (low, low[:-1], low[:-2]):
        if base in _DOC_VERBS and low in (base, base + "s", base + "es"):
            return base
    return None


def surname(author: str) -> str:
    """The family name of an author as written ("Chiyuan Zhang*" → "Zhang")."""
    name = author.replace("*", "").strip()
    if "," in name:  # "Zhang, Chiyuan"
        return name.split(",", 1)[0].strip()
    parts = name.split()
    return parts[-1] if parts else name


def attribution(authors: Sequence[str], year: int | None, title: str) -> str:
    """How a claim names its source: "Zhang et al. (2017)", "Kim and Lee (2016)", "“json”"."""
    when = str(year) if year is not None else "n.d."
    names = [surname(a) for a in authors if a.strip()]
    if not names:
        return f"“{title.strip()[:120]}”"
    if len(names) == 1:
        return f"{names[0]} ({when})"
    if len(names) == 2:
        return f"{names[0]} and {names[1]} ({when})"
    return f"{names[0]} et al. ({when})"


def _agree(verb: str, subject: str) -> str:
    plural = " et al." in subject or " and " in subject
    if plural or not verb.isalpha():
        return verb
    if verb.endswith("y") and verb[-2:-1] not in "aeiou":
        return verb[:-1] + "ies"
    if verb.endswith(("s", "sh", "ch", "x", "z")):
        return verb + "es"
    return verb + "s"


def third_person(sentence: str, subject: str, title: str = "") -> str:
    """`sentence`, attributed to `subject`, with first-person words in the third person."""
    text = " ".join(sentence.split())
    opening = _OPENING.match(text)
    if opening:
        verb = opening.group(1)
        rest = text[opening.end() :]
        text = f"{subject} {_agree(verb, subject)}{rest}"
    elif _THIS_PAPER.match(text) and not subject.startswith("“"):
        rest = text[_THIS_PAPER.match(text).end() :].lstrip()
        text = f"The paper by {subject} {rest}"
    elif subject.startswith("“") and _doc_verb(text.split(" ", 1)[0]) and " " in text:
        verb, rest = text.split(" ", 1)
        text = f"{subject} {_agree(_doc_verb(verb) or verb, subject)} {rest}"
    else:
        thing = _THIS_THING.match(text)
        if thing and title:
            text = f"The {title.strip()} {thing.group(1)}{text[thing.end() :]}"
            return _FIRST_PERSON_RE.sub(lambda m: _FIRST_PERSON[m.group(1)], text)
        lead = text[:1].lower() + text[1:] if text[:2].istitle() else text
        text = f"{subject} {_agree('report', subject)} that {lead}"
    return _FIRST_PERSON_RE.sub(lambda m: _FIRST_PERSON[m.group(1)], text)


def split_attribution(claim: str) -> tuple[str, str]:
    """(attribution, the rest) of a claim; ("", claim) when it names no source up front."""
    found = _ATTRIBUTION.match(claim.strip())
    if not found:
        return "", claim.strip()
    return found.group("subject"), claim.strip()[found.end() :]


def shorten(text: str, words: int = 25) -> str:
    """The first `words` words of `text` (with an ellipsis when cut)."""
    parts = text.split()
    return " ".join(parts[:words]) + (" …" if len(parts) > words else "")


def theme_title(label: str) -> str:
    """ "attention / memory / reading" → "Attention, memory and reading"."""
    terms = [t.strip() for t in label.split("/") if t.strip()]
    if not terms:
        return "Other work"
    joined = terms[0] if len(terms) == 1 else ", ".join(terms[:-1]) + " and " + terms[-1]
    return joined[:1].upper() + joined[1:]


__all__ = ["attribution", "shorten", "split_attribution", "surname", "theme_title", "third_person"]
