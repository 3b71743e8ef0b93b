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

from kimmy_swarm.agents.review._venue import IN_TEXT, in_text_status
from kimmy_swarm.agents.tools.authors import PARTICLES, family_name

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
#: The year of a citation, with the paper's standing when it is no accepted paper
#: ("2017, rejected submission": `agents.review._venue`).
_WHEN = r"(?:\d{4}|n\.d\.)[a-z]?(?:, (?:" + "|".join(IN_TEXT.values()) + r"))?"
#: A family name with its particles, written as its owner writes it ("van de Panne").
_PARTICLE = r"(?:(?i:" + "|".join(sorted(PARTICLES)) + r")\s+)"
_FAMILY = rf"{_PARTICLE}*[A-Z][\w'’-]+"
_ATTRIBUTION = re.compile(
    rf"^(?P<subject>(?:The paper by )?(?:[A-Z]|{_PARTICLE})[^()]{{0,60}}?\({_WHEN}\)"
    r"|“[^”]{1,200}”)\s+"
)
_NAMED = rf"{_FAMILY}(?: et al\.| and {_FAMILY})?"
#: "Zhang et al. (2017)" at the start, after an optional "The paper by".
_LEADING = re.compile(rf"^(?:[Tt]he paper by )?(?P<subject>{_NAMED} \({_WHEN}\))\s+")
#: "… (Zhang et al., 2017)." or "… (“json”)." closing the sentence.
_TRAILING = re.compile(rf"\s*\((?P<subject>{_NAMED}, {_WHEN}|“[^”]{{1,200}}”)\)(?P<end>[.!]?)\s*$")
#: "…, in this paper Lin et al. (2017) propose …" inside the sentence.
_EMBEDDED = re.compile(rf"(?<=[\s(])(?P<subject>{_NAMED} \({_WHEN}\))\s+")
#: How a review links one statement to the one before it; `split_attribution` drops them.
CONNECTORS = (
    "In contrast", "By comparison", "Relatedly", "Similarly", "Elsewhere", "Along the same line",
    "Also", "Further",
)  # fmt: skip
_CONNECTOR = re.compile(r"^(?:" + "|".join(CONNECTORS) + r"),\s+")
#: "we propose" after an opening clause ("Inspired by X, in this paper we propose …").
_EMBEDDED_WE = re.compile(
    r"(?<= )we\s+"
    r"(?P<adverb>(?:also|further|then|first|now|thus|therefore)\s+)?(?P<verb>[a-z]+)\b"
)


#: Verbs a documentation sentence may open with, subject left out ("Provides classes …").
_DOC_VERBS = frozenset((
    "provide", "implement", "define", "contain", "support", "offer", "export", "allow",
    "handle", "create", "return", "represent", "manage", "generate", "parse", "read", "write",
    "convert", "encode", "decode", "build", "run", "add", "give", "include", "let", "make",
    "use", "map", "compute", "describe", "extend", "wrap", "hold",
))  # fmt: skip


#: TeX an abstract writes where a review shows the character ("880\\%", "10$\\times$").
_TEX_SYMBOLS = {
    r"\times": "×", r"\sim": "~", r"\approx": "≈", r"\pm": "±", r"\le": "≤", r"\leq": "≤",
    r"\ge": "≥", r"\geq": "≥", r"\cdot": "·", r"\infty": "∞",
}  # fmt: skip
_TEX_MATH = re.compile(r"\$(\\[a-z]+|[^$\s\\_^{}=](?:[^$\\_^{}=]{0,10}[^$\s\\_^{}=])?)\$")
_TEX_TEXT = re.compile(r"\\(?:emph|textit|textbf|textsc|texttt|textrm)\{([^{}]*)\}")


def plain_tex(text: str) -> str:
    """`text` with the TeX of a prose sentence shown plain: "\\%" → "%", "$\\times$" → "×",
    "$32$" → "32", "\\emph{GMAN}" → "GMAN", "``x''" → "“x”". A formula is left alone (such a
    sentence is not quoted: `_claimable`)."""
    text = text.replace(r"\%", "%").replace("``", "“").replace("''", "”")
    text = _TEX_TEXT.sub(lambda m: m.group(1), text)
    return _TEX_MATH.sub(lambda m: _TEX_SYMBOLS.get(m.group(1), m.group(1)), text)


def _doc_verb(word: str) -> str | None:
    """The base form of `word` if it is one of `_DOC_VERBS` (any person), else None."""
    low = word.lower()
    for base in (low, low[:-1], low[:-2]):
        if base in _DOC_VERBS and low in (base, base + "s", base + "es"):
            return base
    return None


def surname(author: str) -> str:
    """The family name of an author as written, particles included ("Chiyuan Zhang*" →
    "Zhang", "Michiel van de Panne" → "van de Panne"; `agents.tools.authors.name_parts`).
    A name keeps its owner's lower-case particle even where it opens a sentence, as papers
    of the field write it ("van den Oord et al. (2016) show …")."""
    return family_name(author)


