"""Themes as lines of research: papers grouped by the problems and methods they name.

A reader names a theme of a review by what its papers work on ("energy-based GANs",
"imitation learning", "exploration"), not by the words their abstracts happen to share.
So the grouping reads each paper's *focus*: its title and the sentences that state its
contribution (the caller picks them; by default the title and the text's first two
sentences). Its key terms are the words and phrases of two or three words there
(`agents.tools._phrases`) that the papers of the set use far more often than the corpus
they come from does, and that no more than half of them share (a term every paper uses
splits nothing). Papers are clustered (k-means) by the key terms they carry anywhere in
title and text, each term weighted by its rarity in the set.

A theme is named only by a key term that most of its papers (over half) carry, written as
its papers write it, a phrase preferred to a single word; never by a generic term
(`GENERIC_TERMS`: "approach", "machine learning", "high resolution", …) or the topic's own
words. The papers of a cluster that no such term names are put together under "other
work", which says what it is.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from kimmy_swarm.agents.tools._phrases import Phrase, phrases_of
from kimmy_swarm.agents.tools.corpus import Document
from kimmy_swarm.agents.tools.search import stem, tokenize_terms
from kimmy_swarm.agents.tools.themes import Theme, check_grouping, default_k

__all__ = ["GENERIC_TERMS", "OTHER_WORK", "is_generic", "research_lines"]

#: Words that name no line of research alone or together ("supervised, approach and
#: feature", "machine learning", "high resolution", "neural network architecture").
_GENERIC_TEXT = """
    approach approaches method methods model models framework frameworks feature features
    supervised unsupervised performance result results task tasks problem problems data
    dataset datasets algorithm algorithms architecture architectures learning learn
    training train network networks deep neural machine state art high low resolution
    large small new novel simple efficient general different various work paper system
    systems set show propose present use using based number way ability type types
    technique techniques application applications experiment experiments study analysis
    quality image images input inputs output outputs representation representations
    function functions parameter parameters solution solutions variety range time
    process first second two three one several many multiple real world practice
    produce produces provide provides allow allows achieve achieves obtain obtains make
    makes improve improves emph textit textbf cite distribution distributions sample samples
    space loss objective target setting settings kind kinds third fourth fifth
"""
GENERIC_TERMS = frozenset(stem(w) for w in _GENERIC_TEXT.split())
#: The label of the papers no key term names.
OTHER_WORK = "other work"
#: A key term is used by at least this many times more of the set's papers than of the
#: corpus's, by at least two papers, and by at most this share of the set (or two).
_MIN_LIFT = 3.0
_MAX_SHARE = 0.3
#: A single word names a theme alone only when the set uses it this many times more often
#: than the corpus ("exploration", not "distribution").
_WORD_LIFT = 4.5
#: Endings of English adjectives: a single word with one names no theme.
_ADJECTIVE_ENDINGS = ("istic", "ive", "al", "ous", "able", "ible", "ful", "less", "ing", "ed")
#: Endings of verbs ("denoise", "stabilize") and of compound adjectives ("energy-based",
#: "model-free"): a name ending in one lacks its noun.
_VERB_ENDINGS = ("ise", "ize")
_COMPOUND = re.compile(r"-(?:based|free|aware|driven|level|scale|person|like|wise)$", re.I)
#: A theme's name is carried by more than this share of its papers.
_NAME_SHARE = 0.5
_N_INIT = 10
_WORD = re.compile(r"[^\W\d_][\w-]*[^\W_]")


@dataclass(frozen=True, slots=True)
class _Key:
    """A key term: its terms, how the papers' focus writes it, and its lift (how many
    times more often the set's papers carry it than the corpus's)."""

    stems: Phrase
    forms: Counter[str]
    lift: float

    @property
    def shown(self) -> str:
        # The most used form; of equally used ones the plainest ("reading comprehension",
        # not "reading COmprehension").
        return min(self.forms.items(), key=lambda kv: (-kv[1], _capitals(kv[0]), kv[0]))[0]


def _capitals(text: str) -> int:
    return sum(c.isupper() for c in text)


def is_generic(name: str) -> bool:
    """Whether a theme name is made of generic words only (`GENERIC_TERMS`) — "machine
    learning", "supervised, approach and feature", "high resolution" — or of none."""
    words = tokenize_terms(name)
    return not words or all(w in GENERIC_TERMS for w in words)


