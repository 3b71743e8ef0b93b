"""Themes as lines of research: papers grouped by the problems and methods they name.

A reader names a theme of a review by what its papers work on ("energy-based GANs",
"imitation learning", "exploration"), not by the words their abstracts happen to share.
So the grouping reads each paper's *focus*: its title and the sentences that state its
contribution (the caller picks them; by default the title and the text's first two
sentences). Its key terms (`agents.tools._line_keys`) are the words and phrases there
that the set's papers use far more often than the corpus they come from does; themes are
seeded greedily by them, each named by how its papers write its key term
(`agents.tools._line_names`): a phrase holding it that most of them carry, two joined
("missing modes and mode collapse"), a word alone only when it names a process or is a
compound noun ("exploration"); a kind of the topic with the topic's noun ("hierarchical
RL"); never by generic words (`GENERIC_TERMS`), the topic's or the set's own words only,
a benchmark's proper name ("Atari games") or a noun of quantity ("diverse set").

A paper is a member of a theme only where it says what the theme's name says (`_Own`): a
word of the name in its title, contribution or results ("exploration"; not "an ε-greedy
exploration strategy" among its method), a phrase of two words or more there or in its
method ("the general problem of density ratio estimation"); the topic's words aside, and
a hyphenated word written so ("VAE and GAN" is no "VAE-GAN"). A mention in the
background is no reason to join a theme, nor are terms a paper shares with its papers.

The papers left over are grouped again (`_regroup`), by the key terms their titles and
contribution sentences carry, two papers a theme, named more strictly
(`_line_names.late_name`: "dialogue", "auxiliary tasks"; not a bare plural such as
"skills", but "learning skills" where two write that). The rest are put together under
"other work", which says what it is.

A letter joined to a word by a hyphen ("Q-learning", "f-divergence") is read as one word
here (search's terms drop single letters) and shown as the papers write it.
"""

from __future__ import annotations

import dataclasses
import re
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from kimmy_swarm.agents.tools._line_keys import (
    GENERIC_TERMS,
    Key,
    can_name_late,
    carried_in,
    carries,
    cover,
    key_terms,
    leftover_keys,
    vocabulary,
    with_kinds,
)
from kimmy_swarm.agents.tools._line_names import (
    NAME_SHARE,
    late_name,
    names_line,
    seed_name,
    written_by,
)
from kimmy_swarm.agents.tools._phrases import Phrase
from kimmy_swarm.agents.tools.corpus import Document
from kimmy_swarm.agents.tools.search import stem, tokenize_terms
from kimmy_swarm.agents.tools.themes import Theme, check_grouping, default_k

__all__ = ["GENERIC_TERMS", "OTHER_WORK", "is_generic", "research_lines"]

#: The label of the papers no key term names.
OTHER_WORK = "other work"
#: A theme found among the papers no theme holds has at least this many.
_LATE_LEAST = 2
#: A letter joined to a word by a hyphen ("Q-learning", "f-divergence").
_LETTERED = re.compile(r"(?<![\w-])([^\W\d_])[-\u2010\u2011]([^\W\d_]\w*)")

#: A theme as chosen: its seed (a key's index), its members (paper indices), its name.
_Chosen = tuple[int, list[int], str]


def is_generic(name: str) -> bool:
    """Whether a theme name is made of generic words only (`GENERIC_TERMS`) — "machine
    learning", "supervised, approach and feature", "high resolution" — or of none."""
    words = tokenize_terms(_glued(name, {}))
    return not words or all(w in GENERIC_TERMS for w in words)


def _glued(text: str, shown: dict[str, str]) -> str:
    """`text` with its letter compounds written as one word, each noted in `shown` as the
    papers write it; a capital inside ("QLearning") keeps it from reading as a proper
    name."""

    def glue(m: re.Match[str]) -> str:
        glued = m[1] + m[2][0].upper() + m[2][1:]
        shown.setdefault(glued.lower(), f"{m[1]}-{m[2] if m[2][1:].isupper() else m[2].lower()}")
        return glued

    return _LETTERED.sub(glue, text)