def attribution(
    authors: Sequence[str], year: int | None, title: str, status: str = "", *, label: str = ""
) -> str:
    """How a claim names its source: "Zhang et al. (2017)", "Kim and Lee (2016)", "“json”";
    a paper that is no accepted one says its standing (`status`: "rejected" → "Li et al.
    (2017, rejected submission)", `agents.review._venue`). `label` tells apart papers the
    review would otherwise cite alike ("a" → "Li et al. (2017a)", `year_labels`)."""
    when = (str(year) if year is not None else "n.d.") + label
    if in_text_status(status):
        when = f"{when}, {in_text_status(status)}"
    names = [surname(a) for a in authors if a.strip()]
    if not names:
        return f"“{title.strip()[:120]}”"
    if len(names) == 1:
        return f"{names[0]} ({when})"
    if len(names) == 2:
        return f"{names[0]} and {names[1]} ({when})"
    return f"{names[0]} et al. ({when})"


#: A paper cited in running prose: "Zhang et al. (2017)", "Kim and Lee (2016a)", "(Zhang et
#: al., 2017)" (a name and a year after "(" or ", ": never "ICLR 2017").
_CITED = re.compile(
    rf"(?P<names>(?P<first>{_FAMILY})(?: et al\.| and {_FAMILY})?)"
    r"(?: \(|, )(?P<year>\d{4})[a-z]?\b"
)


def _cited_key(match: re.Match[str]) -> tuple[str, str]:
    return match["first"].split()[-1].lower(), match["year"]


def unknown_citations(text: str, known: Sequence[str]) -> list[str]:
    """The citations of `text` ("Santana et al. (2017)") whose first family name and year
    none of the `known` attributions ("Metz et al. (2017)", `attribution`) has, in order."""
    keys = {_cited_key(m) for a in known for m in _CITED.finditer(a)}
    unknown = [m for m in _CITED.finditer(text) if _cited_key(m) not in keys]
    return list(dict.fromkeys(f"{m['names']} ({m['year']})" for m in unknown))


def year_labels(docs: Sequence[tuple[str, Sequence[str], int | None, str]]) -> dict[str, str]:
    """The letters that tell apart documents a review would cite alike, as reviews do
    ("Li et al., 2017a" and "Li et al., 2017b"): document id → "a", "b", … for each
    (id, authors, year, title) whose names and year another one shares (its standing
    aside), lettered in reference-list order (first author, then title); none for the rest."""
    alike: dict[str, list[tuple[str, str]]] = {}
    for doc_id, authors, year, title in docs:
        if any(a.strip() for a in authors):
            key = attribution(authors, year, title)
            alike.setdefault(key, []).append((title.lower(), doc_id))
    labels: dict[str, str] = {}
    for same in alike.values():
        if len(same) > 1:
            for i, (_, doc_id) in enumerate(sorted(same)):
                labels[doc_id] = _letters(i)
    return labels