def _opening(doc: Document) -> list[str]:
    from kimmy_swarm.agents.tools.passages import sentences

    return [s.text for s in sentences(doc)[:2]]


def _candidates(focus: Sequence[str], excluded: set[str]) -> dict[Phrase, str]:
    """The words and phrases of a paper's focus that could name a line of research, as
    their terms (`tokenize_terms`: "energy-based" is ("energy", "bas")) and written form."""
    out: dict[Phrase, str] = {}
    for text in focus:
        forms = list(phrases_of(text).values())
        forms += [w if w.isupper() else w.lower() for w in _WORD.findall(text)]
        for form in forms:
            key = tuple(tokenize_terms(form))
            if not key or set(key) <= GENERIC_TERMS | excluded:
                continue
            if len(key) == 1 and len(key[0]) < 4:
                continue
            out.setdefault(key, form)
    return out


def _vocabulary(documents: Sequence[Document]) -> set[str]:
    """The set's own vocabulary: words that over `_MAX_SHARE` of its papers (and over
    three) use ("agent", "policy" in a set on reinforcement learning). They split nothing,
    so they name nothing alone or with generic words ("learning agent")."""
    df = Counter(t for d in documents for t in set(tokenize_terms(f"{d.title}\n{d.text}")))
    return {t for t, k in df.items() if k > max(_MAX_SHARE * len(documents), 3)}


def _carries(terms: list[str], phrase: Phrase) -> bool:
    size = len(phrase)
    return any(tuple(terms[i : i + size]) == phrase for i in range(len(terms) - size + 1))


def _key_terms(
    documents: Sequence[Document],
    focus: Mapping[str, Sequence[str]],
    excluded: set[str],
    background: Sequence[Document],
) -> tuple[list[_Key], np.ndarray]:
    """The set's key terms and which papers carry each in title or text (papers × keys)."""
    n = len(documents)
    found: dict[Phrase, Counter[str]] = defaultdict(Counter)
    for d in documents:
        for phrase, form in _candidates(focus[d.id], excluded).items():
            found[phrase][form] += 1
    terms = [tokenize_terms(f"{d.title}\n{d.text}") for d in documents]
    wide = background or documents
    wide_terms = [tokenize_terms(f"{d.title}\n{d.text}") for d in wide]
    keys, columns = [], []
    for phrase, forms in sorted(found.items()):
        carried = np.array([_carries(t, phrase) for t in terms])
        k = int(carried.sum())
        if k < 2 or k > max(_MAX_SHARE * n, 2):
            continue
        df = sum(_carries(t, phrase) for t in wide_terms)
        lift = (k / n) / ((df + 1) / (len(wide) + 1))
        if lift >= _MIN_LIFT:
            keys.append(_Key(phrase, forms, lift))
            columns.append(carried)
    matrix = np.column_stack(columns) if columns else np.zeros((n, 0), dtype=bool)
    return keys, matrix


def _weight(key: _Key, gain: int) -> float:
    """What a key term is worth as a theme's seed: the papers it brings, times the log of
    its lift; a phrase twice as much as a word (it names a line more precisely)."""
    return gain**0.5 * float(np.log(key.lift)) * (2.0 if len(key.stems) > 1 else 1.0)


