"""Whether a document is about a topic, not only mentions it (`SearchIndex.relevant`).

A paper is about a topic when the topic is what it studies. Three kinds of evidence count,
read from its title and text (an abstract):

- **forms of the topic**: the topic phrase with any word endings and hyphens ("generative
  adversarial network", "Generative-Adversarial Networks"), a run of two of its words
  that holds its rarest one when the phrase has three or more ("adversarial networks",
  "generative adversarial training"), its acronym as the corpus defines it ("generative
  adversarial networks (GANs)" makes "GAN" a form; "reinforcement learning (RL)" makes
  "RL"), and names built on the acronym ("BiGAN", "LR-GAN", "DeepRL");
- **where they stand**: a form in the title, or two in the text, or one in a sentence where
  the paper speaks of its own work ("we introduce a hybrid of the VAE and GAN") make a
  paper *central* to the topic; one form in a sentence about the field or other work
  ("… which has been shown to improve exploration in reinforcement learning") is a passing
  mention and makes none;
- **the topic's vocabulary**: the words that the central papers use far more often than
  the rest of the corpus ("reward", "agent", "policy" for reinforcement learning;
  "discriminator", "generator" for GANs). A paper that is not central but whose words are
  as dense in that vocabulary as most central papers' are is about the topic too, though
  it never names it ("an adversarial game between a generation and an inference network";
  "a Markov reward process rolled forward over imagined planning steps") — where the
  vocabulary is the topic's own: above that density nearly all papers must be central
  (`about`), so the words a topic shares with its neighbours ("question", "answer" for
  attention) rescue nobody.

Everything is learned from the corpus at hand: no list of topics or synonyms is kept.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from kimmy_swarm.agents.tools.corpus import Document
from kimmy_swarm.agents.tools.passages import sentences
from kimmy_swarm.agents.tools.terms import STOPWORDS, stem, tokenize_terms

__all__ = [
    "Naming",
    "TopicForms",
    "TopicVocabulary",
    "Topicality",
    "about",
    "central_density",
    "learn_forms",
    "naming",
    "topic_vocabulary",
    "topicality",
]

#: A form's sentence speaks of the paper's own work.
_OWN_WORK = re.compile(
    r"\bwe\b|\bour\b|\b(?:this|the present) (?:paper|work|study|article)\b|^(?:Here|Herein)\b"
    r"|\bthe proposed\b|\bis (?:proposed|introduced|presented)\b|\bnovel\b",
    re.IGNORECASE,
)
#: A cue that what follows in its clause is what the paper sets its work against
#: ("competitive results compared to … a basic Generative Adversarial Net").
_COMPARISON = re.compile(r"\bunlike\b|\bcompared (?:to|with)\b", re.IGNORECASE)
#: A cue that what follows in its clause is the field's or others' work ("such as GANs").
_REFERENCE = re.compile(
    r"\bliterature\b|\bsimilar to\b|\binspired by\b|\bsuch as\b|\be\.g\.|\bbackgrounds?\b"
    r"|\bin recent years\b|\bprevious(?:ly)?\b|\bprior work\b|\bas well as\b|"
    + _COMPARISON.pattern,
    re.IGNORECASE,
)
#: A clause that states what the field knows, wherever the topic stands in it.
_FIELD_CLAIM = re.compile(
    r"\b(?:has|have) (?:been |also been )?shown\b|\b(?:is|are) (?:well |widely )?known\b",
    re.IGNORECASE,
)
#: Title words that say nothing of a paper's subject ("Learning", "Deep", "Neural").
_GENERIC_TITLE_WORDS = frozenset(
    tokenize_terms("learning deep neural network networks model models using via towards")
)
#: Where a sentence's clauses part: a comma, semicolon or colon, or a dash between spaces.
_CLAUSE = re.compile(r"[,;:]\s+|\s[-–—]+\s")
#: An acronym in brackets right after the phrase: "(GANs)", "(RL)", "(VAE)".
_BRACKETED = r"\s*\(\s*([A-Z][A-Za-z0-9]*?[A-Z][A-Za-z0-9]*?)(?:s|'s)?\s*\)"
#: Smoothing of the vocabulary's counts, and the least evidence a word needs to belong to it.
_SMOOTH = 0.5
_MIN_DOCS = 3
_MIN_LOG_RATIO = 1.0
#: Words of one family share at least this many first letters (see `_same_word`).
_FAMILY_PREFIX = 6
#: A corpus must define an acronym in this many documents before it counts as a form.
_MIN_ACRONYM_DOCS = 2


@dataclass(frozen=True, slots=True)
class TopicForms:
    """The ways the corpus writes one topic.

    Attributes:
        phrases: the phrase and its runs of two words that hold its rarest word, stemmed
            (("generativ", "adversarial", "network"), ("adversarial", "network"), …).
        acronyms: acronyms as the corpus defines them ("GAN", "RL"), matched case-sensitively
            alone, plural, or at the end of a name ("BiGAN", "LR-GAN", "DeepRL").
    """

    phrases: tuple[tuple[str, ...], ...]
    acronyms: tuple[str, ...] = ()

    def count(self, text: str) -> int:
        """How many times `text` names the topic: phrases (the longest that fits at each
        word, never overlapping) and acronyms."""
        terms = tokenize_terms(text)
        by_length = sorted(self.phrases, key=len, reverse=True)
        n = i = 0
        while i < len(terms):
            size = next((len(p) for p in by_length if _fits(terms[i : i + len(p)], p)), 0)
            n, i = n + bool(size), i + max(size, 1)
        return n + sum(len(_acronym_pattern(a).findall(text)) for a in self.acronyms)

    def terms(self) -> list[str]:
        """The search terms of the forms: the phrase's stems and the acronyms, lower-cased."""
        out = list(self.phrases[0]) if self.phrases else []
        return out + [a.lower() for a in self.acronyms]