def _glued_document(doc: Document, shown: dict[str, str]) -> Document:
    return dataclasses.replace(doc, title=_glued(doc.title, shown), text=_glued(doc.text, shown))


def _glued_map(
    texts: Mapping[str, Sequence[str]] | None, shown: dict[str, str]
) -> Mapping[str, Sequence[str]]:
    return {key: [_glued(t, shown) for t in values] for key, values in (texts or {}).items()}


def _unglued(name: str, shown: Mapping[str, str]) -> str:
    """A name with its glued letter compounds written as the papers write them, in the
    singular where one writes that ("deep Q-network" of "Deep Q-Networks" and "a deep
    Q-network (DQN)")."""

    def written(m: re.Match[str]) -> str:
        word = m[0].lower()
        return shown.get(word.removesuffix("s"), shown.get(word, m[0]))

    return re.sub(r"[^\W_]+", written, name)


def _opening(doc: Document) -> list[str]:
    from kimmy_swarm.agents.tools.passages import sentences

    return [s.text for s in sentences(doc)[:2]]


@dataclass(frozen=True, slots=True)
class _Own:
    """What each paper says of its own work, as terms: `said`, its title, focus and claims
    (what it does and finds); `claimed`, those and its method (`stated`, as written). A
    paper carries a word of a name only where it says what it does or finds (an "ε-greedy
    exploration strategy" in its method makes no exploration paper), a phrase of two words
    or more in its method too ("the general problem of density ratio estimation")."""

    said: list[list[str]]
    claimed: list[list[str]]
    stated: list[str]

    def holds(self, i: int, phrase: Phrase) -> bool:
        """Whether paper `i` carries `phrase` (a word where it says what it does)."""
        return carries((self.said if len(phrase) == 1 else self.claimed)[i], phrase)

    def carriers(self, name: str, topic: Collection[str], rows: Iterable[int]) -> np.ndarray:
        """Which of the papers `rows` carry a theme's name: either part of "a and b", as
        written (its hyphenated words with their hyphen or a space: "VAE and GAN" is no
        "VAE-GAN") or, for two words not joined by a hyphen, with one word inside ("miss
        important modes" carries "missing modes"); the topic's words ("GANs" of
        "energy-based GANs") need not be there."""
        parts = [
            (
                tuple(w for w in tokenize_terms(p) if w not in topic),
                [w for w in p.split() if "-" in w],
            )
            for p in name.split(" and ")
        ]
        return np.array([any(self._carries(i, *part) for part in parts) for i in rows], bool)

    def _carries(self, i: int, words: Phrase, compounds: list[str]) -> bool:
        if not words or any(not written_by(w, [self.stated[i]]) for w in compounds):
            return False
        if self.holds(i, words):
            return True
        text = self.claimed[i]
        pairs = range(len(text) - 2)
        inside = len(words) == 2 and not compounds
        return inside and any(tuple(text[k : k + 3 : 2]) == words for k in pairs)


@dataclass(frozen=True, slots=True)
class _Reading:
    """How the lines read a set of papers: the topic's words (`topic`, as noun and terms
    in `words`), the words no name is made of alone (`common`: generic, the topic's and
    the set's own), the words no key term is made of (`excluded`), and per paper its
    title with its focus (`focus`), those as one text (`said`), its title and abstract
    (`full`), and what it says of its own work (`own`)."""

    documents: Sequence[Document]
    words: tuple[str, frozenset[str]]
    common: frozenset[str]
    excluded: set[str]
    focus: dict[str, list[str]]
    said: list[str]
    full: list[str]
    own: _Own

    @property
    def topic(self) -> frozenset[str]:
        return self.words[1]

    def seed_name(self, key: Key, rows: list[int]) -> str:
        """A first-pass theme's name (`_line_names.seed_name`)."""
        texts, focus = [self.full[i] for i in rows], [self.said[i] for i in rows]
        return key.named or seed_name(
            key.stems, key.shown, texts, self.words, GENERIC_TERMS, focus=focus
        )

    def late_name(self, key: Key, rows: list[int]) -> str:
        """A name among the papers no theme holds (`_line_names.late_name`), from their
        titles and what they say of their own work."""
        titles = [self.documents[i].title for i in rows]
        stated = [self.own.stated[i] for i in rows]
        return key.named or late_name(
            key.stems, key.shown, titles, stated, self.words, GENERIC_TERMS
        )

    def names_line(self, name: str, rows: list[int]) -> bool:
        return names_line(name, self.common, [self.documents[i].text for i in rows])


