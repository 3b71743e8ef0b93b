"""The key terms of a set of papers, and the themes they seed (`research_lines`).

A key term is a word or a phrase of two or three words of the papers' focus (title and
contribution sentences) that the set's papers use far more often than the corpus they come
from does (its *lift*), and that no more than `_MAX_SHARE` of them share. Beside them: the
compound adjectives of the same first part as one ("model-based" beside "model-free",
`_kin`), the kinds of the topic its papers name ("hierarchical reinforcement learning",
`_modifier_keys`), and, for the papers no theme holds, the words and phrases of their
titles and contribution sentences (`leftover_keys`). Themes are seeded greedily
(`cover`): each time the key term worth most for the papers no theme holds yet (more
papers, higher lift, a phrase or a word that names a line alone above a bare word) that
can name them.
"""

from __future__ import annotations

import functools
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from kimmy_swarm.agents.tools._line_names import (
    compound_kin,
    is_compound,
    lacks_noun,
    names_alone,
    plain_form,
)
from kimmy_swarm.agents.tools._phrases import Phrase, phrases_of
from kimmy_swarm.agents.tools.corpus import Document
from kimmy_swarm.agents.tools.search import stem, tokenize_terms

__all__ = [
    "GENERIC_TERMS",
    "Key",
    "can_name_late",
    "carried_in",
    "carries",
    "cover",
    "key_terms",
    "leftover_keys",
    "vocabulary",
    "with_kinds",
]

#: Words that name no line of research alone or together ("supervised, approach and
#: feature", "machine learning", "high resolution", "neural network architecture"; the
#: topic's formalism, "decision process"; a testbed, "Atari games").
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
    space loss objective target setting settings kind kinds third fourth fifth decision
    decisions game games downstream value values end
"""
GENERIC_TERMS = frozenset(stem(w) for w in _GENERIC_TEXT.split())
#: A key term is used by at least this many times more of the set's papers than of the
#: corpus's, by at least two papers, and by at most this share of the set (or two).
_MIN_LIFT = 3.0
_MAX_SHARE = 0.3
#: A single word names a theme alone only when the set uses it this many times more often
#: than the corpus ("exploration", not "distribution").
_WORD_LIFT = 4.5
_WORD = re.compile(r"[^\W\d_][\w-]*[^\W_]")


@dataclass(frozen=True, slots=True)
class Key:
    """A key term: its terms, how the papers' focus writes it, and its lift (how many
    times more often the set's papers carry it than the corpus's)."""

    stems: Phrase
    forms: Counter[str]
    lift: float
    #: The name it gives its theme, where it makes one itself (`_modifier_keys`).
    named: str = ""

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


def _candidates(focus: Sequence[str], excluded: set[str]) -> dict[Phrase, str]:
    """The words and phrases of a paper's focus that could name a line of research, as
    their terms (`tokenize_terms`: "energy-based" is ("energy", "bas")) and written form."""
    out: dict[Phrase, str] = {}
    for text in focus:
        forms = list(phrases_of(text).values())
        forms += [w if w.isupper() else w.lower() for w in _WORD.findall(text)]
        for form in forms:
            key = tuple(tokenize_terms(form))
            if not key or (set(key) <= GENERIC_TERMS | excluded and not is_compound(form)):
                continue
            if len(key) == 1 and len(key[0]) < 4:
                continue
            out.setdefault(key, form)
    return out


def title_and_text(documents: Sequence[Document]) -> list[list[str]]:
    """Each document's terms of title and text, in order (`tokenize_terms`)."""
    return [tokenize_terms(f"{d.title}\n{d.text}") for d in documents]


@functools.lru_cache(maxsize=4)
def _corpus_terms(documents: tuple[Document, ...]) -> list[list[str]]:
    return title_and_text(documents)


def corpus_terms(documents: Sequence[Document]) -> list[list[str]]:
    """`title_and_text` of a corpus, kept for the last few corpora: every theme search of a
    review reads its whole corpus (a second of tokenizing, each time, before). Do not
    change the lists."""
    return _corpus_terms(tuple(documents))


def vocabulary(documents: Sequence[Document]) -> set[str]:
    """The set's own vocabulary: words that over `_MAX_SHARE` of its papers (and over
    three) use ("agent", "policy" in a set on reinforcement learning). They split nothing,
    so they name nothing alone or with generic words ("learning agent")."""
    df = Counter(t for d in documents for t in set(tokenize_terms(f"{d.title}\n{d.text}")))
    return {t for t, k in df.items() if k > max(_MAX_SHARE * len(documents), 3)}