def _same_word(word: str, stemmed: str) -> bool:
    """Whether a text's word is a form of a phrase's word: the same stem, or one of a word
    family whose stems share all but their last two letters and at least six ("attentive",
    "attentional" for "attention"; not "attend", nor "graphical" for "graph")."""
    if word == stemmed:
        return True
    short = min(len(word), len(stemmed))
    shared = next((i for i in range(short) if word[i] != stemmed[i]), short)
    return shared >= max(_FAMILY_PREFIX, min(len(word), len(stemmed)) - 2)


def _fits(words: list[str], phrase: tuple[str, ...]) -> bool:
    """Whether `words` are `phrase`: a phrase of one word matches its word family, a longer
    one its stems only ("generated adversarial examples" is no "generative adversarial")."""
    if len(phrase) == 1:
        return len(words) == 1 and _same_word(words[0], phrase[0])
    return tuple(words) == phrase


def _acronym_pattern(acronym: str) -> re.Pattern[str]:
    return re.compile(
        r"(?<![A-Za-z0-9])(?:[A-Za-z0-9]*[a-z0-9]-?|[A-Za-z0-9]+-)?"
        + re.escape(acronym)
        + r"(?:s|'s)?(?![A-Za-z])"
    )


def _initials_fit(acronym: str, words: Sequence[str]) -> bool:
    """Whether `acronym` abbreviates `words`: it starts with the first word's initial and its
    capitals appear in order in the words ("GAN": generative adversarial networks)."""
    letters = [c.lower() for c in acronym if c.isupper()]
    text = " ".join(words).lower()
    if not letters or letters[0] != text[0]:
        return False
    pos = 0
    for c in letters:
        pos = text.find(c, pos)
        if pos < 0:
            return False
        pos += 1
    return True


