"""Key phrases of a group of texts, for naming themes (`themes.find_themes`).

A candidate phrase is a run of two or three words of a title (or a text's opening) with no
stopword, number or filler word ("using", "towards", "novel") inside it and no punctuation
across it: "Learning to Repeat: Fine Grained Action Repetition for Deep Reinforcement
Learning" gives "fine grained", "grained action", ..., "deep reinforcement learning". Words
are compared stemmed ("Networks" and "network" meet); a phrase is shown in the form its
texts use most, lower-cased unless a word is an acronym or a name such as "GANs", "LSTM",
"ResNet". A group's phrases are ranked by how much more often its texts use them than the
other groups' texts do, so that a phrase every group shares ("neural networks") does not
name any of them.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Collection, Sequence

from kimmy_swarm.agents.tools.search import STOPWORDS, stem

__all__ = ["Phrase", "common_words", "distinctive_phrases", "phrases_of"]

#: A phrase: its words, stemmed.
Phrase = tuple[str, ...]

# Words that start or end no name of a subject in a title; a phrase also does not start
# with the "-ing" word that opens its run of words ("Learning", "Training", "Generating").
_FILLER_TEXT = """
    using use based via towards toward new novel approach approaches method methods
    improving improved improve simple efficient effective fast faster better learn learns
    learned making make study analysis beyond without within across one two three
    provide provides returns return contains implements implement defines define supports
    allows considered deprecated deprecation license copyright author authors version
    module modules package packages function functions class classes much less more many
    few several various consists consist helps describes represents creates gives takes uses
    read reads write writes parse parses per import
"""
_FILLER = frozenset(_FILLER_TEXT.split())
_BREAK = STOPWORDS | _FILLER
# Adverbs ("dynamically", "explicitly") end a name too; these words end in -ly but are not.
_NOT_ADVERBS_TEXT = "early family anomaly assembly supply reply poly monopoly"
_NOT_ADVERBS = frozenset(_NOT_ADVERBS_TEXT.split())
# A name ends with a noun: "deep convolutional" or "generative adversarial" is cut short
# (the longer phrase names the subject), told by the endings of English adjectives.
_ADJECTIVE_ENDINGS = ("ional", "ical", "ive", "ous", "ural", "arial")
_NOUNS_TEXT = """
    objective objectives perspective alternative alternatives derivative derivatives
    primitive primitives representative