def _read(
    documents: Sequence[Document],
    focus: Mapping[str, Sequence[str]],
    claims: Mapping[str, Sequence[str]],
    methods: Mapping[str, Sequence[str]],
    exclude_terms: Collection[str],
    noun: str,
) -> _Reading:
    excluded = {stem(w.lower()) for t in exclude_terms for w in str(t).split()}
    topic = frozenset(excluded | {w for t in exclude_terms for w in tokenize_terms(str(t))})
    excluded |= vocabulary(documents)
    lines = {d.id: [d.title, *focus.get(d.id, _opening(d))] for d in documents}
    found = [[*lines[d.id], *claims.get(d.id, ())] for d in documents]
    stated = [
        ". ".join([*f, *methods.get(d.id, ())]) for d, f in zip(documents, found, strict=True)
    ]
    own = _Own(
        [tokenize_terms(". ".join(f)) for f in found], [tokenize_terms(t) for t in stated], stated
    )
    return _Reading(
        documents,
        (noun, topic),
        GENERIC_TERMS | topic | excluded,
        excluded,
        lines,
        [". ".join(lines[d.id]) for d in documents],
        [f"{d.title}. {d.text}" for d in documents],
        own,
    )


def research_lines(
    documents: Sequence[Document],
    *,
    focus: Mapping[str, Sequence[str]] | None = None,
    claims: Mapping[str, Sequence[str]] | None = None,
    methods: Mapping[str, Sequence[str]] | None = None,
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
        claims: per paper id, the sentences that state what it does and finds (its
            contribution and results; besides `focus`), and `methods`, how: a theme's
            members carry its name there or in their title (see `_Own`); default none.
        k: how many themes at most (besides "other work"); default
            `default_k(len(documents))` + 2 found first, then as many as the papers no
            theme holds make (two each at least).
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
    check_grouping(documents, k)
    if not documents:
        return []
    shown: dict[str, str] = {}
    glued = [_glued_document(d, shown) for d in documents]
    texts = [_glued_map(m, shown) for m in (focus, claims, methods)]
    reading = _read(glued, *texts, exclude_terms, topic_noun)
    wide = [_glued_document(d, shown) for d in background]
    return [
        Theme(t.id, _unglued(t.label, shown), tuple(_unglued(w, shown) for w in t.terms), t.doc_ids)
        for t in _lines(reading, k, wide)
    ]


def _lines(reading: _Reading, k: int | None, background: Sequence[Document]) -> list[Theme]:
    """The themes: seeded by the key terms (`cover`), then among the papers none holds."""
    documents, topic = reading.documents, reading.topic
    keys, matrix = key_terms(documents, reading.focus, reading.excluded, background)
    keys, matrix = with_kinds(
        keys, matrix, documents, topic, reading.excluded, background, reading.words[0]
    )
    # Lines of research are finer than clusters: two more than `default_k` by default.
    limit = min(k or default_k(len(documents)) + 2, len(documents))
    least = 2 if len(documents) < 20 else 3
    first = _members(keys, reading, lambda j, rows: reading.seed_name(keys[j], rows))
    chosen = cover(keys, matrix, limit, least, first)
    everyone = range(len(documents))
    named = {j: reading.own.carriers(name, topic, everyone) for j, _, name in chosen}
    in_claims = carried_in(keys, reading.own.claimed, everyone)
    members, other = _attach({j: rows for j, rows, _ in chosen}, named, everyone, in_claims)
    # Then as many themes as the papers no theme holds make, or as `k` leaves.
    known = {key.stems for key in keys}
    keys = keys + leftover_keys(
        documents, other, reading.said, reading.own.claimed, reading.excluded, background, known
    )
    rest = k - len(chosen) if k else len(documents)
    late, late_members, other = _regroup(keys, reading, other, rest)
    grouped = [(name, members[j]) for j, _, name in chosen]
    grouped += [(name, late_members[j]) for j, _, name in late]
    return _themes(keys, reading, grouped, other)


def _members(
    keys: list[Key], reading: _Reading, name_of: Callable[[int, list[int]], str]
) -> Callable[[int, list[int]], tuple[str, list[int]]]:
    """A theme's name (`name_of`, where it names a line) and its members: the papers of
    its seed that carry the name, or the seed where the name holds it (`_Own`)."""

    def named(j: int, rows: list[int]) -> tuple[str, list[int]]:
        name = name_of(j, rows)
        if not name or not reading.names_line(name, rows):
            return "", []
        carry = reading.own.carriers(name, reading.topic, rows)
        if carries(tokenize_terms(name), keys[j].stems):
            carry |= reading.own.carriers(keys[j].shown, reading.topic, rows)
        return name, [i for i, c in zip(rows, carry, strict=True) if c]

    return named


def _attach(
    homes: dict[int, list[int]],
    named: Mapping[int, np.ndarray],
    among: Iterable[int],
    own: np.ndarray,
) -> tuple[dict[int, list[int]], list[int]]:
    """Papers (of `among`) no theme holds join a theme whose name they carry (`named`: per
    theme, which papers do) — of several, the one whose defining terms (those over half of
    its papers carry) they carry most in `own` (papers × keys), then the larger; the rest
    are other work. Terms a paper shares with a theme's papers are no reason to join it."""
    placed = {i for rows in homes.values() for i in rows}
    defining = {j: own[rows].mean(axis=0) > NAME_SHARE for j, rows in homes.items()}
    out = {j: list(rows) for j, rows in homes.items()}
    other = []
    for i in sorted(set(among) - placed):
        fits = [j for j in homes if named[j][i]]
        if not fits:
            other.append(i)
            continue
        best = max(fits, key=lambda j: (int((own[i] & defining[j]).sum()), len(homes[j])))
        out[best].append(i)
    return out, other


def _regroup(
    keys: list[Key], reading: _Reading, rows: list[int], limit: int
) -> tuple[list[_Chosen], dict[int, list[int]], list[int]]:
    """The themes of the papers `rows` by the key terms what they say of their own work
    carries, two papers at least, each named strictly (`_Reading.late_name`) and, for a
    single word, written in a title; their members and the papers still left."""
    own, titles = reading.own, [d.title for d in reading.documents]
    in_claims = carried_in(keys, own.claimed, rows)
    in_title = carried_in(keys, [tokenize_terms(t) for t in titles], rows)

    def name_of(j: int, members: list[int]) -> str:
        if len(keys[j].stems) == 1 and not in_title[members, j].any():
            return ""
        return reading.late_name(keys[j], members)

    found = _members(keys, reading, name_of)
    late = cover(keys, in_claims, limit, _LATE_LEAST, found, can_name_late)
    everyone = range(len(titles))
    named = {j: own.carriers(label, reading.topic, everyone) for j, _, label in late}
    members, left = _attach({j: rows for j, rows, _ in late}, named, rows, in_claims)
    return late, members, left


def _themes(
    keys: list[Key], reading: _Reading, grouped: list[tuple[str, list[int]]], other: list[int]
) -> list[Theme]:
    """The themes by label (members of themes named alike together), largest first, then
    "other work"; each with its key terms and its members in order (`_terms`, `_ordered`)."""
    groups: dict[str, list[int]] = defaultdict(list)
    for label, rows in grouped:
        groups[label] += rows
    themes = sorted(groups.items(), key=lambda g: (-len(g[1]), g[0]))
    if other:
        themes.append((OTHER_WORK, other))
    ids = [d.id for d in reading.documents]
    matrix = carried_in(keys, [tokenize_terms(t) for t in reading.full], range(len(ids)))
    return [
        Theme(f"theme-{n}", label, _terms(keys, matrix, rows), _ordered(matrix, rows, ids))
        for n, (label, rows) in enumerate(themes, 1)
    ]


def _terms(keys: list[Key], matrix: np.ndarray, rows: list[int]) -> tuple[str, ...]:
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
