"""Which source sentences can become claims: prose statements, not code, lists or boilerplate.

A review quotes statements. A module docstring or an abstract also holds code examples
("import numpy as np"), definition lists ("netcdf_file - A file object …"), headings,
licence and "automatically generated" notices, and noun-phrase fragments that state nothing
("Utilities to compile possibly incomplete Python source code."). `not_prose` names why a
sentence is not a statement, so tests (and a reader of the run) can see the rule that fired.
"""

from __future__ import annotations

import re


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: Sentences shorter or longer than this make poor claims (a label; a paragraph run-on).
MIN_CHARS, MAX_CHARS = 40, 420

_BOILERPLATE = re.compile(
    r"\b(?:copyright\b|all rights reserved|licen[cs]ed under|under the terms of|permission to use"
    r"|provided [\"“]?as is|(?:BSD|MIT|GPL|Apache) licen[cs]e|(?:file|module|code|page) is "
    r"(?:automatically|auto-?)generated|automatically generated (?:file|code|by)"
    r"|do not (?:edit|modify|change) this|don'?t (?:edit|modify|muck)|muck it up"
    r"|SPDX|\$Id\b|@author\b|(?:author|maintainer|version)s?:)"
    r"|\b(?:TODO|FIXME|XXX)\b",
    re.IGNORECASE,
)
_MARKUP = re.compile(
    r">>>|\.\.\.\s*$|::|:(?:mod|func|class|meth|attr|data|ref|doc|obj):|`~|^\s*\.\. |\{\{|\}\}"
    r"|<https?://|<a\s+href|</a>|&(?:gt|lt|amp);|={3,}|-{4,}|^\S+\s+-{2,3}\s|~{3,}|\*\*|\|"
    # TeX math that is a formula ("$S_P \sim P^n$"); a symbol or a number ("10$\times$",
    # "$32$", "$k$-means") reads as prose and is shown plain (`_prose.plain_tex`)
    r"|\$(?=[^$]*[_^{}=]|[^$]{13})[^$\s][^$]*\$"
)
_LIST_START = re.compile(r"^\s*(?:[-*•#+>]|\d{1,2}[.)]|\(?[a-z]\)|[ivx]{1,4}\.)\s")
_SHELL = re.compile(r"^\s*(?:\$|%|pip|conda|python3?|git|cd|ls|make)\s|\s--?[a-z][\w-]*=")
_IMPORT = re.compile(r"(?:^|[\s;\"'`(])(?:import\s+[A-Za-z_][\w.]*|from\s+[\w.]+\s+import)\b")
_CALL = re.compile(
    r"\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\(|\b\w+\(\)|\b\w+\([^()]*\w=|[A-Za-z_]\w*\s=\s[\w.]+"
)
#: A token that is an identifier, not a word: snake_case, dotted.names, paths, dunders.
_IDENTIFIER = re.compile(
    r"^[A-Za-z_]\w*_\w*$|^[A-Za-z_]\w+(?:\.[A-Za-z_]\w*)+$|^[\w.]*/[\w./]+\.\w+$|^\*{1,2}\w+$"
)
_LAYOUT = re.compile(r"[^\S\n]{3,}|\t")
_RUN_ON_HEADING = re.compile(r"^(?:[A-Z][\w-]*[ ]){2,7}[ ]+[A-Z]")
_DEFINITION = re.compile(r"\s-\s")
_SYMBOLS = re.compile(r"[=<>{}\[\]\\#@^~|_]")
_TERMINATED = re.compile(r"[.!][\"”')\]]*$")
#: A note, a pointer or a parenthetical aside, not a statement of the source's own.
_ASIDE = re.compile(r"^(?:\(|(?:Note|See|See also|Example|Examples|Usage|Warning)\b:?\s)")
#: A sentence cut from the middle of another ("which extends …", "and returns …").
#: A lower-case start that is no identifier ("note: script requires …", not "numpy.f2py …").
_LOWER_START = re.compile(r"^[a-z][a-z'-]*(?=[\s,:;])")
#: A sentence that leans on the one before it ("It decodes …", "Here 'resp' is …", "This is
#: …"): out of its context a reader cannot tell what it is about.
_ANAPHOR = re.compile(
    r"^(?:Its|Such)\b"
    r"|^(?:Here|Then)\b(?!,?\s+we\b)"  # "Here we show …" states the source's own work
    r"|^It\b(?!\s+(?:is|was|has\s+been)\s+(?:\w+\s+){0,3}(?:that|to)\b)"  # "It is known that"
    r"|^This\s+(?:is|was|one|way)\b"
    r"|^You\s+can\s+then\b"
)
_CONTINUATION = re.compile(
    r"^(?:which|and|or|but|where|whereas|so|then|while)\b|^(?:Is|Are|Was|Were|Has|Have)\b[^?]*$"
)