def carries(terms: list[str], phrase: Phrase) -> bool:
    """Whether `terms` hold `phrase`, its words in a row."""
    size = len(phrase)
    return any(tuple(terms[i : i + size]) == phrase for i in range(len(terms) - size + 1))


class Carried:
    """Which of several texts' terms carry a phrase (`carries`), answered from each text's
    runs of words of the phrase's length, made once per length: `key_terms` asks it of
    every candidate phrase over the corpus (a hundred thousand `carries` scans, seconds of
    every theme search, before)."""

    def __init__(self, terms: Sequence[list[str]]) -> None:
        self._terms = terms
        self._runs: dict[int, list[frozenset[Phrase]]] = {}
        self._counts: dict[int, Counter[Phrase]] = {}

    def _of(self, size: int) -> list[frozenset[Phrase]]:
        runs = self._runs.get(size)
        if runs is None:
            runs = self._runs[size] = [
                frozenset(tuple(t[i : i + size]) for i in range(len(t) - size + 1))
                for t in self._terms
            ]
            self._counts[size] = Counter(p for r in runs for p in r)
        return runs

    def by(self, i: int, phrase: Phrase) -> bool:
        """Whether text `i` carries `phrase`."""
        return phrase in self._of(len(phrase))[i]

    def count(self, phrase: Phrase) -> int:
        """How many of the texts carry `phrase`."""
        self._of(len(phrase))
        return self._counts[len(phrase)][phrase]


def key_terms(
    documents: Sequence[Document],
    focus: Mapping[str, Sequence[str]],
    excluded: set[str],
    background: Sequence[Document],
) -> tuple[list[Key], np.ndarray]:
    """The set's key terms (with `_kin`) and which papers carry each in title or text
    (papers × keys)."""
    n = len(documents)
    found: dict[Phrase, Counter[str]] = defaultdict(Counter)
    for d in documents:
        for phrase, form in _candidates(focus[d.id], excluded).items():
            found[phrase][form] += 1
    terms = [tokenize_terms(f"{d.title}\n{d.text}") for d in documents]
    own = Carried(terms)
    wide = Carried(corpus_terms(background) if background else terms)
    keys, columns = [], []
    for phrase, forms in sorted(found.items()):
        carried = np.array([own.by(i, phrase) for i in range(n)])
        k = int(carried.sum())
        if k < 2 or k > max(_MAX_SHARE * n, 2):
            continue
        df = wide.count(phrase)
        lift = (k / n) / ((df + 1) / (len(background or documents) + 1))
        if lift >= _MIN_LIFT:
            keys.append(Key(phrase, forms, lift))
            columns.append(carried)
    for kin in _kin(keys, [" ".join(focus[d.id]) for d in documents]):
        keys.append(kin)
        columns.append(np.array([own.by(i, kin.stems) for i in range(n)]))
    matrix = np.column_stack(columns) if columns else np.zeros((n, 0), dtype=bool)
    return keys, matrix


def _modifier_keys(
    documents: Sequence[Document],
    topic: frozenset[str],
    excluded: set[str],
    background: Sequence[Document],
    noun: str,
) -> list[Key]:
    """Kinds of the topic its papers name ("hierarchical reinforcement learning",
    "multi-task deep RL"): a word two papers at least write right before the topic's
    words (`_in`), neither generic nor the set's own; each a key named by it and the
    topic's noun ("hierarchical RL"), of the lift of that use."""
    forms: dict[str, Counter[str]] = defaultdict(Counter)
    for d in documents:
        for form in {m.lower() for m in _modifiers(f"{d.title}\n{d.text}", topic)}:
            stems = tokenize_terms(form)
            if stems and not set(stems) <= GENERIC_TERMS | excluded | topic:
                forms[form.replace("-", "")][form] += 1
    wide = background or documents
    own, corpus = _modified(tuple(documents), topic), _modified(tuple(wide), topic)
    keys = []
    for written in forms.values():
        form = min(written, key=lambda f: (-written[f], "-" not in f, f))
        stems = tuple(tokenize_terms(form))
        k = sum(_in(found, stems) for found in own)
        if k < 2:
            continue
        df = sum(_in(found, stems) for found in corpus)
        lift = (k / len(documents)) / ((df + 1) / (len(wide) + 1))
        keys.append(Key(stems, Counter(written), lift, named=f"{form} {noun}"))
    return keys