def _lacks_noun(name: str) -> bool:
    """Whether a name ends without its noun: an adjective, a verb or a compound adjective
    ("realistic", "denoise", "energy-based")."""
    last = name.split()[-1].lower() if name.split() else ""
    if _COMPOUND.search(last):
        return True
    return len(name.split()) == 1 and last.endswith(_ADJECTIVE_ENDINGS + _VERB_ENDINGS)


def _can_name(key: _Key) -> bool:
    """Whether a key term can seed a theme: a phrase, or a noun specific to the set (not
    "realistic", "denoise")."""
    if len(key.stems) > 1:
        return True
    return key.lift >= _WORD_LIFT and not _lacks_noun(key.shown)


def _cover(keys: list[_Key], matrix: np.ndarray, limit: int, least: int) -> list[int]:
    """The key terms that seed the themes (`_can_name`), greedily: each time the one worth
    most for the papers not yet covered (`_weight`), while it brings at least `least`."""
    covered = np.zeros(matrix.shape[0], dtype=bool)
    chosen: list[int] = []
    while len(chosen) < limit:
        gains = (matrix & ~covered[:, None]).sum(axis=0)
        fit = [j for j in range(len(keys)) if gains[j] >= least and _can_name(keys[j])]
        if not fit:
            break
        best = min(
            fit,
            key=lambda j: (-_weight(keys[j], int(gains[j])), -len(keys[j].stems), keys[j].shown),
        )
        chosen.append(best)
        covered |= matrix[:, best]
    return chosen


def _phrases_holding(word: str, texts: Sequence[str]) -> dict[Phrase, tuple[str, set[int]]]:
    """The phrases of `texts` that hold `word` (a term), as written, with the texts that
    use each."""
    out: dict[Phrase, tuple[str, set[int]]] = {}
    for i, text in enumerate(texts):
        for form in phrases_of(text).values():
            key = tuple(tokenize_terms(form))
            if len(key) > 1 and word in key and not is_generic(form):
                out.setdefault(key, (form, set()))[1].add(i)
    return out


def _name(key: _Key, texts: Sequence[str], noun: str) -> str:
    """A theme's name, from its seed and the title and text of its papers (`texts`): the
    phrase holding the seed that over half of them use, or two that together are ("mode
    collapse and missing modes"); else the seed itself — completed by the topic's `noun`
    where it lacks one ("energy-based" → "energy-based GANs"); "" when it cannot name."""
    holding = _phrases_holding(key.stems[0], texts)
    if len(key.stems) > 1:
        holding = {
            p: v
            for p, v in holding.items()
            if len(p) > len(key.stems) and _carries(list(p), key.stems)
        }
    ranked = sorted(holding.values(), key=lambda v: (-len(v[1]), -len(v[0]), v[0]))
    ranked = [v for v in ranked if not _lacks_noun(v[0])]
    half = _NAME_SHARE * len(texts)
    whole = len(key.stems) == 1 or _lacks_noun(key.shown)
    if ranked and len(ranked[0][1]) > half and (whole or len(ranked[0][1]) == len(texts)):
        return ranked[0][0]
    two = len(key.stems) == 1 and len(ranked) >= 2 and len(ranked[1][1]) >= 2
    if two and len(ranked[0][1] | ranked[1][1]) > half:
        return f"{ranked[0][0]} and {ranked[1][0]}"
    if _lacks_noun(key.shown):
        return f"{key.shown} {noun}" if noun and len(key.stems) > 1 else ""
    return key.shown if _can_name(key) else ""


def _attach(
    matrix: np.ndarray, homes: dict[int, list[int]]
) -> tuple[dict[int, list[int]], list[int]]:
    """Papers that carry no theme's name join the theme whose defining terms (those over
    half of its papers carry) they carry most of, one at least, as long as most of its
    papers still carry its name; the rest are other work."""
    placed = {i for rows in homes.values() for i in rows}
    defining = {j: matrix[rows].mean(axis=0) > _NAME_SHARE for j, rows in homes.items()}
    out = {j: list(rows) for j, rows in homes.items()}
    other = []
    for i in range(matrix.shape[0]):
        if i in placed:
            continue
        fits = {
            j: int((matrix[i] & defining[j]).sum())
            for j in homes
            if 2 * (len(out[j]) + 1 - len(homes[j])) < len(out[j]) + 1
        }
        best = max(fits, key=lambda j: (fits[j], len(homes[j])), default=None)
        if best is None or fits[best] == 0:
            other.append(i)
        else:
            out[best].append(i)
    return out, other


