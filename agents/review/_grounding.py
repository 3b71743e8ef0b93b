"""Whether a model's prose says only what its sources say: the sentences of a summary,
an introduction or a conclusion that name something no source names, or whose words are
mostly not the sources' (`ungrounded`).

A synthesis rewords its sources, so a sentence need not be found in them; but a 1.5B
model's theme summary "presents the concept of Reverse Artificial Intelligence, which
transforms the input data into advertisements" of papers on GANs. Two signs give such a
sentence away, each cheap and each a check a reader can redo:

- a *name* the sources never use: a run of two or more capitalised words ("Reverse
  Artificial Intelligence") whose words do not occur together in any source;
- *words* the sources never use: fewer than `MIN_SHARE` of the sentence's terms
  (`agents.tools.terms`: stems, no stopwords) occur in the sources or in the words every
  review uses to talk about its papers (`REVIEW_WORDS`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from kimmy_swarm.agents.tools.corpus import Document
from kimmy_swarm.agents.tools.passages import sentences
from kimmy_swarm.agents.tools.terms import tokenize_terms

#: The least share of a sentence's terms that its sources (or `REVIEW_WORDS`) must hold.
MIN_SHARE = 0.5
#: Sentences with fewer terms than this are too short to judge by their words.
MIN_TERMS = 6

#: What a review says about its papers without taking it from them.
_REVIEW_TEXT = """
    review reviews reviewed survey surveys paper papers work works study studies studied
    research researcher researchers author authors theme themes section sections topic
    topics field area areas line lines approach approaches method methods technique
    techniques model models framework frameworks idea ideas concept concepts question
    questions problem problems challenge challenges issue issues limitation limitations
    result results finding findings evidence number numbers trend trends year years
    introduce introduces introduced propose proposes proposed present presents presented
    describe describes described show shows showed shown demonstrate demonstrates
    demonstrated report reports reported find finds found discuss discusses discussed
    address addresses addressed explore explores explored examine examines examined focus
    focuses focused highlight highlights highlighted investigate investigates investigated
    consider considers considered analyse analyses analyze analyzes analysis compare
    compares compared comparison contrast contrasts differ differs difference differences
    share shares shared common similar similarly other others several many various different
    both each first second third one two three four five six seven eight nine ten new
    recent recently improve improves improved improvement performance better best use uses
    used using apply applies applied application applications cover covers covered
    organise organised organize organized overview summary summarise summarize conclusion
    conclude concludes future direction directions open remain remains remaining include
    includes including key main major important central contribution contributions cite
    cites cited citation citations most more less further aim aims goal goals provide
    provides provided offer offers offered reach reaches well known
"""
REVIEW_WORDS = frozenset(tokenize_terms(_REVIEW_TEXT))
#: Two or more capitalised words in a row ("Reverse Artificial Intelligence").
_CAPITAL = r"[A-Z][\w-]*(?:['’]s)?"
_NAME = re.compile(rf"\b{_CAPITAL}(?:\s+(?:(?:of|for|the|on|in|to|de|van|von)\s+)?{_CAPITAL})+")
_WORDS = re.compile(r"[^\W_]+")


def _words(text: str) -> str:
    """`text`'s words, lower-case, one space apart, with a space at each end."""
    return " " + " ".join(_WORDS.findall(text.lower())) + " "


def _unknown_names(sentence: str, known: str) -> list[str]:
    """The capitalised names of `sentence` whose words `known` (`_words`) never has in a
    row; a sentence's first word is not a name's by its capital alone."""
    out = []
    for found in _NAME.finditer(sentence):
        name = found.group(0)
        if found.start() == 0 or sentence[: found.start()].rstrip().endswith((".", ":")):
            name = name.split(None, 1)[1] if " " in name else ""  # "This Theme" → "Theme"
        words = _words(name)
        capitals = sum(w[:1].isupper() for w in name.split())
        if capitals >= 2 and words not in known:
            out.append(name.strip())
    return out


def ungrounded(text: str, sources: Iterable[str]) -> list[str]:
    """The sentences of `text` that name what no source names, or whose terms are less
    than `MIN_SHARE` the sources' (see the module), each with why, in order."""
    sources = list(sources)
    known = " ".join(_words(s) for s in sources)
    vocabulary = {t for s in sources for t in tokenize_terms(s)} | REVIEW_WORDS
    out = []
    for passage in sentences(Document(id="prose", title="", text=text)):
        sentence = passage.text
        names = _unknown_names(sentence, known)
        if names:
            out.append(f"{sentence!r} (names {', '.join(names)}, which no paper names)")
            continue
        terms = tokenize_terms(sentence)
        if len(terms) >= MIN_TERMS:
            share = sum(t in vocabulary for t in terms) / len(terms)
            if share < MIN_SHARE:
                out.append(f"{sentence!r} (only {share:.0%} of its words are the papers')")
    return out


__all__ = ["MIN_SHARE", "MIN_TERMS", "REVIEW_WORDS", "ungrounded"]
