"""Themes as lines of research: papers grouped by the problems and methods they name.

A reader names a theme of a review by what its papers work on ("energy-based GANs",
"imitation learning", "exploration"), not by the words their abstracts happen to share.
So the grouping reads each paper's *focus*: its title and the sentences that state its
contribution (the caller picks them; by default the title and the text's first two
sentences). Its key terms are the words and phrases of two or three words there
(`agents.tools._phrases`) that the papers of the set use far more often than the corpus
they come from does, and that no more than half of them share (a term every paper uses
splits nothing). Themes are chosen greedily: each time the key term worth most for the
papers no theme holds yet (more papers, higher lift, a phrase or a word that names a line
alone — "exploration" — above a bare word) that can name them, with the papers that carry
it in title or text.

A theme is named by how its papers write its key term (`agents.tools._line_names`): a
phrase holding it that most of them (over half) carry, or two joined that together are
("missing modes and mode collapse"), a phrase preferred to a single word and a word alone
only when it names a process or is a compound noun ("exploration", "f-divergence"); never
by a generic term (`GENERIC_TERMS`: "approach", "machine learning", "high resolution", …)
or the topic's own words; a compound adjective the papers' focus writes less than its
sibling gives way to it ("model-free" → "model-based RL": papers name in their text the
approach they contrast with). A key term that cannot name its papers seeds no theme.
Papers that carry no theme's name join the theme whose name, else whose defining terms,
their focus carries — a mention in the text's background is no reason — and only while
over half of its papers still carry its name.

The papers left over are grouped again, by their titles and contribution sentences only
(titles are where authors name their line): seeds are the key terms, and the words and
phrases two of their titles use far more often than the corpus's titles do
("optimization"); two papers make a theme, but its name must be written in their titles
or contribution sentences and pass `_line_names.late_name` ("dialogue", "auxiliary
tasks"; not a bare plural such as "skills"). The rest are put together under "other
work", which says what it is.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from kimmy_swarm.agents.tools._line_names import (
    NAME_SHARE,
    lacks_noun,
    late_name,
    names_alone,
    plain_form,
    seed_name,
)
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
_N_INIT = 10
_WORD = re.compile(r"[^\W\d_][\w-]*[^\W_]")


@dataclass(frozen=True, slots=True)
class _Key:
    """A key term: its terms, how the papers' focus writes it, and its lift (how many
    times more often the set's papers carry it than the corpus's)."""

    stems: Phrase
    forms: Counter[str]
    lift: float
    #: Found in the titles of the papers no theme holds (its lift is theirs).
    titled: bool = False

    @property
    def shown(self) -> str:
        # The form most used, whatever its case; written the plainest way a paper writes it
        # ("reading comprehension", not "MAchine Reading COmprehension"'s "reading
        # COmprehension" or an all-capitals title's "READING COMPREHENSION").
        cased: Counter[str] = Counter()
        for form, n in self.forms.items():
            cased[form.lower()] += n
        most = min(cased.items(), key=lambda kv: (-kv[1], kv[0]))[0]
        form = min((f for f in self.forms if f.lower() == most), key=lambda f: (_capitals(f), f))
        return plain_form(form)


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


def _title_keys(
    documents: Sequence[Document],
    rows: list[int],
    excluded: set[str],
    background: Sequence[Document],
    known: Collection[Phrase],
) -> tuple[list[_Key], np.ndarray]:
    """Key terms of the titles of the papers `rows` (no theme holds them): words and
    phrases two titles at least use, this many times more often than the corpus's titles
    (`_MIN_LIFT`; "optimization"), not in `known`; and which papers carry each in title or
    text (papers × keys)."""
    found: dict[Phrase, Counter[str]] = defaultdict(Counter)
    for i in rows:
        for phrase, form in _candidates([documents[i].title], excluded).items():
            if phrase not in known:
                found[phrase][form] += 1
    wide = [tokenize_terms(d.title) for d in background or documents]
    terms = [tokenize_terms(f"{d.title}\n{d.text}") for d in documents]
    keys, columns = [], []
    for phrase, forms in sorted(found.items()):
        df = sum(_carries(t, phrase) for t in wide)
        lift = (forms.total() / len(rows)) / ((df + 1) / (len(wide) + 1))
        if forms.total() > 1 and lift >= _MIN_LIFT:
            keys.append(_Key(phrase, forms, lift, titled=True))
            columns.append([_carries(t, phrase) for t in terms])
    matrix = np.array(columns, dtype=bool).T if columns else np.zeros((len(terms), 0), bool)
    return keys, matrix


def _weight(key: _Key, gain: int) -> float:
    """What a key term is worth as a theme's seed: the papers it brings, times the log of
    its lift; twice as much when it names a line precisely: a phrase, or a word that
    names a line alone ("exploration", not "game")."""
    return gain**0.5 * float(np.log(key.lift)) * (2.0 if _precise(key) else 1.0)


def _can_name(key: _Key) -> bool:
    """Whether a key term can seed a theme: a phrase, or a noun specific to the set (not
    "realistic", "denoise")."""
    if len(key.stems) > 1:
        return True
    return key.lift >= _WORD_LIFT and not lacks_noun(key.shown)


def _precise(key: _Key) -> bool:
    """Whether a key term names a line precisely: a phrase, or a word that names a line
    alone ("exploration", not "game")."""
    return len(key.stems) > 1 or names_alone(key.shown)


def _can_name_late(key: _Key) -> bool:
    """Whether a key term can seed a theme among the papers no theme holds: a phrase, or a
    noun ("dialogue", not "interactive"); `late_name` then asks more of its name."""
    return len(key.stems) > 1 or not lacks_noun(key.shown)


def _gives_way(
    j: int, keys: list[_Key], gains: np.ndarray, can_name: Callable[[_Key], bool]
) -> bool:
    """Whether a phrase seed gives way to a word of it that names a process alone and more
    papers carry ("exploration strategies" to "exploration")."""
    words = set(keys[j].stems) if len(keys[j].stems) > 1 else set()
    return any(
        len(key.stems) == 1
        and key.stems[0] in words
        and gains[i] > gains[j]
        and can_name(key)
        and names_alone(key.shown)
        for i, key in enumerate(keys)
    )


def _cover(
    keys: list[_Key],
    matrix: np.ndarray,
    limit: int,
    least: int,
    name_of: Callable[[int, list[int]], str],
    can_name: Callable[[_Key], bool] = _can_name,
) -> list[tuple[int, list[int], str]]:
    """The themes, each as its seed, its papers and its name, chosen greedily: each time
    the key term (`can_name`) worth most for the papers not yet covered (`_weight`) that
    brings at least `least` and that `name_of` (seed, papers) can name."""
    covered = np.zeros(matrix.shape[0], dtype=bool)
    chosen: list[tuple[int, list[int], str]] = []
    tried: set[tuple[int, tuple[int, ...]]] = set()
    while len(chosen) < limit:
        gains = (matrix & ~covered[:, None]).sum(axis=0)
        fit = [j for j in range(len(keys)) if gains[j] >= least and can_name(keys[j])]
        fit.sort(
            key=lambda j: (-_weight(keys[j], int(gains[j])), -len(keys[j].stems), keys[j].shown)
        )
        for j in fit:
            rows = [int(i) for i in np.flatnonzero(matrix[:, j] & ~covered)]
            if (j, tuple(rows)) in tried or _gives_way(j, keys, gains, can_name):
                continue
            tried.add((j, tuple(rows)))
            name = name_of(j, rows)
            if name:
                chosen.append((j, rows, name))
                covered[rows] = True
                break
        else:
            break
    return chosen


def _attach(
    matrix: np.ndarray,
    homes: dict[int, list[int]],
    among: Collection[int] | None = None,
    *,
    own: np.ndarray | None = None,
    named: Mapping[int, np.ndarray] | None = None,
    calls: Mapping[int, np.ndarray] | None = None,
) -> tuple[dict[int, list[int]], list[int]]:
    """Papers (of `among`, default all) that carry no theme's name join the theme whose
    defining terms (those over half of its papers carry) they carry most of in `own`
    (their title and contribution sentences; default `matrix`), one at least, as long as
    most of its papers still carry its name; the rest are other work. A paper that only
    mentions a theme's terms in passing (its background) does not join it. `named`: per
    theme, which papers carry its name (default: those that carry its seed); `calls`:
    which carry it in their own sentences — those join it first ("model-based RL", named
    by its papers' focus, takes a paper whose contribution is model-based RL)."""
    placed = {i for rows in homes.values() for i in rows}
    defining = {j: matrix[rows].mean(axis=0) > NAME_SHARE for j, rows in homes.items()}
    own = matrix if own is None else own
    carry = {j: matrix[:, j] if named is None else named[j] for j in homes}
    out = {j: list(rows) for j, rows in homes.items()}
    other = []
    for i in range(matrix.shape[0]) if among is None else sorted(among):
        if i in placed:
            continue
        fits = {
            j: int((own[i] & defining[j]).sum()) + (own.shape[1] if calls and calls[j][i] else 0)
            for j in homes
            if 2 * (int(carry[j][out[j]].sum()) + int(carry[j][i])) > len(out[j]) + 1
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
    topic = frozenset(excluded | {w for t in exclude_terms for w in tokenize_terms(str(t))})
    excluded |= _vocabulary(documents)
    texts = {d.id: [d.title, *(focus or {}).get(d.id, _opening(d))] for d in documents}
    keys, matrix = _key_terms(documents, texts, excluded, background)
    # Lines of research are finer than clusters: two more than `default_k` by default.
    limit = min(k or default_k(len(documents)) + 2, len(documents))
    full = [f"{d.title}. {d.text}" for d in documents]

    lines = [texts[d.id] for d in documents]
    said = [". ".join(t) for t in lines]

    def name_of(j: int, rows: list[int]) -> str:
        key = keys[j]
        words = (topic_noun, topic)
        focus_texts = [said[i] for i in rows]
        return seed_name(
            key.stems, key.shown, [full[i] for i in rows], words, GENERIC_TERMS, focus=focus_texts
        )

    least = 2 if len(documents) < 20 else 3
    chosen = _cover(keys, matrix, limit, least, name_of)
    terms = [tokenize_terms(t) for t in full]
    said_terms = [tokenize_terms(t) for t in said]
    in_focus = _carried_in(keys, said_terms, range(len(documents)))
    named = {j: _name_carriers(name, terms, topic) for j, _, name in chosen}
    calls = {j: _name_carriers(name, said_terms, topic) for j, _, name in chosen}
    homes = {j: rows for j, rows, _ in chosen}
    members, other = _attach(matrix, homes, own=in_focus, named=named, calls=calls)
    # The papers no theme holds are grouped again, by their titles and contribution
    # sentences only, two papers at least, named more strictly (see the module).
    extra, extra_matrix = _title_keys(
        documents, other, excluded, background, [k.stems for k in keys]
    )
    keys, matrix = keys + extra, np.hstack([matrix, extra_matrix])

    def late_name_of(key: _Key, titles: list[str], focus_texts: list[str]) -> str:
        words = (topic_noun, topic)
        alone = not key.titled
        return late_name(
            key.stems, key.shown, titles, focus_texts, words, GENERIC_TERMS, alone=alone
        )

    late, late_members, other = _regroup(keys, lines, other, limit, late_name_of, topic)
    members |= late_members
    labels = {j: name for j, _, name in [*chosen, *late]}
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


def _regroup(
    keys: list[_Key],
    lines: list[list[str]],
    rows: list[int],
    limit: int,
    name: Callable[[_Key, list[str], list[str]], str],
    topic: Collection[str] = (),
) -> tuple[list[tuple[int, list[int], str]], dict[int, list[int]], list[int]]:
    """The themes of the papers `rows` by the key terms their title and contribution
    sentences (`lines`) carry, two papers at least, each named by `name` (key, titles,
    lines) and, for a single word, written in a title; their members (with the papers
    that carry their defining terms there) and the papers still left."""
    in_focus = _carried_in(keys, [tokenize_terms("\n".join(t)) for t in lines], rows)
    in_title = _carried_in(keys, [tokenize_terms(t[0]) for t in lines], rows)

    def name_of(j: int, members: list[int]) -> str:
        if len(keys[j].stems) == 1 and not in_title[members, j].any():
            return ""
        return name(keys[j], [lines[i][0] for i in members], [". ".join(lines[i]) for i in members])

    late = _cover(keys, in_focus, limit, 2, name_of, _can_name_late)
    said = [tokenize_terms("\n".join(t)) for t in lines]
    named = {j: _name_carriers(label, said, topic) for j, _, label in late}
    members, left = _attach(in_focus, {j: found for j, found, _ in late}, rows, named=named)
    return late, members, left


def _name_carriers(name: str, terms: list[list[str]], topic: Collection[str]) -> np.ndarray:
    """Which papers (their `terms`) carry a theme's name: either part of "a and b", as
    written or, for two words, with one word inside ("miss important modes" carries
    "missing modes"); the topic's words ("GANs" of "energy-based GANs") need not be there."""
    parts = [[w for w in tokenize_terms(p) if w not in topic] for p in name.split(" and ")]

    def carries(text: list[str]) -> bool:
        for words in filter(None, parts):
            if _carries(text, tuple(words)):
                return True
            pairs = range(len(text) - 2)
            if len(words) == 2 and any(text[i : i + 3 : 2] == words for i in pairs):
                return True
        return False

    return np.array([carries(t) for t in terms], dtype=bool)


def _carried_in(keys: list[_Key], terms: list[list[str]], rows: Iterable[int]) -> np.ndarray:
    """Which of the papers `rows` carry each key term in `terms` (papers × keys; the other
    papers carry none)."""
    out = np.zeros((len(terms), len(keys)), dtype=bool)
    for i in rows:
        out[i] = [_carries(terms[i], key.stems) for key in keys]
    return out


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