#: A word as a text writes it, hyphens kept ("multi-task").
_RAW_WORD = re.compile(r"[^\W_][\w-]*[^\W_]|[^\W_]")


def _modifiers(text: str, topic: frozenset[str]) -> list[str]:
    """The words a text writes right before the topic's own words (those that are not
    generic: "reinforcement", "RL"), generic words between ("hierarchical deep RL")."""
    words = _RAW_WORD.findall(text)
    terms = [set(tokenize_terms(w)) for w in words]
    heads = topic - GENERIC_TERMS
    out = []
    for i in (i for i, t in enumerate(terms) if t & heads):
        j = i - 1
        while j >= 0 and terms[j] and terms[j] <= GENERIC_TERMS:
            j -= 1
        if j >= 0 and terms[j] and not terms[j] & topic:
            out.append(words[j])
    return out


#: The words a text writes before the topic (`_modifiers`): their terms, and each joined.
_Modifiers = tuple[frozenset[Phrase], frozenset[str]]


@functools.lru_cache(maxsize=8)
def _modified(documents: tuple[Document, ...], topic: frozenset[str]) -> list[_Modifiers]:
    """`_modifiers` of each document's title and text, as terms (kept for the last few
    corpora: each theme search asks them of the whole corpus for every kind it weighs)."""
    out = []
    for d in documents:
        found = [tuple(tokenize_terms(m)) for m in _modifiers(f"{d.title}\n{d.text}", topic)]
        out.append((frozenset(found), frozenset("".join(f) for f in found)))
    return out


def _in(found: _Modifiers, stems: Phrase) -> bool:
    """Whether a text writes `stems` (or its form written as one word) before the topic."""
    return stems in found[0] or "".join(stems) in found[1]


def with_kinds(
    keys: list[Key],
    matrix: np.ndarray,
    documents: Sequence[Document],
    topic: frozenset[str],
    excluded: set[str],
    background: Sequence[Document],
    noun: str,
) -> tuple[list[Key], np.ndarray]:
    """`keys` and `matrix` (papers × keys) with the kinds of the topic its papers name
    (`_modifier_keys`) that no key is already; none without the topic's `noun`."""
    if not noun:
        return keys, matrix
    known = {key.stems for key in keys}
    kinds = [
        k
        for k in _modifier_keys(documents, topic, excluded, background, noun)
        if k.stems not in known
    ]
    own = _modified(tuple(documents), topic)
    columns = [[_in(found, k.stems) for found in own] for k in kinds]
    carried = np.array(columns, dtype=bool).T.reshape(len(documents), len(kinds))
    return keys + kinds, np.hstack([matrix, carried])


def _kin(keys: list[Key], focus: Sequence[str]) -> list[Key]:
    """Compound adjectives of the same first part as a key that is one, that two papers'
    focus writes, as keys of its lift ("model-based" beside "model-free": the corpus
    writes "model based on …" too often for its own lift to tell)."""
    known = {k.stems for k in keys}
    out: dict[Phrase, Key] = {}
    for key in keys:
        for form, n in sorted(compound_kin(key.shown, focus).items()):
            stems = tuple(tokenize_terms(form))
            if n > 1 and stems not in known and stems not in out:
                out[stems] = Key(stems, Counter({form: n}), key.lift)
    return list(out.values())


def _late_keys(
    sources: Sequence[str],
    counted: Sequence[list[str]],
    wide: Sequence[list[str]],
    rows: list[int],
    excluded: set[str],
    known: Collection[Phrase],
) -> list[Key]:
    """Key terms of the papers `rows` (no theme holds them): the words and phrases of their
    `sources` (a text per paper) that two of them at least carry in `counted` (terms per
    paper), and that the set's papers carry there `_MIN_LIFT` times more often than the
    corpus's texts (`wide`) do; not in `known` ("dialogue" in titles)."""
    found: dict[Phrase, Counter[str]] = defaultdict(Counter)
    for i in rows:
        for phrase, form in _candidates([sources[i]], excluded).items():
            if phrase not in known:
                found[phrase][form] += 1
    keys = []
    in_set, in_corpus = Carried(counted), Carried(wide)
    for phrase, forms in sorted(found.items()):
        if sum(in_set.by(i, phrase) for i in rows) < 2:
            continue
        k, df = in_set.count(phrase), in_corpus.count(phrase)
        lift = (k / len(counted)) / ((df + 1) / (len(wide) + 1))
        if lift >= _MIN_LIFT:
            keys.append(Key(phrase, forms, lift))
    return keys