_AUXILIARIES = _words(
    "is are was were am be been has have had can could may might must shall should will would "
    "does do did cannot isn't aren't wasn't weren't hasn't haven't doesn't don't didn't can't "
    "won't wouldn't shouldn't couldn't it's that's there's here's what's",
)
_PRONOUN_SUBJECTS = _words("we they i you he she")
#: Verbs a statement about a method or a module commonly turns on (base forms).
_VERBS = _words(
    "provide implement define contain support offer export allow handle create return represent "
    "manage generate parse read write convert encode decode build run add give include let make "
    "use map compute describe extend wrap hold show learn achieve outperform improve reduce "
    "enable require yield produce perform exhibit consist depend rely lead remain become work "
    "fail serve take accept need apply act store send receive find treat keep check load save "
    "fit estimate predict train generalize capture match lack exist present propose introduce "
    "demonstrate suggest indicate report obtain reach surpass scale permit help aim seek attempt "
    "tend seem appear mean refer follow combine consider explore study investigate analyze "
    "evaluate compare address solve tackle design develop formulate establish prove observe "
    "outline extract emit open close call raise translate transform recognize detect exploit "
    "leverage suffer beat direct come go get set put see say know carry prevent encourage "
    "mitigate alleviate eliminate induce constitute form operate rely benefit involve "
    "accumulate stem imply",
)
_NOT_BEFORE_VERB = _words(
    "the a an its their our his her of for with in on to by from as at into than and or",
)
_AFTER_VERB = _words(
    "the a an that this these those its their our his her to how whether on in from with into "
    "over up out no all both more less each every any some many several",
)
_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*")


def _base(word: str) -> str | None:
    """The base form of `word` when it is a form of one of `_VERBS`, else None."""
    low = word.lower()
    candidates = [low, low[:-1], low[:-2], low[:-3] + "y", low[:-1] + "e" if low else low]
    if low.endswith("ed"):
        candidates += [low[:-2], low[:-1], low[:-3]]  # used, needed, mapped
    if low.endswith("ies"):
        candidates.append(low[:-3] + "y")
    for base in candidates:
        if base in _VERBS and (
            low == base
            or low in (base + "s", base + "es", base + "ed", base + "d")
            or low == base[:-1] + "ies"
            or low == base + base[-1] + "ed"
        ):
            return base
    return None


def _verb_follower(word: str, *, adverb: bool = True) -> bool:
    """Whether `word` often follows a finite verb (an object or complement starts)."""
    low = word.lower()
    return low in _AFTER_VERB or (adverb and low.endswith("ly")) or low[:1].isdigit()


