"""Offline synthesis of a theme: what its papers share, how they group, what they report.

Extractive, like the rest of the offline policy: the shared phrases are word n-grams that
occur in the notes of two or more of the theme's papers (scikit-learn's `CountVectorizer`
counts them), the groups put each paper under the most widely shared phrase it uses, and
the statements that fill them are the researchers' quoted findings. The numbers two papers
report on the same named benchmark or metric (CIFAR-10, Atari, inception score, human
performance: `shared_benchmarks`) are set side by side, each with the whole clause its
paper states it in; a number whose passage holds a negation, hedge or caveat the clause
would lose ("albeit still far from state-of-the-art") is not set beside another.
Nothing is paraphrased: a phrase is named only with the papers it occurs in.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS, CountVectorizer

from kimmy_swarm.agents.tools.claims import polarity_markers

#: Words too common in papers and documentation to make a phrase worth naming.
_GENERIC = frozenset(
    " ".join(
        (
            "paper papers propose proposed proposes method methods approach approaches result "
            "results show shows shown work works novel new based using use used uses state art "
            "task tasks problem problems demonstrate present presents different existing recent "
            "recently simple large able significantly performance experiments experimental "
            "module modules package function functions class classes provides provide way ways "
            "number set sets given make makes allow allows various important high low better "
            "best good effective efficient improve improves improved achieve achieves main key "
            "order case cases example examples wide range end",
        )
    ).split()
)
_TOKEN = r"(?u)\b[a-zA-Z][a-zA-Z0-9-]+\b"
#: A finite-looking verb form inside a phrase ("consist", "defined", "provide").
_VERB_FORM = re.compile(
    r"(?:consist|contain|define|provide|support|implement|describe|allow|use|return|create"
    r"|represent|require|handle|perform|show|learn|achieve|propose|present|generate)(?:e?d|e?s)?"
)
_WORDS = re.compile(r"[A-Za-z][A-Za-z0-9-]*|[^\sA-Za-z]+")
#: Words that, with the topic, make no line of work of their own ("deep reinforcement
#: learning" in a review of reinforcement learning).
_TOPIC_MODIFIERS = frozenset(
    " ".join(
        (
            "deep algorithm method approach agent problem setting task framework based using "
            "model mechanism network neural architecture system layer",
        )
    ).split()
)
#: A number that measures something: a decimal, a percentage, a factor, "up to N".
_MEASURE = re.compile(
    r"\d+\.\d+|\d\s?(?:%|percent\b|x\b|×|-?fold\b|times\b)|\bup to \d|\b\d+(?:,\d{3})+\b"
    r"|\b(?:by|of|to|from) \d+\b"
)


def _fold(word: str) -> str:
    """The key a word is counted under: lower case, a plural -s dropped ("networks")."""
    low = word.lower()
    return low[:-1] if low.endswith("s") and not low.endswith(("ss", "us", "is")) else low


def _segments(text: str) -> list[list[str]]:
    """Runs of content words: a phrase never spans punctuation or a stop word."""
    runs: list[list[str]] = [[]]
    for token in _WORDS.findall(text):
        if not token[0].isalpha() or token.lower() in ENGLISH_STOP_WORDS:
            if runs[-1]:
                runs.append([])
            continue
        runs[-1].append(token)
    return [r for r in runs if len(r) >= 2]


def _ngrams(text: str, surfaces: dict[str, Counter[str]]) -> list[str]:
    out = []
    for run in _segments(text):
        for n in (2, 3):
            for i in range(len(run) - n + 1):
                words = run[i : i + n]
                key = " ".join(_fold(w) for w in words)
                surfaces.setdefault(key, Counter())[" ".join(w.lower() for w in words)] += 1
                out.append(key)
    return out


@dataclass(frozen=True)
class SharedPhrase:
    """A phrase and the documents (ids, in theme order) whose notes use it."""

    phrase: str
    doc_ids: tuple[str, ...]


def shared_phrases(
    texts: Mapping[str, str],
    *,
    exclude: Collection[str] = (),
    min_docs: int = 2,
    top: int = 8,
) -> list[SharedPhrase]:
    """Two- and three-word phrases that at least `min_docs` of `texts` use, most shared first.

    Args:
        texts: a document id → its text (title, contribution, findings).
        exclude: words (lower case) a phrase may not consist of only — the topic's words,
            which every paper of the review shares by construction.
        min_docs: the fewest documents a phrase must occur in.
        top: the most phrases returned.

    A phrase inside a longer one used by the same documents gives way to the longer one;
    phrases of generic words ("proposed method") are left out.
    """
    ids = [d for d, t in texts.items() if re.search(_TOKEN, t)]
    if len(ids) < min_docs:
        return []
    surfaces: dict[str, Counter[str]] = {}
    vectorizer = CountVectorizer(analyzer=lambda t: _ngrams(t, surfaces), binary=True)
    try:
        counts = vectorizer.fit_transform([texts[d] for d in ids])
    except ValueError:  # only stop words: no phrase at all, which is an answer
        return []
    topic = [_fold(w) for w in exclude]
    excluded = set(topic) | _GENERIC
    df = counts.sum(axis=0).A1
    found: list[SharedPhrase] = []
    for col in sorted(range(len(df)), key=lambda c: -df[c]):
        if df[col] < min_docs:
            break
        key = vectorizer.get_feature_names_out()[col]
        words = key.split()
        if all(w in excluded for w in words) or any(w in _GENERIC for w in words):
            continue
        if any(_VERB_FORM.fullmatch(w) for w in words[1:]):
            continue  # "file consists", "encoding method defined": a clause, not a name
        if any(w in topic for w in words):  # "deep reinforcement", "… learning algorithms"
            rest = [w for w in words if w not in topic]
            if all(w in _TOPIC_MODIFIERS or w in _GENERIC for w in rest):
                continue
        phrase = surfaces[key].most_common(1)[0][0]
        docs = tuple(ids[i] for i in counts[:, col].nonzero()[0])
        found.append(SharedPhrase(phrase, docs))
    kept: list[SharedPhrase] = []
    for p in sorted(found, key=lambda p: (-len(p.doc_ids), -len(p.phrase.split()), p.phrase)):
        if any(p.phrase in k.phrase and p.doc_ids == k.doc_ids for k in found if k is not p):
            continue  # "neural architecture" gives way to "neural architecture search"
        if any(k.phrase in p.phrase and p.doc_ids == k.doc_ids for k in kept):
            continue
        kept.append(p)
    return kept[:top]


def group_by_phrase(
    doc_ids: Sequence[str], phrases: Sequence[SharedPhrase], *, max_groups: int = 4
) -> tuple[list[SharedPhrase], list[str]]:
    """Each document under the most shared phrase it uses; (groups, documents left over).

    A group keeps at least two documents; a document belongs to one group only.
    """
    left = list(doc_ids)
    groups: list[SharedPhrase] = []
    for phrase in phrases:
        if len(groups) == max_groups:
            break
        members = tuple(d for d in left if d in phrase.doc_ids)
        if len(members) >= 2:
            groups.append(SharedPhrase(phrase.phrase, members))
            left = [d for d in left if d not in members]
    return groups, left


def states_measure(text: str) -> bool:
    """Whether `text` states a measured number (a decimal, a percentage, a factor, "up to
    N", "by N"): a result worth setting beside another's. "Atari 2600" is not one."""
    return bool(_MEASURE.search(text))


#: Where the clause of a number ends: a comma, semicolon or colon, a bracket, the
#: sentence's end, or a conjunction that opens another clause.
_FIGURE_END = re.compile(r"\s?[()]|[,;:](?:\s|$)|\.$|\s(?:and|while|which|but|whereas)\s")


def _clause_from(text: str, at: int) -> str:
    """`text` from `at` (a number) to the end of its clause, whole: "84.7% of the classes
    have samples exhibiting diversity comparable to real ImageNet data", never cut at a
    word count (what the number measures and its caveat stay with it)."""
    number = _MEASURE.match(text, at)
    cut = _FIGURE_END.search(text, number.end() if number else at)
    return " ".join(text[at : cut.start() if cut else len(text)].split()).rstrip(".,;:")


#: Datasets, benchmarks and metrics whose numbers two papers can set side by side.
_BENCHMARK = re.compile(
    r"\b(?:CIFAR-?100?|MNIST|SVHN|ImageNet|CelebA|LSUN|STL-10|Omniglot|Atari|MuJoCo|Labyrinth"
    r"|VizDoom|bAbI|SQuAD|Penn Treebank|PTB|MS ?COCO|PASCAL VOC|text8|enwik8|WikiText-\d+|CLEVR"
    r"|TIMIT|[Ii]nception scores?|(?:expert |human-level )?human performance)\b"
    r"|\b(?:on|in) the (?P<named>[A-Z][\w-]*[A-Z0-9][\w-]*) (?:dataset|benchmark|domain)\b"
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


def _benchmark_key(surface: str) -> str:
    low = surface.lower().replace(" ", "")
    if "humanperformance" in low:
        return "human performance"
    return "inception score" if low.startswith("inceptionscore") else low.replace("-", "")


_CLAUSE = re.compile(r"[,;]\s|\s(?:and|while|whereas|but)\s")


def _nearest_figure(sentence: str, at: int, end: int) -> str:
    """The measured number of `sentence` that goes with the benchmark at `at`…`end`: the
    last one before it in its clause ("95.1% accuracy on CIFAR-10"), else the first after it
    in its clause, else the nearest in the sentence; with what it measures."""
    found = list(_MEASURE.finditer(sentence))
    if not found:
        return ""
    bounds = [0, *(m.end() for m in _CLAUSE.finditer(sentence)), len(sentence) + 1]
    lo = max(b for b in bounds if b <= at)
    hi = min(b for b in bounds if b > end)
    before = [m for m in found if lo <= m.start() < at]
    after = [m for m in found if end <= m.start() < hi]
    near = (before[-1:] or after[:1] or [min(found, key=lambda m: abs(m.start() - at))])[0]
    start = near.start()
    while start > 0 and not sentence[start - 1].isspace():
        start -= 1  # "880%" whole, "(3.65" from its number
    lead = re.match(r"(?:of|by|to|from) (?=\d)", sentence[start:])
    start += lead.end() if lead else 0
    start += sentence[start:].startswith("(")
    figure = _clause_from(sentence, start)
    measured = re.search(r"((?:\b(?:an?|the) )?(?:[\w-]+ ){1,3})of $", sentence[:start])
    if measured and figure:  # "a test error rate of 3.65": what is measured comes first
        figure = f"{measured.group(1)}of {figure}"
    named = sentence[at:end]
    # the benchmark closing the clause is said once, before the figure ("On CIFAR-10, …")
    return re.sub(rf"\s+(?:on|in) (?:the )?{re.escape(named)}$", "", figure)


def benchmark_figures(text: str) -> dict[str, tuple[str, str]]:
    """The benchmarks `text` reports a measured number on: key → (the benchmark as the text
    names it, the nearest number with the whole clause that says what it measures): "… on
    Atari, averaging 880% expert human performance" → {"atari": ("Atari", "880% expert
    human performance"), …}. A figure that would lose a negation, hedge or caveat of `text`
    ("These results, albeit still far from state-of-the-art, …") is left out: set beside
    another paper's number without it, it would say more than its paper does."""
    out: dict[str, tuple[str, str]] = {}
    caveats = polarity_markers(text)
    for sentence in _SENTENCE_END.split(text):
        for found in _BENCHMARK.finditer(sentence):
            surface = found.group("named") or found.group(0)
            figure = _nearest_figure(sentence, found.start(), found.end())
            if figure and caveats <= polarity_markers(figure):
                out.setdefault(_benchmark_key(surface), (surface, figure))
    return out


def shared_benchmarks(
    texts: Mapping[str, Sequence[str]],
) -> list[tuple[str, list[tuple[str, str]]]]:
    """The benchmarks on which two or more documents report a measured number: [(the
    benchmark, [(document id, its number with what it measures), …]), …], the most
    reported first, documents in the order of `texts` (a document id → its results)."""
    by_key: dict[str, list[tuple[str, str, str]]] = {}
    for doc_id, results in texts.items():
        seen: dict[str, tuple[str, str]] = {}
        for text in results:
            for key, named in benchmark_figures(text).items():
                seen.setdefault(key, named)
        for key, (surface, figure) in seen.items():
            by_key.setdefault(key, []).append((doc_id, surface, figure))
    shared = [v for v in by_key.values() if len(v) >= 2]
    shared.sort(key=lambda v: -len(v))
    return [(v[0][1], [(d, f) for d, _, f in v]) for v in shared]


def cite_list(cites: Sequence[str], *, at_most: int = 3) -> str:
    """ "(A, 2017; B, 2016; and 4 more)" from short citations "A, 2017"."""
    shown = "; ".join(cites[:at_most])
    more = len(cites) - at_most
    return f"({shown}{f'; and {more} more' if more > 0 else ''})"


__all__ = [
    "SharedPhrase",
    "benchmark_figures",
    "cite_list",
    "group_by_phrase",
    "shared_benchmarks",
    "shared_phrases",
    "states_measure",
]