def research_lines(
    documents: Sequence[Document],
    *,
    focus: Mapping[str, Sequence[str]] | None = None,
    k: int | None = None,
    exclude_terms: Collection[str] = (),
    background: Sequence[Document] = (),
    topic_noun: str = "",
) -> list[Theme]:
    """Group documents into lines of research (see the module).

    Args:
        documents: the papers (ids must be unique).
        focus: per paper id, the sentences that state its problem and contribution (the
            title is always read); default: the text's first two sentences.
        k: how many themes at most (besides "other work"); default
            `default_k(len(documents))` + 2.
        exclude_terms: words never used in names (the review topic's own).
        background: the corpus the documents come from (key terms are rarer there).
        topic_noun: how the topic is named ("GANs"), to complete a name that is only an
            adjective ("energy-based GANs"); without it such a term names no theme.

    Returns:
        Themes sorted by size (largest first, "other work" last) then label, ids
        "theme-1", …; every document in exactly one; members that carry the theme's key
        terms most first. [] for no documents.

    Raises:
        ValueError: `k` < 1, or two documents share an id.
    """
    ids = check_grouping(documents, k)
    if not documents:
        return []
    excluded = {stem(w.lower()) for t in exclude_terms for w in str(t).split()}
    excluded |= _vocabulary(documents)
    texts = {d.id: [d.title, *(focus or {}).get(d.id, _opening(d))] for d in documents}
    keys, matrix = _key_terms(documents, texts, excluded, background)
    # Lines of research are finer than clusters: two more than `default_k` by default.
    limit = min(k or default_k(len(documents)) + 2, len(documents))
    homes: dict[int, list[int]] = {}
    labels: dict[int, str] = {}
    full = [f"{d.title}. {d.text}" for d in documents]
    least = 2 if len(documents) < 20 else 3
    for j in _cover(keys, matrix, limit, least):
        rows = [i for i in np.flatnonzero(matrix[:, j]) if all(i not in r for r in homes.values())]
        name = _name(keys[j], [full[i] for i in rows], topic_noun)
        if name:
            homes[j], labels[j] = rows, name
    members, other = _attach(matrix, homes)
    groups: dict[str, list[int]] = defaultdict(list)
    for j, rows in members.items():
        groups[labels[j]] += rows
    themes = sorted(groups.items(), key=lambda g: (-len(g[1]), g[0]))
    if other:
        themes.append((OTHER_WORK, other))
    return [
        Theme(f"theme-{n}", label, _terms(keys, matrix, rows), _ordered(matrix, rows, ids))
        for n, (label, rows) in enumerate(themes, 1)
    ]


def _terms(keys: list[_Key], matrix: np.ndarray, rows: list[int]) -> tuple[str, ...]:
    """A theme's key terms, most carried first (at most 8)."""
    if not keys:
        return ()
    share = matrix[rows].mean(axis=0)
    order = sorted(range(len(keys)), key=lambda j: (-share[j], -keys[j].lift, keys[j].shown))
    return tuple(keys[j].shown for j in order[:8] if share[j] > 0)


def _ordered(matrix: np.ndarray, rows: list[int], ids: list[str]) -> tuple[str, ...]:
    """A theme's members: those that share most of its key terms first, ties by id."""
    if not rows:
        return ()
    weight = matrix[rows].sum(axis=0)
    return tuple(ids[i] for i in sorted(rows, key=lambda i: (-int(weight @ matrix[i]), ids[i])))