def has_finite_verb(text: str) -> bool:
    """Whether `text` reads as a clause (a heuristic, no tagger).

    A clause has an auxiliary ("is", "can"), a pronoun subject ("we", "they"), opens with a
    documentation verb ("Provides classes …"), or has a verb form after a word that can end
    a subject: a known verb's -s form ("Tkinter provides"), its base form after a plural or
    a name ("Classes provide"), an -ed form or any other -s word before an object ("improved
    the accuracy", "directs our focus"). A participle after a noun ("objects used in") is
    not one.
    """
    words = _WORD.findall(text)
    lows = [
        w.lower().split("'")[0].split("’")[0] if w.lower() not in _AUXILIARIES else w.lower()
        for w in words
    ]
    if any(w in _AUXILIARIES for w in lows) or any(w in _PRONOUN_SUBJECTS for w in lows[:-1]):
        return True
    first = _base(lows[0]) if lows else None
    if first and lows[0] != first and lows[1:2] != ["to"]:
        return True  # "Provides …", "Returns …" (subject left out, as docstrings do)
    for i in range(1, len(words)):
        low, before = lows[i], lows[i - 1]
        following = words[i + 1] if i + 1 < len(words) else ""
        if words[i][0].isupper() or before in _NOT_BEFORE_VERB:
            continue
        base = _base(low)
        if low.endswith("ed"):
            if _verb_follower(following):
                return True
        elif base is not None and low != base:
            return True  # "provides", "supplies"
        elif base is not None and not before.endswith("ing"):
            if before.endswith("s") or words[i - 1][:1].isupper():
                return True  # "Classes provide", "RNNs suffer"
        elif re.fullmatch(r"[a-z]+[^su]s", low) and _verb_follower(following, adverb=False):
            return True  # "directs our focus", "eliminates the coupling"
    return False


def _identifiers(text: str) -> int:
    return sum(bool(_IDENTIFIER.match(tok.strip(".,;:()[]'\"“”`"))) for tok in text.split())


def not_prose(text: str) -> str | None:
    """Why `text` is not a prose statement ("code", "list", "boilerplate", …), or None.

    Reasons: "length" (outside `MIN_CHARS`–`MAX_CHARS`), "lead-in" (ends with ":" or ","),
    "question" (asks rather than states), "aside" (a note, a pointer, a parenthetical),
    "boilerplate" (licence, copyright, generated-file notices, TODOs), "markup" (doctest,
    reST roles and rules, tables, layout whitespace), "code" (imports, calls, assignments,
    shell lines, two or more identifiers), "list" (bullets, numbering, "name - meaning"
    pairs), "heading" (Title Case without a verb or run into the next sentence),
    "fragment" (unterminated, or cut from the middle of a sentence), "anaphor" (leans on
    the sentence before: "It …", "Here …", "This is …"), "verbless" (no finite
    verb by `has_finite_verb` — a heuristic, so the only reason a caller may overrule).
    """
    stripped = text.strip()
    if not MIN_CHARS <= len(stripped) <= MAX_CHARS:
        return "length"
    if stripped.endswith((":", ",")):
        return "lead-in"
    if stripped.endswith("?"):
        return "question"
    if _BOILERPLATE.search(stripped):
        return "boilerplate"
    backticks = re.sub(r"``[^`']*''", "", stripped).count("`")  # LaTeX ``quotes'' are prose
    if _MARKUP.search(stripped) or backticks > 2 or _LAYOUT.search(stripped):
        return "markup"
    if _IMPORT.search(stripped) or _CALL.search(stripped) or _SHELL.search(stripped):
        return "code"
    if _identifiers(stripped) >= 2:
        return "code"
    if _LIST_START.match(stripped) or len(_DEFINITION.findall(stripped)) >= 2:
        return "list"
    words = stripped.split()
    if sum(bool(_SYMBOLS.search(w)) for w in words) > 0.2 * len(words):
        return "code"
    if _ASIDE.match(stripped):
        return "aside"
    if _RUN_ON_HEADING.match(stripped):
        return "heading"
    verb = has_finite_verb(stripped)
    if not verb and sum(w[:1].isupper() for w in words) >= 0.6 * len(words):
        return "heading"
    if not _TERMINATED.search(stripped):
        return "fragment"  # a docstring line run into the next, or a cut sentence
    return _out_of_context(stripped) or (None if verb else "verbless")


def _out_of_context(text: str) -> str | None:
    """ "fragment" for a sentence cut from another, "anaphor" for one that leans on the
    sentence before it, else None."""
    if _CONTINUATION.match(text) or _LOWER_START.match(text):
        return "fragment"
    return "anaphor" if _ANAPHOR.match(text) else None


def is_prose(text: str) -> bool:
    """Whether `text` can be quoted as a claim (`not_prose` finds nothing wrong)."""
    return not_prose(text) is None


__all__ = ["MAX_CHARS", "MIN_CHARS", "has_finite_verb", "is_prose", "not_prose"]