def learn_forms(facet: str, documents: Sequence[Document]) -> TopicForms:
    """The forms of one facet of a topic ("generative adversarial networks") in `documents`.

    A facet that is an acronym itself ("GANs") has the forms of what the corpus most often
    writes out before it in brackets (`_long_form`), and itself as an acronym.
    """
    words = [w for w in re.findall(r"[^\W_]+", facet) if w.lower() not in STOPWORDS]
    if len(words) == 1 and re.fullmatch(r"[A-Z][A-Z0-9]+s?", words[0]):
        acronym = words[0].removesuffix("s")
        long_form = _long_form(acronym, documents)
        if not long_form:
            return TopicForms((), (acronym,))
        forms = learn_forms(long_form, documents)
        return TopicForms(forms.phrases, tuple(sorted({*forms.acronyms, acronym})))
    stems = tuple(stem(w.lower()) for w in words)
    if not stems:
        return TopicForms(())
    phrases = [stems]
    if len(stems) >= 3:
        df = Counter(t for d in documents for t in set(tokenize_terms(f"{d.title} {d.text}")))
        rarest = min(range(len(stems)), key=lambda i: (df[stems[i]], i))
        phrases += [stems[i : i + 2] for i in range(len(stems) - 1) if rarest in (i, i + 1)]
    long_form = r"(?<!\w)" + r"[\s-]+".join(
        re.escape(w[: max(3, len(w) - 3)]) + r"\w*" for w in words
    )
    found = re.compile(long_form + _BRACKETED, re.IGNORECASE)
    seen: Counter[str] = Counter()
    for d in documents:
        seen.update({m.group(1) for m in found.finditer(f"{d.title}\n{d.text}")})
    acronyms = sorted(
        a for a, n in seen.items() if n >= _MIN_ACRONYM_DOCS and _initials_fit(a, words)
    )
    return TopicForms(tuple(phrases), tuple(acronyms))


def _long_form(acronym: str, documents: Sequence[Document]) -> str:
    """What the corpus most often writes out before "(ACRONYM)": "generative adversarial
    networks" for GAN; "" when it never does."""
    before = re.compile(r"((?:[^\W\d_][\w-]*\s+){1,6})\(\s*" + re.escape(acronym) + r"s?\s*\)")
    size = sum(c.isupper() for c in acronym)
    seen: Counter[str] = Counter()
    for d in documents:
        for m in before.finditer(f"{d.title}\n{d.text}"):
            run = m.group(1).split()
            for k in range(min(size, len(run)), 0, -1):
                if _initials_fit(acronym, run[-k:]):
                    seen[" ".join(w.lower() for w in run[-k:])] += 1
                    break
    return min(seen, key=lambda f: (-seen[f], f)) if seen else ""


@dataclass(frozen=True, slots=True)
class Topicality:
    """How one document stands to a topic (`topicality`).

    Attributes:
        title: the title names the topic.
        mentions: how many times the text names it.
        named: how many of those are not in a sentence that refers to the field or to
            others' work ("… such as GANs", "Unlike InfoGAN, …").
        own_work: one of those is in a sentence where the paper speaks of its own work.
        density: the topic vocabulary's weight per distinct word of the document.
    """

    title: bool
    mentions: int
    named: int = 0
    own_work: bool = False
    density: float = 0.0

    @property
    def central(self) -> bool:
        """The topic is what the paper studies by its own words: in the title, twice in the
        text, or once where the paper speaks of its own work (never counting a sentence
        that refers to others' work)."""
        return self.title or self.named >= 2 or (self.named == 1 and self.own_work)


def _own_sentence(sentence: str, subject: set[str]) -> bool:
    """Whether a sentence speaks of the paper's own work: "we", "our", "novel" …, or two
    words of what its title names ("Skip-Gram Negative Sampling", "ReasoNet … reading")."""
    return bool(_OWN_WORK.search(sentence)) or len(subject & set(tokenize_terms(sentence))) >= 2


def _subject(forms: TopicForms, title: str) -> set[str]:
    """The words of a title that say what the paper studies, less the topic's own."""
    topic = {t for p in forms.phrases for t in p} | {a.lower() for a in forms.acronyms}
    return set(tokenize_terms(title)) - topic - _GENERIC_TITLE_WORDS


def _referred(forms: TopicForms, clause: str) -> int:
    """How many of a clause's forms refer to others' work: all when the clause states what
    the field knows ("deep RL has shown …"), else those after a reference cue."""
    if _FIELD_CLAIM.search(clause):
        return forms.count(clause)
    return _after(_REFERENCE, forms, clause)


def _after(cue: re.Pattern[str], forms: TopicForms, clause: str) -> int:
    """How many of a clause's forms follow its first `cue`."""
    found = cue.search(clause)
    return forms.count(clause[found.end() :]) if found else 0


