"""The terms of a text as search counts them: lower-case words without stopwords and
single letters, lightly stemmed (`tokenize_terms`). Search, topicality, themes and the
claim checks all read a text through these, so that they agree on what a word is.
"""

from __future__ import annotations

import re

__all__ = ["STOPWORDS", "stem", "tokenize_terms"]

# English function words (the NLTK list, plus a few words that carry no topic in abstracts).
_STOPWORD_TEXT = """
    a about above after again against ain all also am an and any are aren as at be because
    been before being below between both but by can could couldn d did didn do does doesn
    doing don down during each et al few for from further had hadn has hasn have haven having
    he her here hers herself him himself his how however i if in into is isn it its itself
    just ll m ma may me might mightn more most must mustn my myself needn no nor not now o of
    off on once only or other our ours ourselves out over own re s same shall shan she should
    shouldn so some such t than that the their theirs them themselves then there therefore
    these they this those through thus to too under until up upon us ve very via was wasn we
    were weren what when where which while who whom why will with won would wouldn y you your
    yours yourself yourselves
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())
_WORD = re.compile(r"[^\W_]+")


def stem(word: str) -> str:
    """Light suffix stripping: plurals, -ing, -ed, -ly and a final -e ("models" -> "model",
    "trained" -> "train", "images" -> "imag"). Crude but consistent, which is what matching
    needs; numbers and short words are left alone."""
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("sses"):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if word.endswith("ing") and len(word) >= 7:
        word = word[:-3]
    elif word.endswith(("ed", "ly")) and len(word) >= 6:
        word = word[:-2]
    if word.endswith("e") and len(word) >= 5:
        word = word[:-1]
    return word


def tokenize_terms(text: str) -> list[str]:
    """Lower-case word terms of `text`, without stopwords and single letters, stemmed."""
    out = []
    for word in _WORD.findall(text.lower()):
        if word in STOPWORDS or (len(word) == 1 and not word.isdigit()):
            continue
        out.append(stem(word))
    return out