def leftover_keys(
    documents: Sequence[Document],
    rows: list[int],
    said: list[str],
    claimed: list[list[str]],
    excluded: set[str],
    background: Sequence[Document],
    known: Collection[Phrase],
) -> list[Key]:
    """The key terms of the papers `rows` no theme holds, not `known`: the words and
    phrases two of their titles use more than the corpus's titles do, then those of their
    titles and contribution sentences (`said`) that two of them carry in title or claims
    (`claimed`) more than the corpus's texts do."""
    wide = background or documents
    titles = [d.title for d in documents]
    title_terms = [tokenize_terms(t) for t in titles]
    wide_titles = [tokenize_terms(d.title) for d in wide]
    out = _late_keys(titles, title_terms, wide_titles, rows, excluded, known)
    wide_terms = corpus_terms(background) if background else title_and_text(documents)
    known = {*known, *(k.stems for k in out)}
    return out + _late_keys(said, claimed, wide_terms, rows, excluded, known)


def _weight(key: Key, gain: int) -> float:
    """What a key term is worth as a theme's seed: the papers it brings, times the log of
    its lift; twice as much when it names a line precisely: a phrase, or a word that
    names a line alone ("exploration", not "game")."""
    return gain**0.5 * float(np.log(key.lift)) * (2.0 if _precise(key) else 1.0)


def _can_name(key: Key) -> bool:
    """Whether a key term can seed a theme: a phrase, a kind of the topic (`named`), or a
    noun specific to the set (not "realistic", "denoise")."""
    if len(key.stems) > 1 or key.named:
        return True
    return key.lift >= _WORD_LIFT and not lacks_noun(key.shown)


def _precise(key: Key) -> bool:
    """Whether a key term names a line precisely: a phrase, or a word that names a line
    alone ("exploration", not "game")."""
    return len(key.stems) > 1 or names_alone(key.shown)


def can_name_late(key: Key) -> bool:
    """Whether a key term can seed a theme among the papers no theme holds: a phrase, a
    kind of the topic, or a noun ("dialogue", not "interactive"); `late_name` then asks
    more of its name."""
    return len(key.stems) > 1 or bool(key.named) or not lacks_noun(key.shown)


def _gives_way(j: int, keys: list[Key], gains: np.ndarray, can_name: Callable[[Key], bool]) -> bool:
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


def cover(
    keys: list[Key],
    matrix: np.ndarray,
    limit: int,
    least: int,
    name_of: Callable[[int, list[int]], tuple[str, list[int]]],
    can_name: Callable[[Key], bool] = _can_name,
) -> list[tuple[int, list[int], str]]:
    """The themes, each as its seed, its papers and its name, chosen greedily: each time
    the key term (`can_name`) worth most for the papers not yet covered (`_weight`) that
    `name_of` (seed, papers) can name with at least `least` of them as members."""
    covered = np.zeros(matrix.shape[0], dtype=bool)
    chosen: list[tuple[int, list[int], str]] = []
    tried: set[tuple[int, tuple[int, ...]]] = set()
    while len(chosen) < limit:
        gains = (matrix & ~covered[:, None]).sum(axis=0)
        fit = [j for j in range(len(keys)) if gains[j] >= least and can_name(keys[j])]
        fit.sort(
            key=lambda j: (
                -_weight(keys[j], int(gains[j])),
                -len(keys[j].stems),
                keys[j].shown,
            )
        )
        for j in fit:
            rows = [int(i) for i in np.flatnonzero(matrix[:, j] & ~covered)]
            if (j, tuple(rows)) in tried or _gives_way(j, keys, gains, can_name):
                continue
            tried.add((j, tuple(rows)))
            name, members = name_of(j, rows)
            if name and len(members) >= least:
                chosen.append((j, members, name))
                covered[members] = True
                break
        else:
            break
    return chosen


def carried_in(keys: list[Key], terms: list[list[str]], rows: Iterable[int]) -> np.ndarray:
    """Which of the papers `rows` carry each key term in `terms` (papers × keys; the other
    papers carry none)."""
    out = np.zeros((len(terms), len(keys)), dtype=bool)
    for i in rows:
        out[i] = [carries(terms[i], key.stems) for key in keys]
    return out