@dataclass(frozen=True, slots=True)
class Naming:
    """How one sentence names a topic (`naming`).

    Attributes:
        forms: how many times it names it.
        referred: how many of those refer to the field or to others' work ("… such as GANs").
        compared: how many of those name what the paper compares its work with ("compared
            to … a basic Generative Adversarial Net", "Unlike InfoGAN").
    """

    forms: int = 0
    referred: int = 0
    compared: int = 0

    @property
    def own(self) -> int:
        """How many name the topic as the sentence's own subject (not others' work)."""
        return self.forms - self.referred


def naming(forms: TopicForms, sentence: str) -> Naming:
    """How a sentence names the topic, clause by clause: a form in a clause that states
    what the field knows, or after a reference cue ("such as", "unlike"), refers to others'
    work; after a comparison cue, it is also what the paper compares with."""
    total = referred = compared = 0
    for clause in _CLAUSE.split(sentence):
        if n := forms.count(clause):
            total += n
            referred += _referred(forms, clause)
            compared += _after(_COMPARISON, forms, clause)
    return Naming(total, referred, compared)


def _standing(forms: TopicForms, doc: Document) -> Topicality:
    """Where `doc` names the topic. Each sentence is read clause by clause (`naming`): a
    form in a clause that refers to others' work ("which has been shown to …", "Unlike
    InfoGAN") does not count; the others count, and speak of the paper's own work when
    their sentence does (`_own_sentence`)."""
    title = forms.count(doc.title) > 0
    subject = _subject(forms, doc.title)
    mentions = named = 0
    own = False
    for s in sentences(doc):
        said = naming(forms, s.text)
        mentions += said.forms
        named += said.own
        own = own or (said.own > 0 and _own_sentence(s.text, subject))
    return Topicality(title, mentions, named, own)


def _vocabulary(terms: Sequence[frozenset[str]], core: list[bool]) -> dict[str, tuple[int, int]]:
    """The words of the topic's vocabulary with (documents of the core, all documents)."""
    n, n_core = len(terms), sum(core)
    df: Counter[str] = Counter(t for ts in terms for t in ts)
    df_core: Counter[str] = Counter(t for ts, c in zip(terms, core, strict=True) if c for t in ts)
    out = {}
    for t, k in df_core.items():
        if k >= _MIN_DOCS and _log_ratio(k, df[t], n_core, n) >= _MIN_LOG_RATIO:
            out[t] = (k, df[t])
    return out


def _log_ratio(k: int, df: int, n_core: int, n: int) -> float:
    """log(P(word | core) / P(word | rest)), smoothed."""
    inside = (k + _SMOOTH) / (n_core + 2 * _SMOOTH)
    outside = (df - k + _SMOOTH) / (n - n_core + 2 * _SMOOTH)
    return math.log(inside / outside)


def _weights(vocab: dict[str, tuple[int, int]], n_core: int, n: int) -> dict[str, float]:
    return {t: _log_ratio(k, df, n_core, n) for t, (k, df) in vocab.items()}


@dataclass(frozen=True, slots=True)
class TopicVocabulary:
    """The topic's vocabulary (see the module): each word's weight, the log of how many
    times more often the central papers use it than the rest of the corpus."""

    weights: dict[str, float]

    def density(self, text: str) -> float:
        """The vocabulary's weight per distinct word of `text`, as `Topicality.density` of a
        paper that is not central (0 for no words)."""
        terms = frozenset(tokenize_terms(text))
        return self.weight(terms) / len(terms) if terms else 0.0

    def weight(self, terms: frozenset[str]) -> float:
        """The vocabulary's weight in a set of terms (`tokenize_terms`)."""
        return sum(self.weights[t] for t in terms & self.weights.keys())


def topic_vocabulary(
    standing: Sequence[Topicality], terms: Sequence[frozenset[str]]
) -> TopicVocabulary:
    """The vocabulary of the central papers of `standing` against the rest (each
    document's `terms`, in the same order); empty with fewer than three central papers."""
    core = [s.central for s in standing]
    if sum(core) < _MIN_DOCS:
        return TopicVocabulary({})
    return TopicVocabulary(_weights(_vocabulary(terms, core), sum(core), len(terms)))