"""
_NOUNS_LIKE_ADJECTIVES = frozenset(_NOUNS_TEXT.split())
_WORD = re.compile(r"[^\W\d_][\w'-]*[^\W_]|[^\W\d_]")
# Phrases do not cross punctuation (a colon, a comma, a bracket, a full stop).
_CHUNK = re.compile(r"[^\w\s'-]+|\s-+\s|\s'|'\s|_")
_SIZES = (2, 3)
# A longer phrase replaces a shorter one inside it when it is used at least this often.
_LONGER_SHARE = 0.6


def _shown(word: str) -> str:
    """How a word is shown: lower-cased, but for its parts that are acronyms or names with
    inner capitals ("GANs", "LSTM", "ResNet", "Q-learning"; "Actor-Critic" -> "actor-critic")."""
    parts = word.split("-")

    def keep(part: str) -> bool:
        if len(part) == 1:
            return part.isupper() and len(parts) > 1
        return part.isupper() or any(c.isupper() for c in part[1:])

    return "-".join(p if keep(p) else p.lower() for p in parts)


def phrases_of(text: str, excluded: Collection[str] = ()) -> dict[Phrase, str]:
    """The candidate phrases of `text`, stemmed, with the form they are written in.

    Args:
        text: a title or the opening of a text.
        excluded: stemmed words no phrase may contain (e.g. the review topic's).
    """
    out: dict[Phrase, str] = {}
    for chunk in _CHUNK.split(text):
        run: list[str] = []
        for word in [*_WORD.findall(chunk), ""]:  # "" ends the last run
            low = word.lower()
            key = stem(low)
            adverb = low.endswith("ly") and len(low) > 4 and low not in _NOT_ADVERBS
            if word and not adverb and low not in _BREAK and key not in excluded:
                run.append(word)
                continue
            for size in _SIZES:
                for i in range(len(run) - size + 1):
                    words = run[i : i + size]
                    if words[0].lower().endswith("ing") and i == 0:
                        continue  # "Learning Visual Servoing ...": a verb, not a name
                    last = words[-1].lower()
                    if last.endswith(_ADJECTIVE_ENDINGS) and last not in _NOUNS_LIKE_ADJECTIVES:
                        continue
                    out.setdefault(
                        tuple(stem(w.lower()) for w in words), " ".join(map(_shown, words))
                    )
            run = []
    return out


def common_words(groups: Sequence[Sequence[str]], share: float) -> set[str]:
    """The stemmed words that more than `share` of the texts of most groups (over half of
    them) use: a phrase made of these only ("neural networks" among deep-learning papers)
    names no group."""
    wide: Counter[str] = Counter()
    for texts in groups:
        df: Counter[str] = Counter()
        for text in texts:
            df.update({stem(w.lower()) for w in _WORD.findall(text)})
        wide.update(w for w, c in df.items() if c > share * len(texts))
    return {w for w, n in wide.items() if n > len(groups) / 2}


def _contains(longer: Phrase, shorter: Phrase) -> bool:
    n = len(shorter)
    return len(longer) > n and any(longer[i : i + n] == shorter for i in range(len(longer) - n + 1))


def _pick(ranked: list[Phrase], counts: Counter[Phrase], limit: int) -> list[Phrase]:
    """The best `limit` phrases, a longer phrase taking the place of a shorter one inside it
    when it is used nearly as often, and no phrase inside (or around) one already picked."""
    picked: list[Phrase] = []
    for phrase in ranked:
        longer = [
            p
            for p in ranked
            if _contains(p, phrase) and counts[p] >= _LONGER_SHARE * counts[phrase]
        ]
        if longer:
            phrase = max(longer, key=lambda p: (counts[p], len(p)))
        if any(phrase == p or _contains(p, phrase) or _contains(phrase, p) for p in picked):
            continue
        picked.append(phrase)
        if len(picked) == limit:
            break
    return picked


def distinctive_phrases(
    groups: Sequence[Sequence[dict[Phrase, str]]], *, limit: int = 5
) -> list[list[str]]:
    """Per group of texts (each text given by its `phrases_of`), its most distinctive
    phrases as written: ranked by the share of the group's texts that use a phrase times the
    log of how many times more often they do than the other groups' texts (smoothed). A
    phrase must be used by two texts of the group (one in a group of under four), and more
    often there than elsewhere.

    Returns:
        One list per group, best first, at most `limit` each ([] when none qualifies).
    """
    shown: dict[Phrase, Counter[str]] = defaultdict(Counter)
    per_group: list[Counter[Phrase]] = []
    for texts in groups:
        counts: Counter[Phrase] = Counter()
        for phrases in texts:
            counts.update(phrases.keys())
            for key, form in phrases.items():
                shown[key][form] += 1
        per_group.append(counts)
    total: Counter[Phrase] = sum(per_group, Counter())
    n_all = sum(len(texts) for texts in groups)
    out = []
    for texts, counts in zip(groups, per_group, strict=True):
        n_in, n_out = len(texts), max(n_all - len(texts), 1)
        need = 2 if n_in >= 4 else 1
        # The share of the group's texts that use a phrase, weighted by how many times more
        # often they do than the other texts (log-lift, smoothed): a phrase all groups use
        # ("neural networks") scores near 0 however often it occurs.
        score = {
            p: (c / n_in) * math.log((c / n_in) / ((total[p] - c + 1) / (n_out + 1)))
            for p, c in counts.items()
            if c >= need and c / n_in > (total[p] - c) / n_out
        }
        ranked = sorted(score, key=lambda p: (-score[p], -len(p), p))
        best = _pick(ranked, counts, limit)
        out.append([min(shown[p].items(), key=lambda kv: (-kv[1], kv[0]))[0] for p in best])
    return out
