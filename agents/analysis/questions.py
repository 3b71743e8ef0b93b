"""Which columns a question is about: by name, by word (plurals folded), and by synonym.

"Which species has the longest sepals?" on iris: "sepals" is the word "sepal" of
"sepal length (cm)" and "sepal width (cm)", "longest" points to the length, and "species"
(like "class", "type", "group") is the dataset's categorical target — so the question is a
grouped comparison of "sepal length (cm)" across "target", highest mean wanted.

Rules, in order:
- a column whose whole name appears (any case, "_" as a space) is named outright;
- else a column is named when at least half of its words appear in the question (words
  are lower-cased, plurals folded, units such as "cm" and words such as "of" ignored, and
  adjectives mapped to the dimension they measure: "longest" → "length"), one of them
  said outright;
- the group is the column after a comparison cue ("which X", "by X", "across X",
  "between X", "per X", "each X"): a group word means the categorical target; else a
  group word or a class name ("malignant") anywhere; the group column must take
  2..`MAX_GROUPS` values;
- else a question word the name does not account for, or its simple stem ("employment",
  "employed" → "employ"), that appears in a column's description from the dataset's own
  metadata names that column, scored below any name match ("What drives employment?" on
  longley: TOTEMP, "Total Employment");
- the values compared are the numeric columns named best (ties kept), the group excluded;
  a question with a group but no value (only "species" on wine) names no value to compare;
- a question that names nothing but asks about the outcome in general terms ("What drives
  the outcome?", "What predicts the target?") is about the designated target.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from kimmy_swarm.agents.tools.groups import groupable
from kimmy_swarm.agents.tools.stats import numeric_columns

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "GROUP_WORDS",
    "Comparison",
    "QuestionColumns",
    "asks_for_outcome",
    "match_question",
    "named_columns",
    "question_words",
    "stem",
]

Comparison = Literal["highest", "lowest", "differ"]

#: Words that mean "the categorical target" (the classes of a classification dataset).
GROUP_WORDS = frozenset(
    {
        "species", "class", "type", "group", "category", "kind", "variety", "cultivar",
        "label", "diagnosis", "cluster", "breed",
    }
)  # fmt: skip
# Adjectives -> the dimension they measure (matched against column words).
_DIMENSIONS = {
    "length": ("long", "longer", "longest", "short", "shorter", "shortest"),
    "width": ("wide", "wider", "widest", "narrow", "narrower", "narrowest", "broad"),
    "height": ("tall", "taller", "tallest"),
    "weight": ("heavy", "heavier", "heaviest", "light", "lighter", "lightest"),
    "age": ("old", "older", "oldest", "young", "younger", "youngest"),
}
_SYNONYMS = {adj: dim for dim, adjs in _DIMENSIONS.items() for adj in adjs}
_HIGH = frozenset(
    {
        "highest",
        "higher",
        "most",
        "more",
        "largest",
        "larger",
        "biggest",
        "bigger",
        "greatest",
        "greater",
        "maximum",
        "max",
        "top",
        "longest",
        "longer",
        "widest",
        "wider",
        "tallest",
        "taller",
        "heaviest",
        "heavier",
        "oldest",
        "older",
        "best",
    }
)
_LOW = frozenset(
    {
        "lowest",
        "lower",
        "least",
        "less",
        "fewest",
        "fewer",
        "smallest",
        "smaller",
        "minimum",
        "min",
        "shortest",
        "shorter",
        "narrowest",
        "narrower",
        "lightest",
        "lighter",
        "youngest",
        "younger",
        "worst",
    }
)
_CUES = frozenset({"which", "by", "across", "between", "among", "per", "each", "every"})
_FILLER = frozenset({"the", "a", "an", "each", "every", "different", "two", "three", "its"})
# Column words that say nothing about what the column is (units, and statistics: "mean"
# of "mean radius" is in any question about means).
_NOISE = frozenset({"of", "the", "a", "an", "and", "in", "on", "at", "to", "per", "cm", "mm",
                    "m", "kg", "g", "s", "pct", "percent", "mean", "average"})  # fmt: skip
_KEEP = ("ss", "us", "is", "species", "series")
# A description match scores at most this, below any match by name (0.5 or more).
_DESCRIBED = 0.45
# Words that ask about the outcome in general terms ("what drives the outcome?").
_OUTCOME = frozenset({"outcome", "target", "response", "dependent", "drive", "driver",
                      "predict", "predictor", "explain", "determine", "determinant",
                      "influence", "affect", "cause", "factor"})  # fmt: skip
# Question words that say nothing about which column is meant (never read in descriptions:
# "total", "number" and "rate" qualify a quantity, they do not name one).
_GENERIC = _OUTCOME | _NOISE | _FILLER | _CUES | _HIGH | _LOW | GROUP_WORDS | frozenset(
    {
        "what", "who", "whom", "how", "why", "when", "where", "doe", "do", "did", "is",
        "are", "was", "were", "be", "been", "has", "have", "had", "can", "could", "would",
        "should", "will", "may", "might", "for", "or", "with", "from", "about", "it", "this",
        "that", "these", "those", "there", "their", "they", "we", "you", "me", "my", "our",
        "data", "dataset", "column", "variable", "value", "much", "many", "relate",
        "relation", "relationship", "effect", "impact", "total", "number", "rate", "level",
        "share", "amount", "size", "count", "index", "measure", "percentage", "proportion",
    }
)  # fmt: skip
_STEM_SUFFIXES = ("ment", "ing", "ed", "ee", "er")


def _singular(word: str) -> str:
    if len(word) <= 3 or word.endswith(_KEEP):
        return word
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith(("sses", "xes", "ches", "shes")):
        return word[:-2]
    return word[:-1] if word.endswith("s") else word


def question_words(text: str) -> list[str]:
    """The words of a text, lower-cased, plurals folded ("sepals" → "sepal")."""
    return [_singular(w) for w in re.findall(r"[a-z0-9]+", text.lower())]


def stem(word: str) -> str:
    """A word's simple stem: plural folded, then one of -ment, -ing, -ed, -ee, -er cut when
    four letters are left ("employment", "employed", "employees" → "employ")."""
    folded = _singular(word.lower())
    for suffix in _STEM_SUFFIXES:
        if folded.endswith(suffix) and len(folded) - len(suffix) >= 4:
            return folded[: -len(suffix)]
    return folded


def _content(text: str, skip: frozenset[str] | set[str] = frozenset()) -> dict[str, str]:
    """The words of a text that can say what a column is: {stem: the word as written}."""
    out: dict[str, str] = {}
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        folded, root = _singular(word), stem(word)
        if len(word) >= 3 and not {folded, root} & (_GENERIC | skip):
            out.setdefault(root, word)
    return out


def asks_for_outcome(question: str) -> bool:
    """Whether a question asks about the outcome in general terms and names nothing else
    ("What drives the outcome?", "What predicts the target?"; not "What drives rainfall?")."""
    said = any(w in _OUTCOME or stem(w) in _OUTCOME for w in question_words(question))
    return said and not _content(question)


def named_columns(question: str, columns: list[str]) -> list[str]:
    """The columns a question names: whole words, any case, "_" may be written as a space."""
    named = []
    for column in columns:
        for form in {column, column.replace("_", " ")}:
            pattern = rf"(?<![A-Za-z0-9_]){re.escape(form)}(?![A-Za-z0-9_])"
            if re.search(pattern, question, flags=re.IGNORECASE):
                named.append(column)
                break
    return named


@dataclass(frozen=True)
class QuestionColumns:
    """What a question asks of one dataset.

    Attributes:
        named: every column the question names (whole name or words), best match first.
        values: the numeric columns asked about (the group excluded), best match first.
        group: the column whose groups are compared (None: no grouped comparison).
        comparison: highest / lowest mean wanted, or whether the values differ at all.
        readings: how the question was read where no column name said it, one sentence
            per value column ("'employment' read as TOTEMP (Total Employment, from the
            dataset's description)").
        outcome: the question names no column but asks about the outcome in general
            terms; `values` is then the designated target, if it is numeric.
    """

    named: list[str] = field(default_factory=list)
    values: list[str] = field(default_factory=list)
    group: str | None = None
    comparison: Comparison | None = None
    readings: list[str] = field(default_factory=list)
    outcome: bool = False


def _scores(words: list[str], columns: list[str], question: str) -> dict[str, float]:
    """Each named column's share of its words in the question (1.0: named outright)."""
    said = set(words)
    implied = {_SYNONYMS[w] for w in words if w in _SYNONYMS}
    scores = dict.fromkeys(named_columns(question, columns), 1.0)
    for column in columns:
        own = [w for w in question_words(column) if w not in _NOISE]
        hits = sum(w in said or w in implied for w in own)
        # a dimension alone ("longest" → length) does not name "petal length (cm)"
        if own and column not in scores and any(w in said for w in own) and hits * 2 >= len(own):
            scores[column] = hits / len(own)
    return scores


def _described(
    question: str,
    scores: dict[str, float],
    descriptions: Mapping[str, str],
) -> dict[str, tuple[float, list[str]]]:
    """Columns named through their descriptions: {column: (score, the words that named it)}.

    Only words no name match accounts for count; the score is the share
    of those words the description has, times `_DESCRIBED`.
    """
    used = {x for column in scores for x in question_words(column)}
    asked = _content(question, skip=used)
    out: dict[str, tuple[float, list[str]]] = {}
    for column, text in descriptions.items():
        if column in scores or not asked:
            continue
        described = _content(text)
        said = [word for s, word in asked.items() if s in described]
        if said:
            out[column] = (_DESCRIBED * len(said) / len(asked), said)
    return out


def _reading(column: str, said: list[str], description: str) -> str:
    words = " and ".join(f"'{w}'" for w in said)
    return f"{words} read as {column} ({description}, from the dataset's description)"


def _category(frame: pd.DataFrame, target: str | None) -> str | None:
    """The column a group word means: the designated target, else the first text column."""
    if target is not None and groupable(frame, target):
        return target
    numeric = set(numeric_columns(frame))
    return next((str(c) for c in frame.columns if c not in numeric and groupable(frame, c)), None)


def _group(
    words: list[str],
    frame: pd.DataFrame,
    target: str | None,
    scores: dict[str, float],
    labels: Mapping[str, Mapping[str, str]],
) -> str | None:
    """The grouping column: the word after a cue, else any group word or class name."""
    after = []
    for i, w in enumerate(words[:-1]):
        if w in _CUES:
            j = i + 1
            while j < len(words) - 1 and words[j] in _FILLER:
                j += 1
            after.append(words[j])
    for w in after:
        if w in GROUP_WORDS:
            return _category(frame, target)
        for column in scores:
            own = [x for x in question_words(column) if x not in _NOISE]
            if w in own and groupable(frame, column):
                return column
    if any(w in GROUP_WORDS for w in words):
        return _category(frame, target)
    for column, names in labels.items():  # "malignant" names a class of the target
        said = {x for name in names.values() for x in question_words(name)}
        if said & set(words) and groupable(frame, column):
            return column
    return None


def _comparison(words: list[str], group: str | None) -> Comparison | None:
    if group is None:
        return None
    for w in words:
        if w in _HIGH:
            return "highest"
        if w in _LOW:
            return "lowest"
    return "differ"


def match_question(
    question: str,
    frame: pd.DataFrame,
    target: str | None,
    labels: Mapping[str, Mapping[str, str]] | None = None,
    descriptions: Mapping[str, str] | None = None,
) -> QuestionColumns:
    """The columns `question` asks about in `frame`.

    Args:
        question: the question.
        frame: the table.
        target: the designated target (what a group word such as "species" means, and
            what a question about the outcome in general terms is about).
        labels: class names of coded columns ({column: {code: name}}): a question that
            says one ("malignant") compares that column's groups.
        descriptions: what each column measures ({column: text}, the dataset's metadata):
            a question word in a description names that column, below any name match.
    """
    columns = [str(c) for c in frame.columns]
    words = question_words(question)
    scores = _scores(words, columns, question)
    described = _described(question, scores, {
        c: d for c, d in (descriptions or {}).items() if c in columns
    })  # fmt: skip
    scores.update({c: score for c, (score, _) in described.items()})
    order = {w: i for i, w in reversed(list(enumerate(words)))}

    def first_mention(column: str) -> int:
        own = [order[w] for w in question_words(column) if w in order]
        return min(own, default=len(words))

    named = sorted(scores, key=lambda c: (-scores[c], first_mention(c), columns.index(c)))
    group = _group(words, frame, target, scores, labels or {})
    if group is not None and group not in named:
        named.append(group)
    numeric = set(numeric_columns(frame))
    candidates = [c for c in named if c in numeric and c != group]
    best = max((scores[c] for c in candidates), default=0.0)
    values = [c for c in candidates if scores[c] == best]
    readings = [
        _reading(c, described[c][1], (descriptions or {})[c]) for c in values if c in described
    ]
    outcome = not named and asks_for_outcome(question)
    if outcome and target in numeric:  # the general question's choice: the designated target
        named, values = [str(target)], [str(target)]
        readings = [
            f"the question asks about the outcome in general terms: read as {target}, "
            "the dataset's designated target"
        ]
    return QuestionColumns(
        named=named, values=values, group=group, comparison=_comparison(words, group),
        readings=readings, outcome=outcome,
    )  # fmt: skip