def _letters(i: int) -> str:
    """ "a" … "z", then "aa", "ab" …"""
    return chr(ord("a") + i) if i < 26 else _letters(i // 26 - 1) + _letters(i % 26)


def agree(verb: str, subject: str) -> str:
    """`verb` (its base form) in the number of `subject`: "show" for "Zhang et al. (2017)"
    and "Kim and Lee (2016)", "shows" for "Kim (2016)"."""
    plural = " et al." in subject or " and " in subject
    if plural or not verb.isalpha():
        return verb
    if verb.endswith("y") and verb[-2:-1] not in "aeiou":
        return verb[:-1] + "ies"
    if verb.endswith(("s", "sh", "ch", "x", "z")):
        return verb + "es"
    return verb + "s"


def in_third_person(text: str) -> str:
    """`text` with its first-person words in the third person ("our model" → "their
    model"), for words of a sentence whose subject is said elsewhere."""
    return _FIRST_PERSON_RE.sub(lambda m: _FIRST_PERSON[m.group(1)], text)


def parenthetical(subject: str) -> str:
    """ "Zhang et al. (2017)" → "(Zhang et al., 2017)"; "“json”" → "(“json”)"."""
    found = re.match(rf"^(?:The paper by )?(.+?) \(({_WHEN})\)$", subject)
    if found:
        return f"({found.group(1)}, {found.group(2)})"
    return f"({subject})"


def third_person(sentence: str, subject: str, title: str = "") -> str:
    """`sentence`, attributed to `subject`, with first-person words in the third person.

    The attribution takes the form a review gives it: the authors as the sentence's subject
    ("We show X" → "Zhang et al. (2017) show X"; "…, in this paper we propose X" → "…, in
    this paper Zhang et al. (2017) propose X"), or, for a sentence that states something
    in its own words, a closing citation ("X holds." → "X holds (Zhang et al., 2017).").
    Only a first-person sentence of another shape says "… report that …".
    """
    text = " ".join(plain_tex(sentence).split())
    if text[:1] in '"“' and text.count(text[0]) + text.count("”") == 1:
        text = text[1:]  # a quotation whose close lies in the next sentence
    opening = _OPENING.match(text)
    embedded = _EMBEDDED_WE.search(text)
    if opening:
        verb = opening.group(1)
        rest = text[opening.end() :]
        text = f"{subject} {agree(verb, subject)}{rest}"
    elif _THIS_PAPER.match(text) and not subject.startswith("“"):
        rest = text[_THIS_PAPER.match(text).end() :].lstrip()
        text = f"The paper by {subject} {rest}"
    elif subject.startswith("“") and _doc_verb(text.split(" ", 1)[0]) and " " in text:
        verb, rest = text.split(" ", 1)
        text = f"{subject} {agree(_doc_verb(verb) or verb, subject)} {rest}"
    elif embedded and not subject.startswith("“"):
        adverb, verb = embedded.group("adverb") or "", embedded.group("verb")
        text = (
            f"{text[: embedded.start()]}{subject} {adverb}{agree(verb, subject)}"
            f"{text[embedded.end() :]}"
        )
    else:
        thing = _THIS_THING.match(text)
        if thing and title:
            text = f"The {title.strip()} {thing.group(1)}{text[thing.end() :]}"
            return _FIRST_PERSON_RE.sub(lambda m: _FIRST_PERSON[m.group(1)], text)
        if text.startswith("Our ") and len(_FIRST_PERSON_RE.findall(text)) == 1:
            text = "The " + text[4:]  # "Our model reaches …" → "The model reaches … (X)."
        if not _FIRST_PERSON_RE.search(text) and text.endswith((".", "!")) and text[:1].isupper():
            return f"{text[:-1].rstrip()} {parenthetical(subject)}{text[-1]}"
        lead = text[:1].lower() + text[1:] if text[:2].istitle() else text
        text = f"{subject} {agree('report', subject)} that {lead}"
    return _FIRST_PERSON_RE.sub(lambda m: _FIRST_PERSON[m.group(1)], text)


def with_connector(claim: str, connector: str) -> str:
    """`claim` opened by one of `CONNECTORS` ("In contrast, Zhang et al. (2017) …")."""
    if connector not in CONNECTORS:
        raise ValueError(f"unknown connector {connector!r}; allowed: {', '.join(CONNECTORS)}")
    if claim.startswith("The paper by "):
        claim = "t" + claim[1:]
    return f"{connector}, {claim}"


def opens_with_source(claim: str) -> bool:
    """Whether `claim` starts with its attribution ("Zhang et al. (2017) show …"): the form
    a connector ("Similarly, …") can open without colliding with the sentence's own."""
    return bool(_LEADING.match(claim))


def split_attribution(claim: str) -> tuple[str, str]:
    """(attribution, the rest) of a claim; ("", claim) when it names no source.

    The attribution is found where `third_person` puts it: leading ("Zhang et al. (2017)
    show …", after an optional connector such as "In contrast,"), closing ("… (Zhang et al.,
    2017)." → "Zhang et al., 2017") or inside the sentence ("…, in this paper Zhang et al.
    (2017) propose …"). The rest is the claim without the attribution and the connector.
    """
    text = _CONNECTOR.sub("", claim.strip(), count=1)
    found = _LEADING.match(text)
    if found:
        return found.group("subject"), text[found.end() :]
    found = _TRAILING.search(text)
    if found:
        return found.group("subject"), text[: found.start()] + found.group("end")
    found = _EMBEDDED.search(text)
    if found:
        return found.group("subject"), text[: found.start()] + text[found.end() :]
    found = _ATTRIBUTION.match(text)  # any other leading "Smith, Jones and Lee (2017)"
    if found:
        return found.group("subject"), text[found.end() :]
    return "", claim.strip()


def shorten(text: str, words: int = 25) -> str:
    """The first `words` words of `text` (with an ellipsis when cut)."""
    parts = text.split()
    return " ".join(parts[:words]) + (" …" if len(parts) > words else "")


def in_sentence(title: str) -> str:
    """A section title inside a sentence: its first letter lower-cased unless the first
    word is an acronym or a name ("Energy-based GANs" → "energy-based GANs"; "LSTM …")."""
    first = title.split(" ", 1)[0]
    if len(first) > 1 and any(c.isupper() for c in first[1:]):
        return title
    return title[:1].lower() + title[1:]


def is_miscellany(title: str) -> bool:
    """Whether a section gathers the papers no line of research names ("Other work")."""
    return title.strip().lower() in {"other work", "other lines of work"}


def theme_title(label: str) -> str:
    """ "attention / memory / reading" → "Attention, memory and reading"."""
    terms = [t.strip() for t in label.split("/") if t.strip()]
    if not terms:
        return "Other work"
    joined = terms[0] if len(terms) == 1 else ", ".join(terms[:-1]) + " and " + terms[-1]
    return joined[:1].upper() + joined[1:]


__all__ = [
    "CONNECTORS",
    "agree",
    "attribution",
    "in_sentence",
    "in_third_person",
    "is_miscellany",
    "opens_with_source",
    "parenthetical",
    "plain_tex",
    "shorten",
    "split_attribution",
    "surname",
    "theme_title",
    "third_person",
    "unknown_citations",
    "with_connector",
    "year_labels",
]
