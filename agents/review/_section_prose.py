"""One theme's section, offline: a synthesis paragraph, then its claims in paragraphs.

The summary compares the theme's papers: what they share (the phrases several of them use,
with the papers that use them: "Three of the six papers write of *image generation* (…)"),
how they differ in method (each paper's method in its own words, side by side: "Durugkar
et al. (2017) extend GANs to multiple discriminators (GMAN); Yang et al. (2017) take scene
structure and context into account (LR-GAN); …", `_methods`; or, where fewer than two
papers name one, the lines of work they fall into), what numbers two papers report on the
same benchmark ("On Atari, …", each number with the whole clause its paper states it in).
No digest of the other papers' numbers: a number cut from the clause that says what it
measures and from its caveat ("84.7% of the classes have samples" without "exhibiting
diversity comparable to real ImageNet data") says something its paper does not; the
Results paragraph quotes those sentences whole. The claims follow
grouped — a paragraph per shared line of work (never one named like the theme itself), one
for the other papers, one with the reported results, one for the open questions the papers
name (those that name an open problem as one first: "unsolved", "remains", "challenge").
Every claim is a researcher's quoted finding, attributed to its paper
(`_prose.third_person`). A connector that links ("Similarly, …") opens a claim only when it
is about what the claim before it is about: the two share two content words beyond the
topic's words and the words three or more of the theme's claims use (a paragraph's shared
phrase among them when three or more papers are grouped under it: `_linked`); results,
measured on each paper's own tasks, are never linked.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from kimmy_swarm.agents.review._methods import method_of
from kimmy_swarm.agents.review._prose import (
    agree,
    attribution,
    opens_with_source,
    parenthetical,
    split_attribution,
    with_connector,
)
from kimmy_swarm.agents.review._synthesis import (
    SharedPhrase,
    cite_list,
    group_by_phrase,
    shared_benchmarks,
    shared_phrases,
    states_measure,
)
from kimmy_swarm.agents.review.schemas import Claim, Finding, PaperNotes
from kimmy_swarm.agents.tools.search import tokenize_terms

#: Words two claims share without being about the same thing ("propose", "model").
_PLAIN = frozenset(
    tokenize_terms(
        "propose present introduce show study describe develop new novel method approach model "
        "models network networks learning paper work results framework algorithm use using "
        "based demonstrate perform performance task tasks data training train"
    )
)
#: An open question named as one ("a challenging yet unsolved problem", "remains an open
#: problem", "pose significant challenges"): it goes before a plain limitation ("can be
#: expensive") when a theme names more than `SectionLimits.max_open_questions`.
_NAMES_OPEN_PROBLEM = re.compile(
    r"\b(?:unsolved|open (?:problem|question|challenge)s?|remains?|challeng\w*|difficult\w*)\b",
    re.IGNORECASE,
)
#: Paragraph names of the claims that are not grouped by a shared phrase.
OTHER_WORK, RESULTS, OPEN_QUESTIONS = "Other lines of work", "Results", "Open questions"
#: What `RESULTS` is called for documents without authors (documentation states no results).
DETAILS = "Details"
#: Connectors by position in a paragraph (none for the first sentence, then every other).
_IN_GROUP = {1: "Similarly", 3: "Relatedly", 5: "Along the same line"}
_IN_OTHER = {2: "Elsewhere", 4: "Also"}
#: Results are measured on each paper's own tasks: no connector compares them.
_IN_RESULTS: dict[int, str] = {}
_IN_OPEN = {1: "Also", 2: "Further"}


@dataclass(frozen=True)
class SectionLimits:
    """How much of a theme's notes goes into its section."""

    max_results: int = 6
    max_open_questions: int = 3
    max_groups: int = 4
    #: The most papers whose methods the summary sets side by side.
    max_methods: int = 6

    def __post_init__(self) -> None:
        for name in ("max_results", "max_open_questions", "max_groups", "max_methods"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")


def short_cite(notes: PaperNotes) -> str:
    """ "Zhang et al., 2017" (or "“json”") for a paper's notes."""
    return parenthetical(_subject(notes))[1:-1]


def _kind(notes: PaperNotes, i: int, finding: Finding) -> str:
    if finding.kind:
        return finding.kind
    return "contribution" if i == 0 else "result"


def _noun(papers: Sequence[PaperNotes]) -> str:
    """ "papers" for authored work, "documents" for records without authors (docs)."""
    return "papers" if any(p.authors for p in papers) else "documents"


def _text_of(notes: PaperNotes) -> str:
    return " ".join([notes.title, notes.contribution, *(f.passage for f in notes.findings)])


_COUNTS = (
    "no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve",
)  # fmt: skip


def _count(k: int) -> str:
    return _COUNTS[k] if k < len(_COUNTS) else str(k)


def _and(items: Sequence[str], sep: str = ", ") -> str:
    if len(items) <= 2:
        return " and ".join(items)
    return sep.join(items[:-1]) + f"{sep.strip()} and " + items[-1]


def _shared_sentence(
    phrases: Sequence[SharedPhrase], cite: dict[str, str], n: int, noun: str
) -> str:
    """ "Three of the six papers write of *image generation* (A, 2017; …), two of *x* (…)."
    — up to three phrases, none inside another one named."""
    shown: list[SharedPhrase] = []
    for p in phrases:
        mine = " ".join(_fold(p.phrase))
        if len(shown) < 3 and not any(
            mine in (theirs := " ".join(_fold(q.phrase))) or theirs in mine for q in shown
        ):
            shown.append(p)
    parts = []
    for i, p in enumerate(shown):
        k, cites = len(p.doc_ids), cite_list([cite[d] for d in p.doc_ids])
        if i:
            parts.append(f"{'all ' + _count(n) if k == n else _count(k)} of *{p.phrase}* {cites}")
        else:
            who = f"All {_count(n)} {noun}" if k == n else f"{_count(k)} of the {_count(n)} {noun}"
            parts.append(f"{who[:1].upper()}{who[1:]} write of *{p.phrase}* {cites}")
    return _and(parts) + "."


def _subject(notes: PaperNotes) -> str:
    return attribution(notes.authors, notes.year, notes.title, notes.status, label=notes.year_label)


def _contribution_of(notes: PaperNotes) -> str:
    for i, finding in enumerate(notes.findings):
        if _kind(notes, i, finding) == "contribution":
            return finding.passage
    return notes.contribution


def _methods_sentence(papers: Sequence[PaperNotes], order: Sequence[str], limit: int) -> str:
    """How the papers differ in method, each in its own words (`_methods.method_of`):
    "They differ in how they go about it: A extend …; B take … (LR-GAN); and C …"; "" when
    fewer than two papers name a method. A method said just as its paper's claim says it
    (the whole contribution sentence) is left to the claim. Papers whose method has a name
    come first when there are more than `limit`; the sentence keeps the section's order."""
    by_id = {n.doc_id: n for n in papers}
    found = []
    for doc_id in order:
        notes = by_id[doc_id]
        method = method_of(_contribution_of(notes)) if notes.authors else None
        claims = {f.text.rstrip(".") for f in notes.findings}
        if method is not None and method.said_of(_subject(notes)) not in claims:
            found.append((doc_id, method))  # a method that is its whole claim says no more
    if len(found) < 2 or limit < 2:
        return ""
    kept = {d for d, _ in sorted(found, key=lambda f: not f[1].name)[:limit]}
    items = [m.said_of(_subject(by_id[d])) for d, m in found if d in kept]
    more = len(papers) - len(items)
    tail = (
        f" The other {_count(more)} {'is' if more == 1 else 'are'} set out below." if more else ""
    )
    said = ", whereas ".join(items) if len(items) == 2 else _and(items, sep="; ")
    return f"They differ in how they go about it: {said}.{tail}"


def _benchmark_sentences(papers: Sequence[PaperNotes]) -> list[str]:
    """ "On Atari, A report 880% expert human performance, and B report up to 200 frames."
    for each benchmark two or more papers report a number on, each number with the whole
    clause its paper says it in (`_synthesis.benchmark_figures`)."""
    results = {
        n.doc_id: [f.passage for i, f in enumerate(n.findings) if _kind(n, i, f) == "result"]
        for n in papers
        if n.authors
    }
    by_id = {n.doc_id: n for n in papers}
    out = []
    for benchmark, figures in shared_benchmarks(results)[:2]:
        said = []
        for doc_id, figure in figures:
            subject = _subject(by_id[doc_id])
            said.append(f"{subject} {agree('report', subject)} {figure}")
        out.append(f"On {benchmark}, {_and(said)}.")
    return out


def _summary(
    papers: Sequence[PaperNotes],
    phrases: Sequence[SharedPhrase],
    groups: Sequence[SharedPhrase],
    left: Sequence[str],
    *,
    max_methods: int = 6,
) -> str:
    cite = {n.doc_id: short_cite(n) for n in papers}
    years = sorted({n.year for n in papers if n.year is not None})
    span = f" from {years[0]} to {years[-1]}" if len(years) > 1 else ""
    span = span or (f" from {years[0]}" if years else "")
    n = len(papers)
    noun = _noun(papers)
    out = [f"{n} {noun if n != 1 else noun[:-1]}{span}."]
    if phrases:  # a list of words the papers share is no common ground: said of phrases only
        out.append(_shared_sentence(phrases, cite, n, noun))
    order = [d for g in groups for d in g.doc_ids] + list(left)
    methods = _methods_sentence(papers, order, max_methods)
    if methods:
        out.append(methods)
    elif groups:
        lines = [f"{p.phrase} ({len(p.doc_ids)})" for p in groups]
        if left:
            lines.append(f"{'other lines' if noun == 'papers' else 'other ' + noun} ({len(left)})")
        what = "the line of work they take up" if noun == "papers" else "what they cover"
        out.append(f"They differ in {what}: {_and(lines)}.")
    out += _benchmark_sentences(papers)
    return " ".join(out)


def _fold(text: str) -> tuple[str, ...]:
    return tuple(w[:-1] if w.endswith("s") else w for w in text.lower().split())


def _names_theme(phrase: str, title: str, terms: Sequence[str]) -> bool:
    """Whether `phrase` is the theme's own name (its title, or, without one, one of its
    first two terms, which name it): a paragraph so named under the theme's heading would
    only repeat it ("**Image generation.**" under "## Image generation")."""
    names = [t for t in title.replace(",", "/").replace(" and ", "/").split("/") if t.strip()]
    return _fold(phrase) in {_fold(t) for t in (names or terms[:2])}


def _linked(before: str, text: str, phrase: str, common: frozenset[str] = frozenset()) -> bool:
    """Whether two claims are about the same thing in their own words: they share two
    content words that are not `common` (the topic's, and those many of the theme's claims
    use, as a paragraph's phrase is when three or more papers are grouped under it) — never
    "Similarly, … chess" after a claim on something else, nor "Along the same line, …
    neural networks" after another claim that merely names neural networks too."""
    mine, theirs = set(_content(text)) - common, set(_content(before)) - common
    return len(mine & theirs) >= 2


#: A word in this many of a theme's claims is common in it: sharing it links no two claims.
_COMMON_IN = 3


def _common_words(texts: Sequence[str], topic: str) -> frozenset[str]:
    """The topic's words and the content words `_COMMON_IN` or more of `texts` use."""
    df = Counter(w for t in texts for w in set(_content(t)))
    return frozenset(tokenize_terms(topic)) | {w for w, k in df.items() if k >= _COMMON_IN}


def _content(text: str) -> list[str]:
    """The content words of a claim, without its attribution."""
    return [t for t in tokenize_terms(split_attribution(text)[1]) if t not in _PLAIN]


def _paragraph(
    findings: Sequence[str],
    connectors: dict[int, str],
    *,
    phrase: str = "",
    common: frozenset[str] = frozenset(),
) -> list[str]:
    """The findings in order, a connector before those at the connectors' positions that
    open with their source (a sentence with its own opening keeps it). In a paragraph of a
    shared phrase, a connector that links ("Similarly") is used only where the claim is
    linked to the one before it (`_linked`)."""
    out = []
    for i, text in enumerate(findings):
        use = i in connectors and opens_with_source(text)
        if use and phrase and not _linked(findings[i - 1], text, phrase, common):
            use = False
        out.append(with_connector(text, connectors[i]) if use else text)
    return out


def theme_section(
    theme_id: str,
    papers: Sequence[PaperNotes],
    *,
    topic: str = "",
    terms: Sequence[str] = (),
    title: str = "",
    limits: SectionLimits = SectionLimits(),
) -> tuple[str, list[Claim]]:
    """(summary, claims) of one theme's section from its papers' notes.

    Args:
        theme_id: claim ids are `<theme_id>.c<n>`.
        papers: the researchers' notes, in theme order.
        topic: the review's topic (its words are not named as shared: all papers share them).
        terms: the theme's vocabulary (its first two name it when no title is given).
        title: the section's title (its words name no paragraph); without it, the first
            two terms stand for it.
        limits: how many results, open questions, groups and methods at most.
    """
    by_id = {n.doc_id: n for n in papers}
    phrases = shared_phrases({n.doc_id: _text_of(n) for n in papers}, exclude=topic.lower().split())
    lines = [p for p in phrases if not _names_theme(p.phrase, title, terms)]
    groups, left = group_by_phrase(list(by_id), lines, max_groups=limits.max_groups)
    first: dict[str, str] = {}
    results: list[tuple[str, str]] = []
    measured: set[str] = set()
    opens: list[tuple[str, str]] = []
    for notes in papers:
        for i, finding in enumerate(notes.findings):
            kind = _kind(notes, i, finding)
            if kind == "contribution" and notes.doc_id not in first:
                first[notes.doc_id] = finding.text
            elif kind == "result" and states_measure(finding.passage):
                measured.add(notes.doc_id)
                results.append((notes.doc_id, finding.text))
            elif kind == "result" and len(papers) <= 6:
                results.append((notes.doc_id, finding.text))
            elif kind == "open_question":
                opens.append((notes.doc_id, finding.text))
    for notes in papers:  # a paper without a contribution sentence leads with a finding
        if notes.doc_id not in first and notes.findings:
            first[notes.doc_id] = notes.findings[0].text
    results.sort(key=lambda r: r[0] not in measured)  # measured results first
    one_each = {}
    for doc_id, text in results:
        one_each.setdefault(doc_id, text)
    results = list(one_each.items())[: limits.max_results]
    opens.sort(key=lambda o: not _NAMES_OPEN_PROBLEM.search(o[1]))  # stable: theme order
    opens = opens[: limits.max_open_questions]
    paragraphs: list[tuple[str, list[tuple[str, str]], dict[int, str]]] = [
        (p.phrase[:1].upper() + p.phrase[1:], [(d, first[d]) for d in p.doc_ids if d in first],
         _IN_GROUP)
        for p in groups
    ]  # fmt: skip
    rest = [(d, first[d]) for d in left if d in first]
    other = OTHER_WORK if any(n.authors for n in papers) else "Other documents"
    paragraphs.append((other if groups else "", rest, _IN_OTHER))
    authored = any(n.authors for n in papers)
    paragraphs.append((RESULTS if authored else DETAILS, results, _IN_RESULTS))
    paragraphs.append((OPEN_QUESTIONS, opens, _IN_OPEN))
    claims: list[Claim] = []
    common = _common_words([t for _, items, _ in paragraphs for _, t in items], topic)
    shared_phrase = {p.phrase[:1].upper() + p.phrase[1:]: p.phrase for p in groups}
    for group, items, connectors in paragraphs:
        texts = _paragraph(
            [t for _, t in items],
            connectors,
            phrase=shared_phrase.get(group, ""),
            common=common,
        )
        for (doc_id, _), text in zip(items, texts, strict=True):
            claims.append(
                Claim(id=f"{theme_id}.c{len(claims) + 1}", text=text, cited=[doc_id], group=group)
            )
    summary = _summary(papers, phrases, groups, left, max_methods=limits.max_methods)
    return summary, claims


__all__ = [
    "DETAILS",
    "OPEN_QUESTIONS",
    "OTHER_WORK",
    "RESULTS",
    "SectionLimits",
    "short_cite",
    "theme_section",
]
