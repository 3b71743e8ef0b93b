"""The literature review's offline procedures: real retrieval, extraction and checking.

Each is the offline policy of one role and calls the same tools a model would:
- `plan_review` (planner): BM25 retrieval of the papers relevant to the topic (a score
  threshold and the topic's key words decide; `max_papers` only caps), then TF-IDF +
  clustering into themes named by their key phrases.
- `research_paper` (researcher): the paper's contribution, result and open-question
  sentences (prose only: no code, lists or boilerplate), chosen by cue phrases, numbers and
  relevance to the topic, quoted exactly and attributed.
- `write_section` (writer): one section per theme — a synthesis of what the papers share
  and where they differ, their claims in paragraphs (shared lines of work, results, open
  questions) each citing its paper, a comparison row per paper.
- `check_section` (fact_checker): every claim against the passages of the cited documents
  (numbers and names must appear), and its attribution against the document's metadata.
- `synthesize` (synthesizer): introduction, per-theme summaries and a conclusion (big
  themes, most cited work, trends over years, open questions) built from the run's counts
  and checked claims.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kimmy_swarm.agents.review._claimable import is_prose
from kimmy_swarm.agents.review._conclusion import conclusion
from kimmy_swarm.agents.review._prose import (
    attribution,
    shorten,
    split_attribution,
    surname,
    theme_title,
    third_person,
)
from kimmy_swarm.agents.review._section_prose import theme_section
from kimmy_swarm.agents.review.schemas import (
    READ_PREFIX,
    WRITE_PREFIX,
    Claim,
    ClaimCheck,
    ComparisonRow,
    Finding,
    PaperNotes,
    ReviewPlan,
    ReviewProse,
    Section,
    SectionCheck,
    ThemePlan,
    is_check_id,
)
from kimmy_swarm.agents.tools.search import tokenize_terms

if TYPE_CHECKING:
    from kimmy_swarm.agents.loop import Attempt

_RESULT_CUES = re.compile(
    r"\b(we (?:also )?(?:show|demonstrate|find|prove|observe|report|achieve|obtain|establish)"
    r"|results? (?:show|demonstrate|indicate|suggest)|outperform\w*|state[- ]of[- ]the[- ]art"
    r"|improv\w+|achiev\w+|significant\w*|accura\w+|error|speed-?ups?|faster|better|surpass\w*)",
    re.IGNORECASE,
)
_CONTRIBUTION_CUES = re.compile(
    r"\b(we (?:propose|introduce|present|develop|describe|study|investigate|consider)"
    r"|this (?:paper|work|module|package|library)|novel|^(?:\S+\s){0,4}provides?)\b",
    re.IGNORECASE,
)
_NUMBER = re.compile(r"\d")
#: What a paper leaves open: its limitations, the questions it names, its future work.
_OPEN_CUES = re.compile(
    r"\b(?:remains? (?:an? )?(?:open|unclear|unknown|unsolved|challenging|difficult|elusive)"
    r"|open (?:question|problem|challenge)s?|future (?:work|research|directions?)"
    r"|limitations?|(?:key|main|major|remaining|outstanding) challenges?|is still (?:an? )?"
    r"(?:open|unclear|poorly understood|lacking)|little is known|not (?:yet )?(?:well )?"
    r"understood|has (?:not|yet to) been|unsolved|an important (?:step|direction))\b",
    re.IGNORECASE,
)


_EVERY = 1_000_000  # a `k` past any corpus: `search_corpus` returns every relevant document


def plan_review(run: Attempt) -> ReviewPlan:
    """Orchestrator: the papers relevant to the topic (`search_corpus` keeps only those its
    `Relevance` rule accepts), the best `max_papers` of them, grouped into themes. The plan
    says how many matched (`matched`); the cap cut `matched - len(relevant)`."""
    topic = str(run.inputs.get("topic") or "").strip()
    limit = int(run.inputs.get("max_papers") or 200)
    notes: list[str] = []
    matched: int | None = None
    if topic:
        # Every relevant document (the tool caps k at the corpus size), then the cap.
        every = max(limit, int(run.inputs.get("corpus_size") or 0) or _EVERY)
        hits = run.call("search_corpus", query=topic, k=every)
        matched, relevant = len(hits), [h["doc_id"] for h in hits][:limit]
        if not relevant:
            notes.append(f"no document of the corpus matches the topic {topic!r}")
    else:
        relevant = list(run.inputs.get("doc_ids") or [])[:limit]
    themes: list[dict[str, Any]] = []
    if relevant:
        themes = run.call(
            "find_themes",
            doc_ids=relevant,
            k=run.inputs.get("themes"),
            exclude_terms=tokenize_terms(topic),
        )
    return ReviewPlan(
        topic=topic,
        relevant=relevant,
        themes=[ThemePlan.model_validate(t) for t in themes],
        corpus_size=int(run.inputs.get("corpus_size") or 0),
        matched=matched,
        notes=notes,
    )


def _prose_sentence(text: str) -> bool:
    """Whether a sentence reads as a statement: prose, not code, a list, boilerplate or a
    fragment (`agents.review._claimable.not_prose` says which rule fired)."""
    return is_prose(text)


def sentence_score(text: str, relevance: float) -> tuple[float, float]:
    """(result score, contribution score) of one sentence."""
    result = 2.0 * len(_RESULT_CUES.findall(text)) + (1.0 if _NUMBER.search(text) else 0.0)
    contribution = 2.0 * len(_CONTRIBUTION_CUES.findall(text))
    return result + relevance, contribution + relevance


#: Scores a sentence: (text, relevance to the topic) -> (result score, contribution score).
SentenceScore = Callable[[str, float], tuple[float, float]]


def research_paper(run: Attempt, score: SentenceScore = sentence_score) -> PaperNotes:
    """Researcher: the contribution and key results of one paper, quoted exactly."""
    doc_id = str(run.inputs["doc_id"])
    query = " ".join([str(run.inputs.get("topic") or ""), *run.inputs.get("theme_terms", [])])
    doc = run.call("read_document", doc_id=doc_id)
    every = run.call("document_sentences", doc_id=doc_id)
    # Only statements become findings: a document of code, lists, boilerplate and
    # fragments alone gets none (its comparison row still says what it is).
    sents = [s for s in every if _prose_sentence(s["text"])]
    relevance: dict[int, float] = {}
    if query.strip():
        for rank, p in enumerate(run.call("find_passages", doc_id=doc_id, query=query, k=3)):
            for s in sents:
                if s["start"] < p["end"] and p["start"] < s["end"]:
                    relevance[s["start"]] = max(relevance.get(s["start"], 0.0), 1.5 - 0.5 * rank)
    scored = [(s, *score(s["text"], relevance.get(s["start"], 0.0))) for s in sents]
    subject = attribution(doc["authors"], doc["year"], doc["title"])
    contribution = max(scored, key=lambda x: (x[2], -x[0]["start"]), default=None)
    results = sorted(
        (x for x in scored if contribution is None or x[0] is not contribution[0]),
        key=lambda x: (-x[1], x[0]["start"]),
    )
    picked = [x[0] for x in results[:2] if x[1] > 0]
    kinds = ["result"] * len(picked)
    if contribution is not None:
        picked.insert(0, contribution[0])
        kinds.insert(0, "contribution")
    open_question = next((s for s in sents if _OPEN_CUES.search(s["text"])), None)
    if open_question is not None and open_question not in picked:
        if len(picked) == 3:  # an open question says more than a second result
            picked.pop(), kinds.pop()
        picked.append(open_question)
        kinds.append("open_question")
    findings = [
        Finding(
            text=third_person(s["text"], subject, doc["title"]),
            passage=s["text"],
            start=s["start"],
            end=s["end"],
            kind=kind,
        )
        for s, kind in zip(picked, kinds, strict=True)
    ]
    counts = Counter(tokenize_terms(doc["title"] + " " + doc["text"]))
    return PaperNotes(
        doc_id=doc_id,
        title=doc["title"],
        year=doc["year"],
        authors=doc["authors"],
        contribution=contribution[0]["text"] if contribution is not None else "",
        findings=findings,
        terms=[t for t, _ in counts.most_common(6)],
        url=doc.get("url"),
        citations=doc.get("citations"),
    )


def _notes_of(run: Attempt) -> list[PaperNotes]:
    by_doc = {}
    for key, out in run.upstream.items():
        if key.startswith(READ_PREFIX) and out:
            notes = PaperNotes.model_validate(out)
            by_doc[notes.doc_id] = notes
    order = list(run.inputs.get("doc_ids") or by_doc)
    return [by_doc[d] for d in order if d in by_doc]


def write_section(run: Attempt) -> Section:
    """Writer: one theme's section — a synthesis of what its papers share and where they
    differ, their claims in paragraphs (shared lines of work, results, open questions), each
    citing its paper, and a comparison row per paper (`agents.review._section_prose`)."""
    theme_id = str(run.inputs["theme_id"])
    label = str(run.inputs.get("label") or "")
    papers = _notes_of(run)
    summary, claims = theme_section(
        theme_id,
        papers,
        topic=str(run.inputs.get("topic") or ""),
        terms=list(run.inputs.get("terms") or []),
    )
    rows: list[ComparisonRow] = []
    for notes in papers:
        results = [f for f in notes.findings[1:] if f.kind != "open_question"] or notes.findings
        rows.append(
            ComparisonRow(
                doc_id=notes.doc_id,
                title=notes.title,
                year=notes.year,
                approach=shorten(notes.contribution, 22),
                key_result=shorten(results[0].passage, 22) if results else "",
                citations=notes.citations,
            )
        )
    missing = len(run.inputs.get("doc_ids") or []) - len(papers)
    if missing > 0:
        summary += f" {missing} more could not be read and are left out."
    return Section(
        theme_id=theme_id, title=theme_title(label), summary=summary, claims=claims, rows=rows
    )


def _attribution_ok(subject: str, doc: dict[str, Any]) -> bool:
    """Whether a claim's attribution names the cited document's first author and year."""
    if subject.startswith("“"):
        return subject.strip("“”").strip() in doc["title"]
    if doc["authors"] and surname(doc["authors"][0]).lower() not in subject.lower():
        return False
    return doc["year"] is None or str(doc["year"]) in subject or "n.d." in subject


def _check_one(run: Attempt, claim: Claim) -> ClaimCheck:
    subject, body = split_attribution(claim.text)
    best: ClaimCheck | None = None
    for doc_id in claim.cited:
        try:
            doc = run.call("read_document", doc_id=doc_id)
        except Exception as exc:  # noqa: BLE001  (an unknown id is a verdict, not a crash)
            reason = f"cited document {doc_id!r} cannot be read: {exc}"
            best = best or ClaimCheck(
                claim_id=claim.id,
                claim=claim.text,
                cited=claim.cited,
                verdict="unsupported",
                reason=reason,
            )
            continue
        support = run.call("check_claim", claim=body or claim.text, doc_id=doc_id)
        passage = support["passage"] or {}
        ok = bool(support["supported"])
        reason = "" if ok else f"best passage scores {support['score']:.2f}"
        if support["missing"]:
            reason = "not in the passage: " + ", ".join(support["missing"])
        if ok and subject and not _attribution_ok(subject, doc):
            ok, reason = False, f"attribution {subject!r} does not match the cited document"
        check = ClaimCheck(
            claim_id=claim.id,
            claim=claim.text,
            cited=claim.cited,
            verdict="supported" if ok else "unsupported",
            doc_id=doc_id,
            passage=passage.get("text", ""),
            start=passage.get("start"),
            end=passage.get("end"),
            score=float(support["score"]),
            missing=list(support["missing"]),
            reason=reason,
        )
        if best is None or _rank(check) > _rank(best):
            best = check
    assert best is not None  # a Claim cites at least one document
    return best


def _sections(run: Attempt) -> list[Section]:
    return [
        Section.model_validate(out)
        for key, out in sorted(run.upstream.items())
        if key.startswith(WRITE_PREFIX) and out
    ]


def _rank(check: ClaimCheck) -> tuple[bool, float]:
    return check.verdict == "supported", check.score


def check_section(run: Attempt) -> SectionCheck:
    """Fact-checker: a verdict for every claim of the upstream section."""
    sections = _sections(run)
    checks = [_check_one(run, claim) for section in sections for claim in section.claims]
    return SectionCheck(theme_id=str(run.inputs.get("theme_id") or ""), checks=checks)


def compose_prose(
    topic: str, corpus_size: int, sections: list[Section], checks: list[ClaimCheck]
) -> ReviewProse:
    """Introduction, theme summaries and conclusion (`agents.review._conclusion`: the big
    themes, the most cited work, trends over the years, the open questions the papers
    name), from the counts and the checked claims of the run."""
    supported = sum(c.verdict == "supported" for c in checks)
    papers = {r.doc_id: r for s in sections for r in s.rows}
    years = sorted({r.year for r in papers.values() if r.year is not None})
    intro = (
        f"This review covers {len(papers)} documents"
        + (f" of the {corpus_size} in the corpus" if corpus_size else "")
        + f" that match “{topic}”"
        + (f", from {years[0]} to {years[-1]}" if len(years) > 1 else "")
        + f". They fall into {len(sections)} themes found by TF-IDF clustering: "
        + "; ".join(f"{s.title.lower()} ({len(s.rows)})" for s in sections)
        + ". Every statement below cites the document it comes from; a fact-checker compared "
        f"each of the {len(checks)} claims with the passage it rests on and kept "
        f"{supported}. Claims that failed the check are listed at the end, not used."
    )
    return ReviewProse(
        title=f"Literature review: {topic or 'the corpus'}",
        introduction=intro,
        section_summaries={s.theme_id: s.summary for s in sections},
        conclusion=conclusion(sections, checks),
    )


def upstream_checks(upstream: dict[str, Any]) -> list[ClaimCheck]:
    """Every claim check in the outputs of `check:*` subtasks."""
    return [
        c
        for key, out in sorted(upstream.items())
        if is_check_id(key) and out
        for c in SectionCheck.model_validate(out).checks
    ]


def synthesize(run: Attempt) -> ReviewProse:
    """Synthesizer: introduction, theme summaries and conclusion from the run's results."""
    return compose_prose(
        str(run.inputs.get("topic") or ""),
        int(run.inputs.get("corpus_size") or 0),
        _sections(run),
        upstream_checks(run.upstream),
    )


__all__ = [
    "SentenceScore",
    "check_section",
    "compose_prose",
    "plan_review",
    "research_paper",
    "sentence_score",
    "synthesize",
    "upstream_checks",
    "write_section",
]
