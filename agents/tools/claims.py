"""Claim-support checking: does a document contain a passage that backs a claim?

A claim is supported by the best sentence (or run of up to three adjacent sentences) of the
document when enough of its content terms occur there AND every number and named entity of
the claim does AND it keeps the passage's polarity. Numbers and entities are where a
paraphrase goes wrong in ways a term-overlap score cannot see ("95%" written as "99%", a
dataset the paper never used), so they are checked exactly rather than only weighted; so
are the words that turn a statement around or weaken it (`polarity_markers`: "not", "may",
"albeit", "only" …): a claim that drops the passage's "may" or "albeit", or adds a "not",
says something the passage does not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kimmy_swarm.agents.tools.corpus import Document
from kimmy_swarm.agents.tools.passages import Passage, read_passage, sentences
from kimmy_swarm.agents.tools.search import STOPWORDS, stem, tokenize_terms

__all__ = [
    "Support",
    "check_claim",
    "claim_entities",
    "claim_numbers",
    "polarity_markers",
    "strip_citations",
]

_HEAVY = 2.0  # weight of a number or an entity term against 1.0 for other content terms

_NUMBER = re.compile(
    r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(\s?%|\s?percent\b|\s?per\s?cent\b)?(?!\d)"
)
_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-'’][A-Za-z0-9]+)*")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")

_NAME = r"[A-Z][\w'’-]*(?:\s+(?:van|von|de|der|del|da|di|le|la)\s+[A-Z][\w'’-]*)?"
_AUTHORS = rf"{_NAME}(?:\s*(?:,|and|&)\s*{_NAME})*"
_ET_AL = r"\s+et\s+al\.?"
_YEAR = r"\s*[(\[]\s*(?:19|20)\d{2}[a-z]?\s*[)\]]"
_VERB = (
    r"(?:show|find|report|propose|argue|demonstrate|claim|observe|suggest|note|state|prove"
    r"|introduce|present|describe|establish|conclude|confirm)(?:s|ed)?|found|shown|showed"
)
_ATTRIBUTION = re.compile(
    rf"^\s*(?:"
    rf"[Aa]ccording\s+to\s+{_AUTHORS}(?:{_ET_AL})?(?:{_YEAR})?\s*,\s*"
    rf"|{_AUTHORS}(?:{_ET_AL})?{_YEAR}\s*,?\s*(?:(?:{_VERB})\b\s*(?:that\b\s*)?)?"
    rf"|{_AUTHORS}{_ET_AL}\s*(?:{_VERB})\b\s*(?:that\b\s*)?"
    rf")"
)
_BRACKETS = re.compile(r"\[[^\[\]]*\]")
# "(Zhang et al., 2017)", "(Smith and Lee 2016; Wu, 2018)", "(2017)"
_PAREN_CITATION = re.compile(
    r"\s*\((?:[^()]*?[A-Z][^()]*?[,\s])?(?:19|20)\d{2}[a-z]?(?:\s*[;,]\s*[^()]*?(?:19|20)\d{2}[a-z]?)*\)"
)
_INLINE_ET_AL = re.compile(r"\b[A-Z][\w'’-]+\s+et\s+al\.?")

#: Negations: a claim may not add one the passage lacks, nor drop one it has.
_NEGATIONS = re.compile(
    r"\b(?:not|no|never|none|nor|neither|cannot|without|fail(?:s|ed)? to|lacks?)\b|n[’']t\b",
    re.IGNORECASE,
)
#: Hedges and caveats: a claim may not drop one the passage has (that overstates it).
_HEDGES = re.compile(
    r"\b(?:may|might|could|can|likely|unlikely|possibly|potentially|perhaps|suggests?|appears? to"
    r"|seems? to|approximately|roughly|nearly|almost|close to|up to|partially|albeit|although"
    r"|though|but|however|only|except|still far from|at least|at most)\b",
    re.IGNORECASE,
)
_CANONICAL = {"n't": "not", "n’t": "not", "cannot": "not", "lack": "lacks"}


@dataclass(frozen=True, slots=True)
class Support:
    """The verdict on one claim against one document.

    `passage` is the best candidate (exact offsets), `score` the weighted share of the
    claim's terms found in it (0 to 1), `missing` the claim's numbers and entities that the
    passage lacks, `polarity` how the claim changes the passage's negations, hedges and
    caveats ("drops 'albeit'", "adds 'not'").
    """

    doc_id: str
    passage: Passage | None
    score: float
    supported: bool
    missing: tuple[str, ...]
    polarity: tuple[str, ...] = ()


def strip_citations(claim: str) -> str:
    """The claim without citation markers and a leading attribution clause.

    Removes "[key]" markers, "(Author et al., 2017)" parentheticals, a leading
    "Zhang et al. (2017) show that" / "Zhang (2017)" / "According to Zhang et al.," and
    any remaining "Name et al.", so that cited names are not checked as entities.
    """
    text = _BRACKETS.sub(" ", claim)
    text = _ATTRIBUTION.sub("", text, count=1)
    text = _PAREN_CITATION.sub("", text)
    text = _INLINE_ET_AL.sub(" ", text)
    return " ".join(text.split())


def _normalize_number(integer: str, fraction: str | None, percent: str | None) -> str:
    value = integer.replace(",", "")
    value = value.lstrip("0") or "0"
    if fraction:
        digits = fraction[1:].rstrip("0")
        if digits:
            value = f"{value}.{digits}"
    return value + ("%" if percent else "")


def claim_numbers(text: str) -> list[str]:
    """The numbers of `text`, normalized and unique, in order of appearance.

    "1,000" -> "1000", "3.50" -> "3.5", "95 percent" -> "95%"; digits inside a word
    ("word2vec", "VGG16") are not numbers, those after a hyphen ("CIFAR-10") are.
    """
    out: list[str] = []
    for m in _NUMBER.finditer(text):
        value = _normalize_number(*m.groups())
        if value not in out:
            out.append(value)
    return out


def _markers(pattern: re.Pattern[str], text: str) -> set[str]:
    found = {" ".join(m.group(0).lower().split()) for m in pattern.finditer(text)}
    return {_CANONICAL.get(w, w) for w in found}


def polarity_markers(text: str) -> set[str]:
    """The negations, hedges and caveats of `text`, lower case ("not", "may", "albeit",
    "up to", "fails to"); "n't" and "cannot" count as "not"."""
    return _markers(_NEGATIONS, text) | _markers(_HEDGES, text)


def _polarity(claim: str, sources: list[str]) -> tuple[str, ...]:
    """How `claim` changes the polarity of the source sentences it restates: the markers of
    those sentences it drops, and the negations it adds."""
    said = polarity_markers(claim)
    source = set().union(*(polarity_markers(s) for s in sources)) if sources else set()
    dropped = sorted(source - said)
    added = sorted(_markers(_NEGATIONS, claim) - _markers(_NEGATIONS, " ".join(sources)))
    return (*(f"drops {m!r}" for m in dropped), *(f"adds {m!r}" for m in added))


def _restated(claim: _Claim, spans: list[Passage]) -> list[str]:
    """The sentences of a passage that the claim restates: those at least half of whose
    content terms the claim uses (a sentence the claim leaves out cannot lose a hedge)."""
    words = set(claim.weights)
    out = []
    for p in spans:
        terms = set(tokenize_terms(p.text))
        if terms and len(terms & words) >= 0.5 * len(terms):
            out.append(p.text)
    return out


def _kind(word: str) -> str:
    """'strong' (acronym, CamelCase, letters with digits and a capital), 'capital'
    (Title-case word) or '' (anything else)."""
    if any(c.isupper() for c in word[1:]) and sum(c.isupper() for c in word) >= 2:
        return "strong"
    if word[0].isupper() and any(c.isdigit() for c in word):
        return "strong"
    if word[0].isupper() and len(word) > 1 and word.lower() not in STOPWORDS:
        return "capital"
    return ""


def _sentence_entities(sentence: str) -> list[str]:
    words = list(_TOKEN.finditer(sentence))
    phrases: list[list[str]] = []
    previous_end = -2
    for index, m in enumerate(words):
        kind = _kind(m.group())
        if index == 0 and kind == "capital":
            # A capital at the start of a sentence only names something when the next word
            # continues the name ("Penn Treebank ...", not "Deep networks ...").
            nxt = words[1] if len(words) > 1 else None
            adjacent = nxt is not None and sentence[m.end() : nxt.start()] == " "
            if not (adjacent and _kind(nxt.group())):
                continue
        if not kind:
            previous_end = -2
            continue
        gap = sentence[previous_end : m.start()] if previous_end >= 0 else None
        if gap in (" ", "-") and phrases:
            phrases[-1].append(gap + m.group())
        else:
            phrases.append([m.group()])
        previous_end = m.end()
    return ["".join(p) for p in phrases]


def claim_entities(text: str) -> list[str]:
    """Named things in `text`: acronyms (LSTM, GANs), CamelCase (ImageNet, ResNet-50) and
    capitalized words or phrases that do not merely start a sentence ("Penn Treebank").

    Unique, in order of appearance. Call `strip_citations` first to drop cited names.
    """
    out: list[str] = []
    for sentence in _SENTENCE_END.split(text.strip()):
        for entity in _sentence_entities(sentence):
            if entity not in out:
                out.append(entity)
    return out


def _words(text: str) -> list[str]:
    return [stem(w) for w in re.findall(r"[^\W_]+", text.lower())]


def _contains_words(haystack: list[str], needle: list[str]) -> bool:
    n = len(needle)
    return n > 0 and any(haystack[i : i + n] == needle for i in range(len(haystack) - n + 1))


def _values(numbers: list[str]) -> set[str]:
    return {n.rstrip("%") for n in numbers}


@dataclass(frozen=True, slots=True)
class _Claim:
    weights: dict[str, float]  # content term -> weight
    numbers: list[str]
    entities: list[str]

    @property
    def total(self) -> float:
        return sum(self.weights.values()) + _HEAVY * len(self.numbers)


def _parse_claim(claim: str) -> _Claim:
    text = strip_citations(claim)
    numbers = claim_numbers(text)
    entities = claim_entities(text)
    entity_terms = {t for e in entities for t in tokenize_terms(e)}
    words = tokenize_terms(_NUMBER.sub(" ", text))
    weights = {t: (_HEAVY if t in entity_terms else 1.0) for t in words if not t.isdigit()}
    return _Claim(weights, numbers, entities)


def _score(claim: _Claim, terms: set[str], numbers: set[str]) -> float:
    if claim.total == 0:
        return 0.0
    hit = sum(w for t, w in claim.weights.items() if t in terms)
    hit += _HEAVY * sum(1 for n in _values(claim.numbers) if n in numbers)
    return hit / claim.total


def _best_span(claim: _Claim, doc: Document) -> tuple[int, int, float] | None:
    """The best run of one to three adjacent sentences, as (start, end, score); the
    shortest among those that score best."""
    spans = sentences(doc, max_chars=1000)
    terms = [set(tokenize_terms(p.text)) for p in spans]
    numbers = [_values(claim_numbers(p.text)) for p in spans]
    best: tuple[float, int, int, int] | None = None  # (score, -size, -start, end)
    for i, first in enumerate(spans):
        for size in (1, 2, 3):
            if i + size > len(spans):
                break
            last = spans[i + size - 1]
            score = _score(
                claim, set().union(*terms[i : i + size]), set().union(*numbers[i : i + size])
            )
            key = (score, -size, -first.start, last.end)
            if best is None or key > best:
                best = key
    if best is None:
        return None
    return -best[2], best[3], best[0]


def check_claim(claim: str, doc: Document, *, threshold: float = 0.5) -> Support:
    """Check whether `doc` supports `claim`.

    Candidates are each run of one to three adjacent sentences of `doc.text`. The score is
    the weighted recall of the claim's content terms (numbers and entity terms weigh
    double). The claim is supported when the best candidate scores >= `threshold`, contains
    every number of the claim (compared normalized, "1,000" == "1000") and every entity
    (case-insensitive; an entity found in the document title also counts), and the claim
    keeps the polarity of the sentences it restates: none of their negations, hedges or
    caveats dropped, no negation added (`polarity_markers`).
    Citation markers and a leading attribution ("Zhang et al. (2017) show that") are
    ignored.

    Raises:
        ValueError: `threshold` is not within [0, 1].
    """
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be within [0, 1], got {threshold!r}")
    parsed = _parse_claim(claim)
    best = _best_span(parsed, doc) if parsed.total > 0 else None
    passage = None
    if best is not None and best[2] > 0:  # a passage sharing nothing with the claim is no evidence
        passage = read_passage(doc, best[0], best[1])
    found = passage.text if passage else ""
    present = _values(claim_numbers(found))
    missing_numbers = [n for n in parsed.numbers if n.rstrip("%") not in present]
    words, title_words = _words(found), _words(doc.title)
    missing_entities = [
        e
        for e in parsed.entities
        if not _contains_words(words, _words(e)) and not _contains_words(title_words, _words(e))
    ]
    missing = (*missing_numbers, *missing_entities)
    score = round(best[2], 6) if passage is not None and best is not None else 0.0
    polarity: tuple[str, ...] = ()
    if passage is not None:
        spans = sentences(doc, max_chars=1000)
        inside = [p for p in spans if passage.start <= p.start < passage.end]
        polarity = _polarity(strip_citations(claim), _restated(parsed, inside))
    supported = passage is not None and score >= threshold and not missing and not polarity
    return Support(doc.id, passage, score, supported, missing, polarity)