def _densities(terms: Sequence[frozenset[str]], core: list[bool]) -> list[float]:
    """Each document's weight in the topic vocabulary per distinct word; a core document is
    scored by the vocabulary of the other core documents (leave one out)."""
    vocab = _vocabulary(terms, core)
    n, n_core = len(terms), sum(core)
    plain = TopicVocabulary(_weights(vocab, n_core, n))
    out = []
    for ts, c in zip(terms, core, strict=True):
        weight = _left_out(ts, vocab, n_core, n) if c else plain.weight(ts)
        out.append(weight / len(ts) if ts else 0.0)
    return out


def _left_out(
    terms: frozenset[str], vocab: dict[str, tuple[int, int]], n_core: int, n: int
) -> float:
    """A core document's weight in the vocabulary of the other core documents."""
    weight = 0.0
    for t in terms & vocab.keys():
        k, df = vocab[t]
        if k - 1 < _MIN_DOCS:
            continue
        r = _log_ratio(k - 1, df - 1, n_core - 1, n - 1)
        weight += r if r >= _MIN_LOG_RATIO else 0.0
    return weight


def topicality(
    facet: str,
    documents: Sequence[Document],
    terms: Sequence[frozenset[str]] | None = None,
) -> list[Topicality]:
    """How each of `documents` stands to one facet of a topic, in order (see the module).

    Args:
        facet: one alternative of a topic ("generative adversarial networks").
        documents: the corpus.
        terms: each document's terms of title and text (`tokenize_terms`), when known.
    """
    forms = learn_forms(facet, documents)
    if not forms.phrases and not forms.acronyms:
        return [Topicality(False, 0) for _ in documents]
    standing = [_standing(forms, d) for d in documents]
    core = [s.central for s in standing]
    if sum(core) < _MIN_DOCS:
        return standing
    if terms is None:
        terms = [frozenset(tokenize_terms(f"{d.title}\n{d.text}")) for d in documents]
    return [
        Topicality(s.title, s.mentions, s.named, s.own_work, density)
        for s, density in zip(standing, _densities(terms, core), strict=True)
    ]


def _quantile(values: list[float], q: float) -> float:
    """The `q` quantile of `values` (linear interpolation, as numpy's default)."""
    ordered = sorted(values)
    pos = q * (len(ordered) - 1)
    low = math.floor(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def central_density(standing: Sequence[Topicality], quantile: float) -> float:
    """The `quantile` of the central papers' vocabulary densities: what a paper that never
    names the topic needs to be about it (`about`); inf with fewer than three of them."""
    central = [s.density for s in standing if s.central]
    return _quantile(central, quantile) if len(central) >= _MIN_DOCS else math.inf


def _precise_density(standing: Sequence[Topicality], precision: float) -> float:
    """The lowest density above which at least `precision` of the documents are central:
    where the vocabulary still tells the topic's papers from the rest (inf if nowhere)."""
    ranked = sorted(standing, key=lambda s: -s.density)
    floor, central = math.inf, 0
    for rank, s in enumerate(ranked, 1):
        central += s.central
        if s.density > 0 and central / rank >= precision:
            floor = s.density
    return floor


def about(
    standing: Sequence[Topicality],
    *,
    unnamed_quantile: float,
    passing_quantile: float,
    precision: float,
) -> list[bool]:
    """Which documents are about the topic: the central ones, and those whose vocabulary
    density reaches what most central papers have.

    A paper that never names the topic needs the density of all but the least
    (`unnamed_quantile`) of the central papers; one that names it only in passing has told
    how it stands to the topic (as background), so it needs more (`passing_quantile`).
    Either way the density must be one above which at least `precision` of the corpus's
    documents are central: a topic whose words are everyone's ("attention" among reading-
    comprehension papers) rescues nobody by vocabulary.
    """
    if sum(s.central for s in standing) < _MIN_DOCS:
        return [s.central for s in standing]
    floor = _precise_density(standing, precision)
    unnamed = max(central_density(standing, unnamed_quantile), floor)
    passing = max(central_density(standing, passing_quantile), floor)
    return [s.central or s.density >= (unnamed if s.mentions == 0 else passing) for s in standing]
