"""How a line of research is named from the phrases its papers write (`research_lines`).

A theme's seed is a key term; its name is how the theme's papers (title and text) write
the problem or method the seed stands for. A seed of one word is rarely a name by itself
("mode", "game", "density"): it names its theme through the phrases that hold it — the one
over half of the papers use ("density ratio estimation"), or two that together are
("missing modes and mode collapse"; the second used by two papers, or framed by one as its
problem: "the problem of mode collapse", "the missing modes problem"). A paper uses a
phrase as written or with an adjective inside ("miss important modes" uses "missing
modes"). Only a word that names a process ("exploration", "attention", "compression") or
a compound noun ("f-divergence", where most papers write it so, not "KL divergence")
names a theme alone. A compound adjective follows what the papers' focus says they do:
"model-free" gives way to "model-based" when their titles and contribution sentences
write that instead (`_sibling`).

Papers no theme holds are named more strictly (`late_name`), from their titles and what
they say of their own work only; there a singular noun specific to the set that two of
their titles use names them too ("dialogue"), a bare plural or a verb never ("skills",
"learning to attend") — a plural with the activity two write it the object of does
("learning skills") — nor a phrase headed by a noun of quantity ("diverse set").

No name is made only of generic words, the topic's or the set's own, or a benchmark's
proper name ("Atari games"): `names_line`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from kimmy_swarm.agents.tools._phrases import Phrase, phrases_of
from kimmy_swarm.agents.tools.search import STOPWORDS, stem, tokenize_terms

__all__ = [
    "NAME_SHARE",
    "Holding",
    "compound_kin",
    "is_compound",
    "lacks_noun",
    "late_name",
    "names_alone",
    "names_line",
    "phrases_holding",
    "plain_form",
    "seed_name",
    "written_by",
]

#: Endings of English adjectives: a single word with one names no theme.
_ADJECTIVE_ENDINGS = ("istic", "ive", "al", "ous", "able", "ible", "ful", "less", "ing", "ed")
#: Endings of verbs ("denoise", "stabilize") and of compound adjectives ("energy-based",
#: "model-free"): a name ending in one lacks its noun.
_VERB_ENDINGS = ("ise", "ize")
_COMPOUND_ENDS = "based|free|aware|driven|level|scale|person|like|wise"
_COMPOUND = re.compile(rf"-(?:{_COMPOUND_ENDS})$", re.I)
#: Endings of nouns made from verbs, that name a process: "exploration", "imitation",
#: "compression", "attention", "evolution" (not "game", "mode", "density", "skills").
_PROCESS_ENDINGS = ("ation", "ession", "ention", "ution")
#: Endings of the adjectives a phrase may hold inside ("miss important modes").
_INSIDE_ENDINGS = ("ant", "ent", "al", "ive", "ous", "ic", "ful", "less", "able", "ible", "ary")
#: Words by which a text frames a phrase as the problem it works on ("the problem of mode
#: collapse", "the missing modes problem"); a name does not end with one.
_FRAMING = frozenset(stem(w) for w in ("problem", "problems", "issue", "issues"))
#: A name is carried by more than this share of its theme's papers.
NAME_SHARE = 0.5
# Phrases do not cross punctuation; words as `tokenize_terms` reads them.
_PUNCTUATION = re.compile(r"[^\w\s'-]+|\s-+\s|_")
_TERM = re.compile(r"[^\W_]+")
#: The characters that join the parts of a compound: a hyphen, or a dash set for one.
_DASHES = "\\-\u2010\u2011\u2012\u2013\u2014"


@dataclass(slots=True)
class Holding:
    """A phrase of a theme's papers: its terms, its written forms (each with whether it is
    framed as a problem there), the papers that use it, and whether one frames it so."""

    stems: Phrase
    forms: Counter[tuple[bool, str]] = field(default_factory=Counter)
    papers: set[int] = field(default_factory=set)
    framed: bool = False

    @property
    def shown(self) -> str:
        # The form written as a problem's name, else any; the most used, then the longest
        # ("missing modes", not "miss modes").
        framed = Counter({f: n for (p, f), n in self.forms.items() if p})
        forms = framed or Counter({f: n for (_, f), n in self.forms.items()})
        return min(forms.items(), key=lambda kv: (-kv[1], -len(kv[0]), kv[0]))[0]


def lacks_noun(name: str) -> bool:
    """Whether a name ends without its noun: an adjective, a verb or a compound adjective
    ("realistic", "denoise", "energy-based")."""
    last = name.split()[-1].lower() if name.split() else ""
    if _COMPOUND.search(last):
        return True
    return len(name.split()) == 1 and last.endswith(_ADJECTIVE_ENDINGS + _VERB_ENDINGS)


def names_alone(word: str) -> bool:
    """Whether a single word names a line of research by itself: a noun of a process
    ("exploration", "compression") or a compound noun ("f-divergence"); not "game", "mode",
    "energy-based"."""
    word = word.strip()
    if " " in word or lacks_noun(word):
        return False
    return word.lower().endswith(_PROCESS_ENDINGS) or "-" in word.strip("-")


def _trimmed(form: str) -> str:
    """A phrase without the framing word it ends with ("missing modes problem" → "missing
    modes")."""
    words = form.split()
    while words and stem(words[-1].lower()) in _FRAMING:
        words.pop()
    return " ".join(words)


#: Words shown as written: acronyms and names ("GANs", "LSTM", "ResNet"), not a title's
#: stray capitals ("COmprehension").
_NAME_LIKE = re.compile(r"[A-Z0-9]{2,}s?|.*[a-z][A-Z].*|.*-.*")


def _shown_word(word: str) -> str:
    return word if len(word) > 1 and _NAME_LIKE.fullmatch(word) else word.lower()


def plain_form(form: str) -> str:
    """A phrase as a name shows it: lower-cased but for acronyms and names ("MAchine
    Reading COmprehension" → "machine reading comprehension"; "GANs" stays)."""
    return " ".join(_shown_word(w) for w in form.split())


def _runs(text: str) -> list[list[tuple[str, str]]]:
    """The runs of words of a text between punctuation, as (word, term) pairs; a stopword
    has the term "" (`tokenize_terms` skips it, a written form does not)."""
    out = []
    for chunk in _PUNCTUATION.split(text):
        words = []
        for word in _TERM.findall(chunk):
            low = word.lower()
            if low in STOPWORDS:
                words.append((word, ""))
            elif len(low) > 1 or low.isdigit():
                words.append((word, stem(low)))
        out.append(words)
    return out


def _occurrences(runs: list[list[tuple[str, str]]], phrase: Phrase) -> list[tuple[str, bool]]:
    """Where a text uses `phrase`: as written (with its form) or, for two words, with an
    adjective inside (form ""); each with whether it is framed as a problem."""
    found = []
    size = len(phrase)
    for words in runs:
        places = [i for i, (_, t) in enumerate(words) if t]
        terms = [words[i][1] for i in places]
        for n in range(len(terms)):
            gap = int(tuple(terms[n : n + size]) != phrase)
            if gap and not (
                size == 2
                and terms[n : n + 3 : 2] == list(phrase)
                and words[places[n + 1]][0].lower().endswith(_INSIDE_ENDINGS)
            ):
                continue
            end = n + size + gap
            framed = (n > 0 and terms[n - 1] in _FRAMING) or (
                end < len(terms) and terms[end] in _FRAMING
            )
            span = words[places[n] : places[end - 1] + 1]
            written = not gap and all(t for _, t in span)
            found.append((" ".join(_shown_word(w) for w, _ in span) if written else "", framed))
    return found


def phrases_holding(
    word: str, texts: Sequence[str], generic: frozenset[str]
) -> dict[Phrase, Holding]:
    """The phrases (`phrases_of`) of `texts` of two words or more that hold `word` (a term)
    and are not made of `generic` words only, each with the texts that use it."""
    keys: set[Phrase] = set()
    for text in texts:
        for form in phrases_of(text).values():
            form = _trimmed(form)
            key = tuple(tokenize_terms(form))
            if len(key) > 1 and word in key and not set(key) <= generic and not lacks_noun(form):
                keys.add(key)
    out: dict[Phrase, Holding] = {}
    for i, text in enumerate(texts):
        runs = _runs(text)
        for key in sorted(keys):
            for form, framed in _occurrences(runs, key):
                held = out.setdefault(key, Holding(key))
                held.papers.add(i)
                held.framed = held.framed or framed
                if form:
                    held.forms[framed, form] += 1
    return {k: h for k, h in out.items() if h.forms}


def _in_order(longer: Phrase, shorter: Phrase) -> bool:
    """Whether the words of `shorter` occur in `longer` in order ("density ratio
    estimation" holds "density estimation")."""
    rest = iter(longer)
    return all(w in rest for w in shorter)


def _joined(ranked: list[Holding], n: int) -> str:
    """Two phrases that together over half of `n` papers use, the more used first, the
    second used by two papers or framed as a problem, and not inside the first; "" when
    no two are."""
    first = ranked[0]
    rest = [
        h
        for h in ranked[1:]
        if (len(h.papers) > 1 or h.framed)
        and h.papers - first.papers
        and not _in_order(first.stems, h.stems)
    ]
    if not rest:
        return ""
    second = min(rest, key=lambda h: (-len(h.papers - first.papers), not h.framed, h.shown))
    if len(first.papers | second.papers) <= NAME_SHARE * n:
        return ""
    return f"{first.shown} and {second.shown}"


def _within(longer: Phrase, shorter: Phrase) -> bool:
    size = len(shorter)
    return any(longer[i : i + size] == shorter for i in range(len(longer) - size + 1))


def _before_topic(stems: Phrase, text: str, topic: frozenset[str]) -> bool:
    """Whether a text writes `stems` right before a word of the topic ("Energy-based
    Generative Adversarial Networks")."""
    terms = tokenize_terms(text)
    size = len(stems)
    return any(
        tuple(terms[i : i + size]) == stems and terms[i + size] in topic
        for i in range(len(terms) - size)
    )


def written_by(form: str, texts: Sequence[str]) -> int:
    """How many texts write `form` as it is written, a hyphen (or a dash) or a space
    between its parts ("f-divergence": not "KL divergence", which its terms alone would
    match; "actor–critic" is "actor-critic")."""
    parts = [re.escape(p) for p in re.split(r"[-\s]+", form.strip()) if p]
    pattern = re.compile(r"(?<![\w-])" + rf"[{_DASHES}\s]+".join(parts) + r"(?![\w-])", re.I)
    return sum(bool(pattern.search(text)) for text in texts)


def compound_kin(shown: str, texts: Sequence[str]) -> Counter[str]:
    """The compound adjectives of the same first part as `shown` ("model-free") that
    `texts` write, each with how many texts do ({"model-based": 3, "model-free": 2});
    empty where `shown` is no compound adjective."""
    first, _, rest = shown.lower().partition("-")
    if not rest or not _COMPOUND.search(shown):
        return Counter()
    pattern = re.compile(rf"(?<![\w-]){re.escape(first)}[-\s]({_COMPOUND_ENDS})\b", re.I)
    carried: Counter[str] = Counter()
    for text in texts:
        carried.update({f"{first}-{m.lower()}" for m in pattern.findall(text)})
    return carried


def _sibling(stems: Phrase, shown: str, texts: Sequence[str], focus: Sequence[str]) -> str:
    """The compound adjective the papers' focus writes where the seed is one they only
    mention ("model-based" for "model-free": same first part, another ending), when more
    of their focus sentences carry it than the seed and over half of their texts do;
    "" otherwise. A paper names the approach it contrasts with ("unlike model-free
    methods …") in its text, the one it takes in its title and contribution sentences."""
    if len(stems) != 2:
        return ""
    carried = compound_kin(shown, focus)
    own = carried[shown.lower()]
    best = min(carried.items(), key=lambda kv: (-kv[1], kv[0]), default=("", 0))
    if best[0] == shown.lower() or best[1] <= own or 2 * written_by(best[0], texts) <= len(texts):
        return ""
    return f"{shown.partition('-')[0]}-{best[0].partition('-')[2]}"


def seed_name(
    stems: Phrase,
    shown: str,
    texts: Sequence[str],
    topic: tuple[str, frozenset[str]],
    generic: frozenset[str],
    *,
    focus: Sequence[str] = (),
) -> str:
    """A theme's name, from its seed (`stems`, written `shown`) and the title and text of
    its papers (`texts`; `focus`: their titles and contribution sentences, when known);
    "" when it cannot name them (see the module).

    A phrase seed is named by a longer phrase holding it that all its papers use (over
    half, where the seed lacks its noun), else by itself — completed by the topic's `noun`
    where it lacks one and a paper writes it so, before a word of the topic (given as
    noun and terms: "energy-based" → "energy-based GANs", not "first-person RL"). A
    compound adjective the papers' focus carries less than a sibling gives way to it
    ("model-free" → "model-based", `_sibling`). A word seed is named by the phrase holding
    it that over half of its papers use; else by itself if it can (`names_alone`) and,
    written with a hyphen, as written by over half ("f-divergence", not a set that writes
    "KL divergence"); else by two phrases joined.
    """
    sibling = _sibling(stems, shown, texts, focus)
    if sibling:
        stems, shown = tuple(tokenize_terms(sibling)), sibling
    holding = phrases_holding(stems[0], texts, generic)
    n = len(texts)
    if len(stems) > 1:
        # A phrase that only adds the topic's words ("model based reinforcement learning")
        # names nothing the seed and the topic's noun do not ("model-based RL").
        longer = sorted(
            (
                h
                for h in holding.values()
                if len(h.stems) > len(stems)
                and _within(h.stems, stems)
                and not set(h.stems) - set(stems) <= topic[1]
            ),
            key=lambda h: (-len(h.papers), -len(h.stems), h.shown),
        )
        whole = longer and len(longer[0].papers) > NAME_SHARE * n
        if whole and (lacks_noun(shown) or len(longer[0].papers) == n):
            return longer[0].shown
        if lacks_noun(shown):
            noun, words = topic
            before = any(_before_topic(stems, text, words) for text in texts)
            return f"{shown} {noun}" if noun and before else ""
        return shown
    ranked = sorted(
        holding.values(), key=lambda h: (-len(h.papers), not h.framed, -len(h.stems), h.shown)
    )
    if ranked and len(ranked[0].papers) > NAME_SHARE * n:
        return ranked[0].shown
    if names_alone(shown) and ("-" not in shown or 2 * written_by(shown, texts) > n):
        return shown
    return _joined(ranked, n) if ranked else ""


#: Endings of English nouns that are not plurals ("physics", "analysis", "process").
_NOT_PLURAL = ("ss", "us", "is", "ics")


def late_name(
    stems: Phrase,
    shown: str,
    titles: Sequence[str],
    focus: Sequence[str],
    topic: tuple[str, frozenset[str]],
    generic: frozenset[str],
    *,
    alone: bool = True,
) -> str:
    """A name for papers no theme holds, from their titles and contribution sentences
    (`focus`, title included) only; "" when none.

    As `seed_name` over `focus`; else, where `alone` (the seed is specific to the set), a
    single noun, not a plural, that two titles at least use ("dialogue", not "skills": a
    bare plural names things, not a line), or a plural with the activity two of them
    write it as the object of ("learning skills": "Learning Locomotion Skills", "learning
    multiple skills").
    """
    name = seed_name(stems, shown, focus, topic, generic)
    if name and _vague(name, [*titles, *focus]):
        return ""
    if name or len(stems) > 1 or not alone:
        return name
    in_titles = sum(stems[0] in tokenize_terms(t) for t in titles)
    plural = shown.lower().endswith("s") and not shown.lower().endswith(_NOT_PLURAL)
    if plural:
        return _activity(stems[0], shown, focus)
    noun = not lacks_noun(shown) and not _verb_in(stems[0], [*titles, *focus])
    return shown if in_titles > 1 and noun else ""


def _activity(term: str, shown: str, texts: Sequence[str]) -> str:
    """The plural `shown` (of `term`) with the activity that over one text writes it the
    object of, a word at most between ("learning skills"); "" when none."""
    pattern = re.compile(r"\b([^\W\d_]+ing)\s+(?:[^\W\d_][\w-]*\s+)?([^\W\d_]+)\b", re.I)
    found: Counter[str] = Counter()
    for text in texts:
        found.update({m[1].lower() for m in pattern.finditer(text) if stem(m[2].lower()) == term})
    verb, n = min(found.items(), key=lambda kv: (-kv[1], kv[0]), default=("", 0))
    return f"{verb} {shown.lower()}" if n > 1 else ""


#: Nouns of quantity or kind: a phrase they head names a container, not a line ("diverse
#: set", "large amounts", "toy problem").
_CONTAINERS = frozenset(
    stem(w)
    for w in (
        *("set", "amount", "number", "range", "variety", "kind", "type", "way"),
        *("problem", "lot", "part", "collection", "series", "class"),
    )
)


def _vague(name: str, texts: Sequence[str]) -> bool:
    """Whether a phrase names no line: headed by a noun of quantity or kind, or opened by a
    word its papers write as a verb ("gather information": "agents to gather …")."""
    words = tokenize_terms(name)
    if len(words) < 2:
        return False
    return words[-1] in _CONTAINERS or _verb_in(words[0], texts)


def _verb_in(term: str, texts: Sequence[str]) -> bool:
    """Whether a text writes `term` as a verb, after "to" ("learning to attend")."""
    return any(
        stem(after.lower()) == term
        for text in texts
        for after in re.findall(r"\bto\s+([^\W\d_][\w-]*)", text, re.I)
    )


def names_line(name: str, common: Collection[str], texts: Sequence[str]) -> bool:
    """Whether a theme name names a line of research: one of its words is a compound
    adjective ("model-based") or neither `common` (generic words, the topic's and the
    set's own: "reward value" in RL), nor a proper name its papers always write
    capitalised (a benchmark: "Atari games")."""
    return any(
        is_compound(word)
        or (any(w not in common for w in tokenize_terms(word)) and not _proper(word, texts))
        for word in name.split()
    )


def is_compound(form: str) -> bool:
    """Whether a form is one compound adjective ("model-based", "energy-based"): a term of
    its own, whatever its parts are."""
    return " " not in form.strip() and "-" in form and lacks_noun(form)


def _proper(word: str, texts: Sequence[str]) -> bool:
    """Whether two texts at least write `word` and all only capitalised ("Atari"; not
    "GANs", "VAE", "Energy-based", "QLearning")."""
    if not word.isalpha() or word.isupper() or word[1:] != word[1:].lower():
        return False
    pattern = re.compile(rf"(?<![\w-]){re.escape(word)}(?![\w-])", re.IGNORECASE)
    found = [pattern.findall(t) for t in texts]
    return sum(map(bool, found)) > 1 and all(w.istitle() for f in found for w in f)
